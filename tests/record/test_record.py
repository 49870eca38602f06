"""The migration record (`neuron-migrate report`) and record comparison (`neuron-migrate diff`).

Scan and rewrite are real (a three-file project); `check` is replaced by a runner that returns a
check report built from real NM9xx findings, so these tests stay fast and test only the record.
"""

from __future__ import annotations

import copy
import json
import platform
import re
from collections.abc import Callable
from html.parser import HTMLParser
from importlib.metadata import version
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from neuron_migrate import __version__
from neuron_migrate.cli import app
from neuron_migrate.config import load_settings
from neuron_migrate.findings import Finding, FixClass, Report, Severity, Span
from neuron_migrate.record.build import (
    RECORD_KIND,
    RECORD_SCHEMA_VERSION,
    CheckOutcome,
    Headline,
    RecordError,
    RunSpec,
    build_record,
    dumps,
    fallback_ops,
    headline,
    load_record,
    recompile_sites,
    validate,
)
from neuron_migrate.record.diff import compare, render_markdown, render_text
from neuron_migrate.record.html import render as render_html
from neuron_migrate.record.markdown import render as render_markdown_record
from neuron_migrate.ruleset.load import load_pack

TRAIN_PY = '''import torch

device = "cuda"
model = torch.nn.Linear(4, 4).to(device)
torch.cuda.synchronize()
'''
KERNELS_PY = "from flash_attn import flash_attn_func\n"
CLEAN_PY = 'print("nothing | to <migrate>")\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(TRAIN_PY, encoding="utf-8")
    (root / "kernels.py").write_text(KERNELS_PY, encoding="utf-8")
    (root / "clean.py").write_text(CLEAN_PY, encoding="utf-8")
    return root


def _runtime(code: str, symbol: str, line: int, details: dict[str, Any]) -> Finding:
    rule = load_pack().rules[code]
    return Finding(code=code, severity=rule.severity, fix_class=FixClass.MANUAL, category=rule.category,
                   path="train.py", span=Span(line, 0, line, 10), message=rule.render_message(symbol),
                   source_line=f"line {line}", symbol=symbol, details=details)


