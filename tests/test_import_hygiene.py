"""`--help`, `scan --help` and a real scan never import torch or libcst (they are slow to import
and not needed to read source). Run in a subprocess so that other tests' imports do not count."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

HEAVY = ("torch", "libcst")

_PROBE = textwrap.dedent(
    """
    import json, sys
    from typer.testing import CliRunner

    import neuron_migrate.cli
    after_import = sorted(m for m in {heavy} if m in sys.modules)
    runner = CliRunner()
    codes = [runner.invoke(neuron_migrate.cli.app, args).exit_code for args in {invocations}]
    print(json.dumps({{"after_import": after_import, "codes": codes,
                      "after_run": sorted(m for m in {heavy} if m in sys.modules)}}))
    """
)


def _probe(invocations: list[list[str]]) -> dict[str, object]:
    code = _PROBE.format(heavy=repr(HEAVY), invocations=repr(invocations))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_cli_import_and_help_stay_light() -> None:
    out = _probe([["--help"], ["scan", "--help"], ["config", "--help"]])
    assert out == {"after_import": [], "codes": [0, 0, 0], "after_run": []}


def test_a_real_scan_stays_light(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        'import torch\nmodel = torch.nn.Linear(2, 2).to("cuda")\ntorch.cuda.synchronize()\n', encoding="utf-8"
    )
    (tmp_path / "nb.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                   "source": ["import torch\n", "x = torch.ones(1).cuda()\n"]}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    out = _probe([["scan", str(tmp_path), "--no-cache", "--exit-zero", "--format", fmt] for fmt in ("text", "sarif")])
    assert out["after_import"] == [] and out["after_run"] == []
    assert out["codes"] == [0, 0]


def test_neuron_migrate_help_entry_point_runs() -> None:
    # The console script itself (startup is not timed: only that it works and stays torch-free above).
    proc = subprocess.run([sys.executable, "-m", "neuron_migrate", "--help"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0 and "scan" in proc.stdout
