"""SARIF results of a notebook point at the .ipynb file's line holding the finding (code scanning
shows the file, not the cell), with the cell and its line kept in `properties`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.scan.notebook import source_lines

CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Explore\n", "text mentioning cuda\n"]},
    {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [],
     "source": ["import torch\n", "\n", "x = torch.zeros(2).to(\"cuda\")\n", "y = x + 1"]},
    {"cell_type": "code", "metadata": {}, "execution_count": 2, "outputs": [],
     "source": "z = torch.ones(1)\ntorch.cuda.synchronize()\n"},
]
NOTEBOOK = {"cells": CELLS, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("indent", [1, 2, None])
def test_source_lines_maps_every_cell_line(indent: int | None) -> None:
    text = json.dumps(NOTEBOOK, indent=indent)
    lines = source_lines(text)
    assert sorted(lines) == [0, 1, 2]
    assert len(lines[1]) == 4 and len(lines[2]) == 3  # "a\nb\n" is two lines and an empty third
    if indent is None:
        assert set(lines[1]) == {1}  # one-line JSON: everything is on line 1
    else:
        assert lines[1][2] == _line_of(text, 'to(\\"cuda\\")')
        assert set(lines[2]) == {_line_of(text, "torch.cuda.synchronize")}  # one string, one file line


@pytest.mark.parametrize("text", ["", "[]", '{"cells": 3}', '{"cells": [{"source": ', "not json"])
def test_source_lines_of_broken_json_is_empty(text: str) -> None:
    assert source_lines(text) == {}


def test_scan_sarif_points_into_the_notebook_file(tmp_path: Path, cli: Callable[..., Any]) -> None:
    text = json.dumps(NOTEBOOK, indent=1)
    (tmp_path / "explore.ipynb").write_text(text, encoding="utf-8")
    run = cli("scan", ".", "--format", "sarif", "--exit-zero", cwd=tmp_path)
    assert run.exit_code == 0, run
    results = json.loads(run.stdout)["runs"][0]["results"]
    by_rule = {r["ruleId"]: r for r in results}
    device = by_rule["NM101"]
    assert device["locations"][0]["physicalLocation"]["region"]["startLine"] == _line_of(text, 'to(\\"cuda\\")')
    assert (device["properties"]["cell"], device["properties"]["cellLine"]) == (1, 3)
    sync = by_rule["NM206"]
    assert sync["locations"][0]["physicalLocation"]["region"]["startLine"] == _line_of(text, "synchronize")
    assert "startColumn" not in sync["locations"][0]["physicalLocation"]["region"]
