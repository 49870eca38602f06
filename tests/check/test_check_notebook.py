"""`check notebook.ipynb`: code cells run in order as one program (IPython lines skipped), findings
located at (cell, line in the cell) as scan locates them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.check.conftest import run_cli


def notebook(path: Path, cells: list[tuple[str, str]]) -> Path:
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True),
                     **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                    for kind, source in cells]}
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return path


def test_findings_are_located_in_their_cells(tmp_path: Path) -> None:
    nb = notebook(tmp_path / "explore.ipynb", [
        ("markdown", "# Exploring\n"),
        ("code", "%matplotlib inline\nimport torch\n!nvidia-smi\n"),
        ("code", "x = torch.ones(4, 4, device='neuron')\n# a QR has no device kernel\nq, r = torch.linalg.qr(x)\n"),
        ("markdown", "Now fail:"),
        ("code", "y = q.sum()\nraise ValueError('stop here')\n"),
    ])
    report = tmp_path / "report.json"
    result = run_cli(["--root", str(tmp_path), "--output-json", str(report), "-q", str(nb)])
    assert result.exit_code == 1
    found = {f["code"]: f for f in json.loads(report.read_text())["findings"]}
    assert sorted(found) == ["NM901", "NM912"]
    qr, error = found["NM901"], found["NM912"]
    assert (qr["path"], qr["cell"], qr["span"]["line"], qr["source_line"]) == (
        "explore.ipynb", 2, 3, "q, r = torch.linalg.qr(x)")
    assert (error["path"], error["cell"], error["span"]["line"], error["source_line"]) == (
        "explore.ipynb", 4, 2, "raise ValueError('stop here')")


def test_syntax_error_names_the_cell(tmp_path: Path) -> None:
    nb = notebook(tmp_path / "broken.ipynb", [("code", "import torch\n"), ("code", "x = 1\ny = (\n")])
    result = run_cli([str(nb)])
    assert result.exit_code == 2
    assert "broken.ipynb, cell 1, line 2" in result.stderr


def test_broken_notebook_json_is_a_usage_error(tmp_path: Path) -> None:
    nb = tmp_path / "bad.ipynb"
    nb.write_text("{not json", encoding="utf-8")
    result = run_cli([str(nb)])
    assert result.exit_code == 2
    assert "bad.ipynb" in result.stderr and "invalid JSON" in result.stderr
