"""End to end on every sample project: scan -> rewrite --apply (twice) -> check, for both targets.

Each project is copied to a temporary directory. `scan` must report exactly the codes and
locations of `tests/e2e/expected/<name>.yaml` (reasoned from the sample's README and the rule
pack); `rewrite --apply --unsafe-fixes` fixes what it can, a second run changes nothing, and a
scan of the result reports exactly what needs a person. Where the expected file names them, the
person's edits for the remaining blocking findings are made, then `check` runs the program on the
emulated device: it must run to completion with the expected CPU-fallback ops and recompile sites.
`check` runs the notebook itself (its code cells in order as one program).

One workflow per (project, target) is run once per module and shared by the tests that look at
its steps. Known defects of the tool are `xfail(strict=True)` with the precise reason (KNOWN).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from neuron_migrate.cli import app
from neuron_migrate.findings import Finding

pytestmark = pytest.mark.slow

SAMPLES = Path(__file__).resolve().parents[2] / "sample_projects"
EXPECTED = Path(__file__).resolve().parent / "expected"
PROJECTS = ("gpt_train", "hf_inference", "vision_cnn", "custom_kernels", "notebook")
TARGETS = ("neuron", "accelerator")
NOT_FINISHED = {"NM910", "NM912", "NM913"}  # device-mismatch error, exception, timeout

# (project, target, step) -> the defect that makes the step's test fail today.
KNOWN: dict[tuple[str, str, str], str] = {
}


def _load(name: str) -> dict[str, Any]:
    return yaml.safe_load((EXPECTED / f"{name}.yaml").read_text(encoding="utf-8"))


def _cli(*args: str, cwd: Path) -> tuple[int, str, str]:
    with contextlib.chdir(cwd):
        result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _findings(report_json: str) -> list[Finding]:
    return [Finding.from_dict(f) for f in json.loads(report_json)["findings"]]


def _op(symbol: str) -> str:
    """aten::max_pool2d_with_indices.out -> max_pool2d_with_indices (README names)."""
    return symbol.removeprefix("aten::").split(".")[0]


@dataclass
class Workflow:
    project: str
    target: str
    root: Path
    scan: list[Finding] = field(default_factory=list)
    first: dict[str, Any] = field(default_factory=dict)  # rewrite --format json
    second: dict[str, Any] = field(default_factory=dict)
    after: list[Finding] = field(default_factory=list)
    checks: dict[str, tuple[int, dict[str, Any] | None, str]] = field(default_factory=dict)


_RUNS: dict[tuple[str, str], Workflow] = {}


def workflow(project: str, target: str, tmp_root: Path) -> Workflow:
    key = (project, target)
    if key in _RUNS:
        return _RUNS[key]
    expected = _load(project)
    root = tmp_root / f"{project}-{target}"
    shutil.copytree(SAMPLES / project, root, ignore=shutil.ignore_patterns("__pycache__", ".neuron-migrate-cache"))
    wf = Workflow(project, target, root)
    code, out, err = _cli("scan", ".", "--no-cache", "--format", "json", "--target", target, cwd=root)
    assert code in (0, 1), err
    wf.scan = _findings(out)
    rewrite = ("rewrite", ".", "--apply", "--unsafe-fixes", "--no-cache", "--target", target, "--format", "json")
    code, out, err = _cli(*rewrite, cwd=root)
    assert code in (0, 1), err
    wf.first = json.loads(out)
    code, out, err = _cli(*rewrite, cwd=root)
    assert code in (0, 1), err
    wf.second = json.loads(out)
    code, out, err = _cli("scan", ".", "--no-cache", "--format", "json", cwd=root)
    wf.after = _findings(out)
    for edit in (expected.get("person") or {}).get(target, ()):
        path = root / edit["file"]
        text = path.read_text(encoding="utf-8")
        assert edit["old"] in text, f"person's edit {edit} does not apply"
        path.write_text(text.replace(edit["old"], edit["new"]), encoding="utf-8")
    for run in expected.get("check", ()):
        if target not in run["targets"]:
            continue
        script = run["script"]
        output = root.parent / f"{project}-{target}-{run['name']}.check.json"
        launcher = ["--launcher", run["launcher"][0], "--nproc-per-node", str(run["launcher"][1])] \
            if run.get("launcher") else []
        code, _, err = _cli("check", "--format", "json", "--output", str(output), "--timeout", "240",
                            *launcher, script, *(("--", *run["args"]) if run["args"] else ()), cwd=root)
        report = json.loads(output.read_text(encoding="utf-8")) if output.exists() else None
        wf.checks[run["name"]] = (code, report, err[-3000:])
    _RUNS[key] = wf
    return wf


@pytest.fixture(scope="module")
def tmp_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e")


def _params(step: str, targets: tuple[str, ...] = TARGETS) -> list[Any]:
    out = []
    for project in PROJECTS:
        for target in targets:
            reason = KNOWN.get((project, target, step))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(project, target, id=f"{project}-{target}", marks=marks))
    return out


def _loc(f: Finding) -> str:
    cell = f"cell[{f.cell}]:" if f.cell is not None else ""
    return f"{f.path}:{cell}{f.span.line}"


# --- scan ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("project", "target"), _params("scan", ("neuron",)))
def test_scan_codes_and_counts(project: str, target: str, tmp_root: Path) -> None:
    wf = workflow(project, target, tmp_root)
    expected = {code: len(locs) for code, locs in _load(project)["scan"].items()}
    assert dict(sorted(Counter(f.code for f in wf.scan).items())) == dict(sorted(expected.items()))


@pytest.mark.parametrize(("project", "target"), _params("locations", ("neuron",)))
def test_scan_locations(project: str, target: str, tmp_root: Path) -> None:
    if KNOWN.get((project, target, "scan")):
        pytest.skip("the scan's codes already differ (see test_scan_codes_and_counts)")
    wf = workflow(project, target, tmp_root)
    expected = sorted((code, loc) for code, locs in _load(project)["scan"].items() for loc in locs)
    assert sorted((f.code, _loc(f)) for f in wf.scan) == expected


# --- rewrite ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("project", "target"), _params("idempotent"))
def test_rewrite_applies_then_a_second_run_changes_nothing(project: str, target: str, tmp_root: Path) -> None:
    wf = workflow(project, target, tmp_root)
    statuses = Counter(f["status"] for f in wf.first["extras"]["files"])
    assert statuses["changed"] >= 1 and not statuses["skipped"] and not statuses["refused"]
    assert wf.second["extras"]["fixed"] == 0
    assert [f["path"] for f in wf.second["extras"]["files"] if f["status"] == "changed"] == []


@pytest.mark.parametrize(("project", "target"), _params("rewrite"))
def test_rewrite_leaves_what_needs_a_person(project: str, target: str, tmp_root: Path) -> None:
    wf = workflow(project, target, tmp_root)
    expected = _load(project)["rewrite"][target]
    assert dict(sorted(Counter(f.code for f in wf.after).items())) == dict(sorted(expected.items()))


def test_rewrite_keeps_notebook_outputs_metadata_and_layout(tmp_root: Path) -> None:
    wf = workflow("notebook", "neuron", tmp_root)
    name = "train_mnist_like.ipynb"
    before = json.loads((SAMPLES / "notebook" / name).read_text(encoding="utf-8"))
    text = (wf.root / name).read_text(encoding="utf-8")
    after = json.loads(text)
    assert text == json.dumps(after, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert {k: v for k, v in after.items() if k != "cells"} == {k: v for k, v in before.items() if k != "cells"}
    assert len(after["cells"]) == len(before["cells"]) == 12
    for old, new in zip(before["cells"], after["cells"], strict=True):
        assert {k: v for k, v in new.items() if k != "source"} == {k: v for k, v in old.items() if k != "source"}
    changed = [i for i, (o, n) in enumerate(zip(before["cells"], after["cells"], strict=True)) if o != n]
    assert changed == [3, 5, 6, 8, 9, 10]  # the code cells with fixes (cell 3 also has the person's edit)


# --- check --------------------------------------------------------------------------------------


def _check_params(step: str) -> list[Any]:
    out = []
    for project in PROJECTS:
        for run in _load(project).get("check", ()):
            for target in run["targets"]:
                reason = KNOWN.get((project, target, step)) or KNOWN.get((project, target, "check"))
                marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                out.append(pytest.param(project, target, run, id=f"{project}-{target}-{run['name']}", marks=marks))
    return out


def _check(project: str, target: str, run: dict[str, Any], tmp_root: Path) -> list[Finding]:
    code, report, err = workflow(project, target, tmp_root).checks[run["name"]]
    assert report is not None, f"check wrote no report (exit {code}):\n{err}"
    findings = [Finding.from_dict(f) for f in report["findings"]]
    stopped = [f"{f.location()} {f.code} {f.symbol}" for f in findings if f.code in NOT_FINISHED]
    assert not stopped, f"the program did not run to completion: {stopped}\n{err}"
    return findings


@pytest.mark.parametrize(("project", "target", "run"), _check_params("check"))
def test_check_runs_to_completion_with_expected_fallbacks(project: str, target: str, run: dict[str, Any],
                                                          tmp_root: Path) -> None:
    findings = _check(project, target, run, tmp_root)
    assert sorted({_op(f.symbol) for f in findings if f.code == "NM901"}) == sorted(run["fallback_ops"])


@pytest.mark.parametrize(("project", "target", "run"), _check_params("recompiles"))
def test_check_recompile_sites(project: str, target: str, run: dict[str, Any], tmp_root: Path) -> None:
    findings = _check(project, target, run, tmp_root)
    sites = {f"{f.path}:{f.span.line}": int(f.details["distinct_signatures"]) for f in findings if f.code == "NM903"}
    assert {s: sites.get(s) for s in run["recompile_sites"]} == run["recompile_sites"]
    assert max(sites.values(), default=1) <= run["max_signatures"], sites
    if not run["recompile_sites"] and run["max_signatures"] == 1:
        assert sites == {}


def test_expected_files_name_real_codes_and_projects() -> None:
    from neuron_migrate.ruleset.load import load_pack

    pack = load_pack()
    assert sorted(p.stem for p in EXPECTED.glob("*.yaml")) == sorted(PROJECTS)
    for project in PROJECTS:
        data = _load(project)
        codes = set(data["scan"]) | {c for t in TARGETS for c in data["rewrite"][t]}
        assert codes <= set(pack.rules), codes - set(pack.rules)
        for locs in data["scan"].values():
            assert all(re.fullmatch(r"[\w./-]+:(cell\[\d+\]:)?\d+", loc) for loc in locs), locs
