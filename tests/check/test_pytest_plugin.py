"""The pytest plugin, through pytester in subprocesses (the device registers once per process)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from neuron_migrate.check.probe.passes import merge_stamps
from tests.check.conftest import run_cli

pytest_plugins = ["pytester"]
PLUGIN = "neuron_migrate.check.pytest_plugin"


def _load_plugin() -> list[str]:
    """`-p PLUGIN` unless the installed `pytest11` entry point already loads it (pluggy refuses the
    same module registered under two names)."""
    from importlib.metadata import entry_points

    return [] if any(ep.value == PLUGIN for ep in entry_points(group="pytest11")) else ["-p", PLUGIN]

TESTS = '''
import pytest
import torch


def test_clean():
    x = torch.ones(3, device="neuron")
    assert (x + 1).sum().item() == 6


def test_fallback():
    torch.linalg.qr(torch.ones(4, 4, device="neuron"))


@pytest.mark.neuron_allow_ops("aten::linalg_qr.out")
def test_fallback_allowed():
    torch.linalg.qr(torch.ones(4, 4, device="neuron"))


def test_recompile():
    lin = torch.nn.Linear(4, 2).to("neuron")
    for b in (1, 2, 3):
        lin(torch.ones(b, 4, device="neuron"))
'''


@pytest.mark.slow
def test_gates_per_test_with_marker_and_reports(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_model=TESTS)
    result = pytester.runpytest_subprocess(
        *_load_plugin(), "--neuron-emulate", "--neuron-fail-on", "fallback,recompile", "-p", "no:cacheprovider",
    )
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "neuron: 1 CPU fallback op(s) > 0 allowed: aten::linalg_qr.out",
        "neuron: 4 recompile(s) > 0 allowed",
        "FAILED test_model.py::test_fallback*",
        "FAILED test_model.py::test_recompile*",
    ])
    assert "neuron (emulated device)" in out
    summary = out.split("neuron (emulated device)", 1)[1]
    assert "test_model.py::test_fallback_allowed" not in summary  # allowed by its marker
    assert "NM903" in summary and "a size varied over 1, 2, 3" in summary


def test_without_emulate_the_plugin_imports_no_torch(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_light='''
import sys

def test_no_torch():
    assert "torch" not in sys.modules
''')
    result = pytester.runpytest_subprocess(*_load_plugin(), "-p", "no:cacheprovider", "--markers")
    assert "neuron_allow_ops" in result.stdout.str()
    pytester.runpytest_subprocess(*_load_plugin(), "-p", "no:cacheprovider").assert_outcomes(passed=1)


PASS_TESTS = '''
import torch


def half(x):
    return x * 0.5


def test_two_callers_with_fixed_shapes():
    for _ in range(3):
        half(torch.ones(2, 3, device="neuron"))
        half(torch.ones(5, 1, device="neuron"))


def test_growing():
    for n in (2, 3, 4):
        half(torch.ones(n, 9, device="neuron"))
'''


@pytest.mark.slow
def test_recompiles_are_counted_by_passes_per_test(pytester: pytest.Pytester) -> None:
    """A function called from two lines with fixed shapes is not a recompile (check.passes tracks
    each test); a size that grows inside one test is."""
    pytester.makepyfile(test_passes=PASS_TESTS)
    args = (*_load_plugin(), "--neuron-emulate", "--neuron-fail-on", "recompile", "-p", "no:cacheprovider")
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_passes.py::test_growing*"])
    summary = result.stdout.str().split("neuron (emulated device)", 1)[1]
    assert "test_two_callers_with_fixed_shapes" not in summary
    assert "a size varied over 2, 3, 4" in summary

    # Under another settrace tracer (coverage, a debugger): on 3.12+ the plugin counts passes with
    # sys.monitoring beside it; before, it leaves tracing alone and guesses from the shapes, which
    # cannot tell the two fixed calls from variation.
    pytester.makeconftest("import sys\nsys.settrace(lambda *a: None)\n")
    result = pytester.runpytest_subprocess(*args)
    if sys.version_info >= (3, 12):
        result.assert_outcomes(passed=1, failed=1)
    else:
        result.assert_outcomes(failed=2)


@pytest.mark.slow
def test_check_pytest_counts_the_whole_run_by_each_tests_passes(tmp_path: Path) -> None:
    """`check --pytest`: the run's report merges every test's pass stamps (passes.merge_stamps),
    so it agrees with the per-test view: only the growing size recompiles."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_passes.py").write_text(PASS_TESTS, encoding="utf-8")
    report = tmp_path / "report.json"
    # pytest's own options after `--`, as a script's are (`check train.py -- --steps 6`)
    result = run_cli(["--root", str(tmp_path), "--output-json", str(report), "-q", "--pytest",
                      str(tmp_path / "tests"), "--", "-p", "no:cacheprovider"])
    assert result.exit_code == 0, result.stdout
    found = {f["span"]["line"]: f["details"] for f in json.loads(report.read_text())["findings"]
             if f["code"] == "NM903"}
    lines = PASS_TESTS.splitlines()
    half = lines.index("    return x * 0.5") + 1
    grow = lines.index('        half(torch.ones(n, 9, device="neuron"))') + 1
    assert sorted(found) == [half, grow]
    for details in found.values():
        assert details["method"] == "passes"
        assert [d["values"] for d in details["varied_dimensions"]] == [[2, 3, 4]]  # not test_two_callers' 5


def test_merged_stamps_keep_each_tests_passes_and_slots_apart() -> None:
    a = [{"op": "aten::mul", "passes": [1, 2], "slots": [1, 1]}]
    b = [{"op": "aten::mul", "passes": [1, 0], "slots": [1, 2]}]
    merged = merge_stamps([a, b])
    assert [(e["passes"], e["slots"]) for e in merged] == [([1, 2], [1, 1]), ([3, 0], [2, 3])]