class FakeCheck:
    """Stands in for `neuron-migrate check`: remembers what it was asked to run, returns a report."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        self.calls: list[tuple[Path, RunSpec, str]] = []

    def __call__(self, root: Path, spec: RunSpec, workdir: Path) -> CheckOutcome:
        self.calls.append((root, spec, (root / spec.script).read_text(encoding="utf-8")))
        report = Report("check", str(root), tuple(self.findings), extras=CHECK_EXTRAS)
        return CheckOutcome(("neuron-migrate", "check", spec.script), 0, 1.25, report.to_dict(), None)


# The shape of check's report extras (`extras.check`), as a real run writes it.
CHECK_EXTRAS = {"check": {"program": "train.py", "ops": {"device": 90, "cpu_fallback": 10, "device_share": 0.9},
                          "compiles": {"eager": 12, "eager_recompiles": 8}, "wall_s": 1.5}}
PAD = {"strategy": "pad", "buckets": [40], "compiles": 1, "padding": 0.3, "advice": "pad to 40: 1 compile instead of 4"}
BUCKET = {"strategy": "fitted", "buckets": [16, 32, 40], "compiles": 3, "padding": 0.05,
          "advice": "pad up to one of 16, 32, 40: 3 compiles instead of 4"}

FALLBACKS = [
    _runtime("NM901", "aten::argmax", 4, {"count": 12}),
    _runtime("NM901", "aten::max_pool2d_with_indices", 4, {"count": 3}),
    _runtime("NM903", "y = model(x)", 4, {"distinct_signatures": 4, "compiles": 12, "ops": [
        {"op": "aten::addmm", "varied": {"input 1 dim 0": [32, 16, 40, 24]}},
        {"op": "aten::gelu", "varied": {"input 0 dim 1": [16, 24]}}],
        "varied_dimensions": [{"values": [16, 24, 32, 40], "options": [BUCKET, PAD]}]}),
]


def _record(project: Path, *, check: FakeCheck | None = None, unsafe: bool = False, **kw: Any) -> dict[str, Any]:
    settings = load_settings(project, {"unsafe-fixes": unsafe})
    run = RunSpec("train.py", ("--steps", "2")) if check else None
    return build_record(project, settings, run=run, argv=["neuron-migrate", "report", str(project)],
                        use_cache=False, check_runner=check or FakeCheck([]), **kw)


# --- building ---------------------------------------------------------------------------------------


def test_record_combines_scan_rewrite_and_versions_without_touching_the_tree(project: Path) -> None:
    before = {p.name: p.read_bytes() for p in project.iterdir()}
    rec = _record(project)
    assert {p.name: p.read_bytes() for p in project.iterdir()} == before  # rewrite ran on a copy

    assert rec["kind"] == RECORD_KIND and rec["schema_version"] == RECORD_SCHEMA_VERSION
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rec["created"])
    pack = load_pack()
    assert rec["versions"] == {
        "tool": __version__,
        "python": platform.python_version(),
        "torch": version("torch"),
        "rule_pack": {"name": pack.name, "version": pack.version, "digest": pack.digest,
                      "neuron_sdk": pack.neuron_sdk, "torch_neuronx": pack.torch_neuronx},
    }
    assert rec["commands"]["report"] == f"neuron-migrate report {project}"
    assert rec["commands"]["rewrite"] == f"neuron-migrate rewrite {project} --apply --target neuron"
    assert rec["commands"]["check"] is None and rec["check"] is None

    codes = sorted(f["code"] for f in rec["scan"]["findings"])
    assert codes == ["NM101", "NM206", "NM707"]  # device string, synchronize, flash_attn
    assert [f["path"] for f in rec["scan"]["findings"] if f["code"] == "NM707"] == ["kernels.py"]
    # Safe fixes: the device string and synchronize; flash_attn needs a person.
    fixed = {f["fingerprint"]: f["code"] for f in rec["scan"]["findings"]}
    assert sorted(fixed[p] for p in rec["rewrite"]["fixed"]) == ["NM101", "NM206"]
    assert [f["code"] for f in rec["rewrite"]["remaining"]] == ["NM707"]
    assert rec["rewrite"]["idempotent"] is True and rec["rewrite"]["second_run_changed"] == []
    changed = {o["path"]: o for o in rec["rewrite"]["files"]}
    assert set(changed) == {"train.py"} and changed["train.py"]["status"] == "changed"
    assert '+device = "neuron"' in changed["train.py"]["diff"]

    h = rec["headline"]
    assert (h["sites"], h["auto_fixable"], h["auto_fixable_safe"], h["fixed_by_rewrite"], h["needs_person"]) == (
        3, 2, 2, 2, 1)
    assert h["auto_fixable_share"] == round(2 / 3, 4) and h["checked"] is False
    # The JSON is record.model.MigrationRecord's: its keys, in the documented order.
    assert list(rec) == ["kind", "schema_version", "created", "project", "target", "unsafe_fixes", "versions",
                         "commands", "scan", "rewrite", "check", "settings", "headline"]
    assert list(rec["commands"]) == ["report", "scan", "rewrite", "check"]
    assert list(rec["rewrite"]) == ["target", "unsafe_fixes", "files", "fixed", "remaining", "idempotent",
                                    "second_run_changed", "warnings", "duration_s"]


def test_check_runs_on_the_rewritten_copy(project: Path) -> None:
    fake = FakeCheck(FALLBACKS)
    rec = _record(project, check=fake)
    (root, spec, text), = fake.calls
    assert root != project and 'device = "neuron"' in text and "torch.neuron.synchronize()" in text
    assert spec.args == ("--steps", "2")
    assert rec["check"]["exit_code"] == 0 and rec["check"]["error"] is None
    assert rec["commands"]["check"] == "neuron-migrate check train.py"
    assert list(rec["check"]) == ["script", "args", "launcher", "nproc_per_node", "exit_code", "duration_s",
                                  "error", "report"]
    assert fallback_ops(rec) == {
        "aten::argmax": {"count": 12, "sites": ["train.py:4:1"]},
        "aten::max_pool2d_with_indices": {"count": 3, "sites": ["train.py:4:1"]},
    }
    (site,) = recompile_sites(rec).values()
    assert site == {"location": "train.py:4:1", "symbol": "y = model(x)", "signatures": 4, "compiles": 12,
                    "varying": {"input 1 dim 0": [16, 24, 32, 40], "input 0 dim 1": [16, 24]},
                    "advice": ["pad to 40: 1 compile instead of 4"]}  # the option with the fewest compiles
    h = rec["headline"]
    assert (h["check_completed"], h["fallback_ops"], h["recompile_hotspots"], h["runtime_findings"]) == (
        True, 2, 1, 3)


def test_missing_run_script_is_an_error(project: Path) -> None:
    settings = load_settings(project, {})
    with pytest.raises(Exception, match="--run nope.py: no such file"):
        build_record(project, settings, run=RunSpec("nope.py"), use_cache=False, check_runner=FakeCheck([]))


# --- JSON round trip --------------------------------------------------------------------------------


def test_json_round_trip(project: Path, tmp_path: Path) -> None:
    rec = _record(project, check=FakeCheck(FALLBACKS))
    path = tmp_path / "rec.json"
    path.write_text(dumps(rec), encoding="utf-8")
    loaded = load_record(path)
    assert loaded == json.loads(json.dumps(rec))
    assert headline(loaded).to_dict() == rec["headline"]
    assert Headline.from_dict(rec["headline"]) == headline(loaded)
    assert Report.from_dict(loaded["scan"]).to_dict() == rec["scan"]
    assert Report.from_dict(loaded["check"]["report"]).to_dict() == rec["check"]["report"]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.pop("kind"), "not a neuron-migrate record"),
        (lambda r: r.update(schema_version=99), "schema_version 99 is not supported"),
        (lambda r: r.pop("rewrite"), "missing 'rewrite'"),
        (lambda r: r["scan"]["findings"][0].update(severity="fatal"), "malformed record"),
    ],
)
def test_validate_rejects(project: Path, mutate: Callable[[dict], Any], message: str) -> None:
    rec = copy.deepcopy(_record(project))
    mutate(rec)
    with pytest.raises(RecordError, match=re.escape("old.json: ") + ".*" + re.escape(message)):
        validate(rec, "old.json")


# --- rendering --------------------------------------------------------------------------------------


def test_markdown(project: Path) -> None:
    rec = _record(project, check=FakeCheck(FALLBACKS))
    md = render_markdown_record(rec, load_pack())
    assert md.startswith("# Migration record: proj\n")
    assert "| CUDA-specific sites found | 3 (2 errors) in 2 of 3 files |" in md
    assert "| Auto-fixable for target neuron | 2 of 3 (67%): 2 safe, 0 unsafe |" in md
    title = load_pack().rules["NM101"].title.replace("|", "\\|")
    assert f"| NM101 | {title} | error | safe | 1 | 1 | 0 |  |" in md
    assert "| train.py | 2 | 2 | 0 | changed |" in md and "| kernels.py | 1 | 0 | 1 | not touched |" in md
    assert "| aten::argmax | 12 | train.py:4:1 |" in md
    assert ("| train.py:4:1 | y = model(x) | 4 | input 1 dim 0: 16, 24, 32, 40; input 0 dim 1: 16, 24 "
            "| pad to 40: 1 compile instead of 4 |") in md
    assert "| NM901 | warning | 2 |" in md
    # Run-summary keys read as words, shares as percentages (not `ops.device_share 0.9`).
    assert "| Op calls that fell back to the CPU | 10 |" in md and "| Share of op calls on the device | 90.0% |" in md
    assert "ops.device_share" not in md and "cpu_fallback" not in md
    assert "- **NM707** (1):" in md


def test_a_program_that_raised_did_not_complete(project: Path) -> None:
    crash = _runtime("NM912", "RuntimeError: boom", 5, {"type": "RuntimeError"})
    rec = _record(project, check=FakeCheck([*FALLBACKS, crash]))
    assert rec["headline"]["check_completed"] is False
    assert "| check of the rewritten program | did not complete (exit 0) in 1.2 s |" in render_markdown_record(rec)


def test_what_the_record_counts_follows_the_rules_flags(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Whether a finding ends the run, and which recompile findings are hotspots, is rules/nm9-runtime.yaml's.
    import dataclasses

    from neuron_migrate.record import build
    from neuron_migrate.ruleset.load import load_pack

    crash = _runtime("NM912", "RuntimeError: boom", 5, {"type": "RuntimeError"})
    rec = _record(project, check=FakeCheck([*FALLBACKS, crash]))
    pack = load_pack()
    rules = {code: dataclasses.replace(r, ends_run=False) if code == "NM912" else r for code, r in pack.rules.items()}
    monkeypatch.setattr(build, "_pack", lambda: dataclasses.replace(pack, rules=rules))
    assert (check := build.headline(rec).check) is not None and check.check_completed is True


class _StrictParser(HTMLParser):
    """Checks nesting and collects every attribute and the text of <style>."""

    VOID: ClassVar[set[str]] = {"meta", "br", "hr", "img", "input", "link"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []
        self.style = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1] == "style":
            self.style += data
        self.text.append(data)


def test_html_is_well_formed_self_contained_and_escaped(project: Path) -> None:
    evil = "<script>alert(1)</script> & \"q\""
    (project / "train.py").write_text(TRAIN_PY + f"# {evil}\nx = '{evil}'.cuda()\n", encoding="utf-8")
    rec = _record(project, check=FakeCheck([*FALLBACKS, _runtime("NM901", evil, 2, {"count": 1})]))
    page = render_html(rec, load_pack())
    parser = _StrictParser()
    parser.feed(page)
    parser.close()
    assert parser.stack == [] and page.startswith("<!DOCTYPE html>")
    assert "script" not in parser.tags and "link" not in parser.tags and "img" not in parser.tags
    assert not [a for a in parser.attrs if a[0] in {"src", "href", "action", "style"} or a[0].startswith("on")]
    assert "url(" not in parser.style and "@import" not in parser.style
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;" in page
    text = "".join(parser.text)
    assert evil in text  # the text survives escaping intact
    assert "CUDA-specific sites" in text and "aten::argmax" in text


def _svgs(page: str) -> dict[str, Any]:
    """Each inline chart, parsed as XML (so it is well-formed SVG), by its accessible label."""
    import xml.etree.ElementTree as ET

    charts = {}
    for markup in re.findall(r"<svg .*?</svg>", page, re.S):
        svg = ET.fromstring(markup)
        assert svg.tag == "{http://www.w3.org/2000/svg}svg" and svg.get("role") == "img"
        title = svg.find("{http://www.w3.org/2000/svg}title")
        assert title is not None and title.text == svg.get("aria-label")
        charts[svg.get("aria-label", "")] = svg
    return charts


def test_html_has_charts_readable_labels_code_and_coloured_diffs(project: Path) -> None:
    rec = _record(project, check=FakeCheck(FALLBACKS))
    page = render_html(rec, load_pack())
    charts = _svgs(page)
    ns = "{http://www.w3.org/2000/svg}"
    ops = charts["Op calls: 90 on the device, 10 on the CPU"]
    widths = [float(r.get("width", 0)) for r in ops.iter(f"{ns}rect")][:2]
    assert widths[0] == pytest.approx(9 * widths[1], rel=0.02)  # 90 % device : 10 % CPU
    by_code = charts["Findings by code: found, fixed by the rewrite, left"]
    bars = [t.text for t in by_code.iter(f"{ns}title")][1:]
    assert "NM101: 1" in bars and "NM707: 1" in bars  # a found, fixed and left bar per code
    assert len([r for r in by_code.iter(f"{ns}rect") if r.find(f"{ns}title") is not None]) == 3 * len(
        {f["code"] for f in rec["scan"]["findings"]})
    recompiles = charts["Compiled signatures per call site"]
    assert any(t.text == "4" for t in recompiles.iter(f"{ns}text"))
    assert "pad to 40: 1 compile instead of 4" in page  # the padding advice, beside the chart
    assert "Share of op calls on the device</td><td>90.0%" in page and "ops.device_share" not in page
    assert '<span class="add">+' in page and '<span class="del">-' in page  # diff lines by kind
    assert re.search(r"\(1\): [^<]*<code>flash_attn</code>", page)  # a message's `code` is code
    assert "`flash_attn`" not in page


def test_balance_says_why_found_is_not_fixed_plus_left() -> None:
    from neuron_migrate.record.views import balance

    assert balance(3, 1, 2) == ""
    assert balance(3, 1, 4) == "2 new after the rewrite"
    assert balance(3, 1, 0) == "2 gone with other edits"


# --- diff -------------------------------------------------------------------------------------------


@pytest.fixture
def base(project: Path) -> dict[str, Any]:
    return _record(project, check=FakeCheck(FALLBACKS))


def _with(rec: dict[str, Any], edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    new = copy.deepcopy(rec)
    edit(new)
    new["headline"] = headline(new).to_dict()
    return new


def _finding(**changes: Any) -> dict[str, Any]:
    rule = load_pack().rules[changes.get("code", "NM101")]
    f = Finding(code=rule.code, severity=rule.severity, fix_class=rule.fix.fix_class, category=rule.category,
                path=changes.get("path", "new.py"), span=Span(1, 0, 1, 6), message="m",
                source_line=changes.get("source_line", 'x = "cuda"'), symbol="cuda")
    return f.to_dict()


def test_diff_identical_is_clean(base: dict[str, Any]) -> None:
    d = compare(base, copy.deepcopy(base))
    assert not d.regression and not d.fixed and not d.new and not d.versions
    assert render_text(d).rstrip().endswith("No regression.")


def test_diff_fixed_findings_are_no_regression(base: dict[str, Any]) -> None:
    gone = next(f for f in base["scan"]["findings"] if f["code"] == "NM707")
    new = _with(base, lambda r: r["scan"]["findings"].remove(gone))
    d = compare(base, new)
    assert [(f.code, n) for f, n in d.fixed] == [("NM707", 1)] and not d.new and not d.regression
    assert "Findings fixed: 1\n  kernels.py:1:" in render_text(d)
    # the severity on each line, as on scan's and on the new findings' lines
    (fixed_line,) = [ln for ln in render_text(d).splitlines() if ln.startswith("  kernels.py:1:")]
    assert f"NM707 [{gone['severity']}] " in fixed_line
    assert f"| NM707 | {gone['severity']} |" in render_markdown(d)
    assert ("sites", 3, 2) in [(c.key, c.old, c.new) for c in d.headline]


def test_diff_new_error_finding_is_a_regression(base: dict[str, Any]) -> None:
    new = _with(base, lambda r: r["scan"]["findings"].append(_finding()))
    d = compare(base, new)
    assert [(f.code, f.severity) for f, _ in d.new] == [("NM101", Severity.ERROR)]
    assert d.reasons == ("1 new finding(s) at or above error",)
    md = render_markdown(d)
    assert "**Regression:** 1 new finding(s) at or above error" in md and "| new.py:1:1 | NM101 | error |" in md


def test_diff_new_warning_is_listed_not_a_regression(base: dict[str, Any]) -> None:
    new = _with(base, lambda r: r["scan"]["findings"].append(_finding(code="NM206")))
    d = compare(base, new)
    assert len(d.new) == 1 and not d.regression


def test_diff_matches_fingerprints_as_a_multiset(base: dict[str, Any]) -> None:
    dup = next(f for f in base["scan"]["findings"] if f["code"] == "NM101")
    moved = dict(dup, span={"line": 40, "col": 0, "end_line": 40, "end_col": 6})  # same content, other line
    new = _with(base, lambda r: r["scan"]["findings"].append(moved))
    d = compare(base, new)
    assert [(f.code, n) for f, n in d.new] == [("NM101", 1)] and d.regression
    back = compare(new, base)
    assert [(f.code, n) for f, n in back.fixed] == [("NM101", 1)] and not back.regression
    moved_only = _with(base, lambda r: r["scan"]["findings"].__setitem__(
        r["scan"]["findings"].index(dup), moved))
    assert not compare(base, moved_only).new  # a moved line is the same finding


def test_diff_new_fallback_op_and_more_recompiles(base: dict[str, Any]) -> None:
    extra = _runtime("NM901", "aten::bincount", 9, {"count": 2}).to_dict()
    more = _runtime("NM903", "y = model(x)", 4, {"distinct_signatures": 6}).to_dict()

    def edit(r: dict[str, Any]) -> None:
        findings = r["check"]["report"]["findings"]
        findings[:] = [f for f in findings if f["code"] != "NM903"] + [extra, more]
        next(f for f in findings if f["symbol"] == "aten::argmax")["details"]["count"] = 20

    new = _with(base, edit)
    d = compare(base, new)
    assert [(c.key, c.old, c.new) for c in d.new_fallback_ops] == [("aten::bincount", 0, 2)]
    assert [(c.key, c.old, c.new) for c in d.more_fallback_calls] == [("aten::argmax", 12, 20)]
    assert [(c.key, c.old, c.new) for c in d.more_recompiles] == [("train.py:4:1 `y = model(x)`", 4, 6)]
    assert d.reasons[-2:] == ("new CPU fallback op(s): aten::bincount", "more recompiles at 1 call site(s)")
    improved = compare(new, base)
    assert [c.key for c in improved.gone_fallback_ops] == ["aten::bincount"]
    assert [(c.old, c.new) for c in improved.fewer_recompiles] == [(6, 4)]
    assert not improved.regression


def test_diff_version_changes_are_reported(base: dict[str, Any]) -> None:
    def edit(r: dict[str, Any]) -> None:
        r["versions"]["torch"] = "2.14.0"
        r["versions"]["rule_pack"]["version"] = "2027.1.0"
        r["versions"]["rule_pack"]["digest"] = "0" * 64

    d = compare(base, _with(base, edit))
    keys = {c.key: (c.old, c.new) for c in d.versions}
    assert keys["torch"] == (version("torch"), "2.14.0")
    assert set(keys) == {"torch", "rule pack version", "rule pack digest"} and not d.regression
    assert f"torch: {version('torch')} -> 2.14.0" in render_text(d)
    assert f"| torch | {version('torch')} | 2.14.0 |" in render_markdown(d)


def test_diff_check_that_stops_completing_is_a_regression(base: dict[str, Any]) -> None:
    new = _with(base, lambda r: r["check"].update(exit_code=2, report=None, error="Traceback: boom"))
    assert compare(base, new).check_broke and "check completed before" in compare(base, new).reasons[-1]


def test_diff_a_record_without_check_is_not_a_fix(base: dict[str, Any], project: Path) -> None:
    """The runtime findings of OLD are not "fixed" when NEW never ran the program: a regression."""
    unchecked = _record(project)  # same project, no --run
    d = compare(base, unchecked)
    assert not [f for f, _ in d.fixed if f.code.startswith("NM9")]
    assert "check ran before and was not run now" in d.reasons and d.regression
    assert any("has no check run" in w for w in d.warnings)
    assert "warning: NEW has no check run" in render_text(d)
    back = compare(unchecked, base)  # a check added: its findings are not "new" either
    assert not [f for f, _ in back.new if f.code.startswith("NM9")] and not back.regression


def test_diff_selection_change_is_listed_not_fixed(project: Path) -> None:
    settings = load_settings(project, {})
    old = _record(project)
    narrowed = build_record(project, load_settings(project, {"ignore": ["NM7"]}), argv=[], use_cache=False,
                            check_runner=FakeCheck([]))
    assert narrowed["settings"]["ignore"] == ["NM7"] and "NM707" not in narrowed["settings"]["enabled"]
    assert settings.ignore == ()
    d = compare(old, narrowed)
    assert not d.fixed  # NM707 was turned off, not fixed
    assert [f.code for f, _ in d.deselected] == ["NM707"]
    assert ("rules no longer selected", ) == tuple(c.key for c in d.selection if c.key.startswith("rules"))
    assert "Findings of rules no longer selected (not fixed): 1" in render_text(d)
    back = compare(narrowed, old)
    assert [f.code for f, _ in back.newly_selected] == ["NM707"] and not back.new
    assert "| rules selected |" in render_markdown(back)


def test_diff_warns_when_the_projects_differ(base: dict[str, Any]) -> None:
    other = _with(base, lambda r: r["project"].update(path="/elsewhere/proj"))
    d = compare(base, other)
    assert any("different projects" in w for w in d.warnings) and not d.regression
    assert "> **Warning:** the records are of different projects" in render_markdown(d)


# --- CLI --------------------------------------------------------------------------------------------


def _cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_cli_report_writes_every_format(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    result = _cli("report", str(project), "--no-cache", "--output-json", str(out / "r.json"),
                  "--output-markdown", str(out / "r.md"), "--output-html", str(out / "r.html"))
    assert result.exit_code == 0, result.stderr
    rec = load_record(out / "r.json")
    assert rec["commands"]["report"] == (
        f"neuron-migrate report {project} --no-cache --output-json {out / 'r.json'} "
        f"--output-markdown {out / 'r.md'} --output-html {out / 'r.html'}"
    )
    assert (out / "r.md").read_text().startswith("# Migration record: proj")
    assert (out / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert "CUDA-specific sites found" in result.stderr and result.stdout == ""


def test_cli_report_json_to_stdout_only_when_asked_and_usage_errors(project: Path) -> None:
    result = _cli("report", str(project), "--no-cache", "--output-json", "-", "-q")
    assert result.exit_code == 0 and validate(json.loads(result.stdout), "stdout")["headline"]["sites"] == 3
    plain = _cli("report", str(project), "--no-cache")  # no output asked: the headline, not 60 KB of JSON
    assert plain.exit_code == 0 and plain.stdout.startswith("CUDA-specific sites found")
    assert "{" not in plain.stdout and "no record written" in plain.stderr
    two = _cli("report", str(project), "--output-json", "-", "--output-html", "-")
    assert two.exit_code == 2 and "only one output can go to stdout" in two.stderr
    bad = _cli("report", str(project), "--no-cache", "--", "--steps", "2")
    assert bad.exit_code == 2 and "need --run SCRIPT" in bad.stderr
    missing = _cli("report", str(project / "nope"))
    assert missing.exit_code == 2 and "nope: no such file or directory" in missing.stderr


def test_cli_report_exits_1_when_the_check_of_the_rewritten_program_fails(project: Path, tmp_path: Path) -> None:
    (project / "boom.py").write_text("raise SystemExit('the program failed')\n", encoding="utf-8")
    out = tmp_path / "r.json"
    result = _cli("report", str(project), "--no-cache", "--run", "boom.py", "--output-json", str(out))
    assert result.exit_code == 1, result.stderr
    assert load_record(out)["headline"]["check_completed"] is False  # the record is still written
    (project / "fine.py").write_text("print('ok')\n", encoding="utf-8")
    assert _cli("report", str(project), "--no-cache", "--run", "fine.py", "-q").exit_code == 0


def test_cli_diff_exit_codes(base: dict[str, Any], tmp_path: Path) -> None:
    old, same, worse = tmp_path / "old.json", tmp_path / "same.json", tmp_path / "worse.json"
    old.write_text(dumps(base))
    same.write_text(dumps(base))
    worse.write_text(dumps(_with(base, lambda r: r["scan"]["findings"].append(_finding()))))
    assert _cli("diff", str(old), str(same)).exit_code == 0
    regress = _cli("diff", str(old), str(worse), "--format", "markdown")
    assert regress.exit_code == 1 and regress.stdout.startswith("## neuron-migrate diff:")
    report = tmp_path / "diff.md"
    assert _cli("diff", str(old), str(worse), "--format", "markdown", "--output", str(report)).exit_code == 1
    assert "**Regression:**" in report.read_text()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json", "not JSON (line 1"),
        ('{"schema_version": 1, "findings": []}', "not a neuron-migrate record"),
        (json.dumps({"kind": RECORD_KIND, "schema_version": 2}), "record schema_version 2 is not supported"),
    ],
)
def test_cli_diff_bad_input_exits_2_naming_the_file(base: dict[str, Any], tmp_path: Path,
                                                    content: str | None, message: str) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(dumps(base))
    if content is not None:
        bad.write_text(content)
    for args in ((good, bad), (bad, good)):
        result = _cli("diff", *map(str, args))
        assert result.exit_code == 2
        assert f"neuron-migrate: error: {bad}: {message}" in result.stderr
    assert _cli("diff", str(good), str(good), "--format", "html").exit_code == 2


def test_diff_shows_values_read_back_that_moved(base: dict[str, Any]) -> None:
    """`extras.check.values` (the losses and metrics a program logged) are in the record; after an
    update, diff lists the lines whose last value moved beyond tolerance, not the steady ones."""
    values = {"train.py:4": {"reads": 3, "first": 2.5, "last": 0.75},
              "train.py:9": {"reads": 1, "first": [1.0, 2.0], "last": [1.0, 2.0]},
              "train.py:12": {"reads": 2, "first": "nan", "last": "nan"}}

    def put(v: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
        return lambda r: r["check"]["report"]["extras"]["check"].__setitem__("values", copy.deepcopy(v))

    old = _with(base, put(values))
    same = _with(base, put({**values, "train.py:4": {"reads": 3, "first": 2.5, "last": 0.75 * (1 + 1e-6)}}))
    d = compare(old, same)
    assert d.values_compared == 3 and not d.values_moved and not d.regression
    moved = _with(base, put({**values, "train.py:4": {"reads": 3, "first": 2.5, "last": 0.8},
                             "train.py:12": {"reads": 3, "first": "nan", "last": 1.0}}))
    d = compare(old, moved)
    assert [(c.key, c.old, c.new) for c in d.values_moved] == [
        ("train.py:4", 0.75, 0.8), ("train.py:12 (reads 2 -> 3)", "nan", 1.0)]
    assert not d.regression  # check --parity is the gate for numerics
    text = render_text(d)
    assert "Values read back that moved (of 3 lines): 2\n  train.py:4: last 0.75 -> 0.8" in text
    assert "| train.py:4 | 0.75 | 0.8 |" in render_markdown(d)
