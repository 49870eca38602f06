"""Compare two migration records (`neuron-migrate diff OLD NEW`).

Findings (scan findings and check's runtime findings) are matched by fingerprint as multisets, so
moved lines match and a duplicated line counts twice. A regression, for CI (exit 1), is any of:
a new finding at or above `error`; a CPU fallback op the old record did not have; a recompile call
site with more distinct signatures than before (or a new one); a check that completed before and
does not now; a check that ran before and was not run now (nothing at run time was measured, so
nothing there can be called fixed).

A finding only counts as fixed or new when both records could hold it: runtime findings only when
both ran `check`, and a rule's findings only when both records selected the rule (records store
their effective selection). The rest is listed apart, as a selection change, so turning a rule off
never reads as fixing its findings. Records of two different projects are compared with a warning.

When both records ran `check`, the values the program read back (`extras.check.values`: per user
line, the reads and the first and last value; check.parity) are compared too: a line whose last
value moved beyond check --parity's default tolerance, or that read a different number of values,
is listed ("did the loss move after the torch update?"). A moved value is not a regression by
itself: `check --parity` is the gate for numerics.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from neuron_migrate.findings import Finding, Severity
from neuron_migrate.record.build import (
    check_findings,
    check_values,
    fallback_ops,
    recompile_sites,
    scan_findings,
    version_summary,
)

_REGRESSION_SEVERITY = Severity.ERROR
# A value read back "moved" beyond check --parity's default tolerance (check.parity).
VALUE_RTOL, VALUE_ATOL = 1e-3, 1e-5


@dataclass(frozen=True, slots=True)
class Change:
    key: str
    old: Any
    new: Any


@dataclass(frozen=True, slots=True)
class RecordDiff:
    old_label: str
    new_label: str
    fixed: tuple[tuple[Finding, int], ...]  # (finding, how many of its fingerprint went away)
    new: tuple[tuple[Finding, int], ...]
    new_fallback_ops: tuple[Change, ...]  # old count 0
    more_fallback_calls: tuple[Change, ...]  # op fell back before too, now more calls
    gone_fallback_ops: tuple[Change, ...]
    more_recompiles: tuple[Change, ...]  # call site: old signatures -> new (old 0: new site)
    fewer_recompiles: tuple[Change, ...]
    versions: tuple[Change, ...]  # tool, rule pack version/digest, torch, python
    headline: tuple[Change, ...]
    check_broke: bool  # completed in OLD, not in NEW
    reasons: tuple[str, ...] = field(default=())
    deselected: tuple[tuple[Finding, int], ...] = ()  # OLD findings of rules NEW did not select
    newly_selected: tuple[tuple[Finding, int], ...] = ()  # NEW findings of rules OLD did not select
    selection: tuple[Change, ...] = ()  # "rules selected" / "rules no longer selected" / settings keys
    warnings: tuple[str, ...] = ()  # different projects, a side without check, ...
    # user line -> (old last value, new last value) of the values the program read back, where
    # they moved beyond tolerance or the line read a different number of values (reads: old -> new)
    values_moved: tuple[Change, ...] = ()
    values_compared: int = 0  # lines both runs read values at

    @property
    def regression(self) -> bool:
        return bool(self.reasons)


def _findings(record: Mapping[str, Any], *, runtime: bool) -> list[Finding]:
    return scan_findings(record) + (check_findings(record) if runtime else [])


def _settings(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """The record's effective settings ({} for a record made before records stored them)."""
    settings = record.get("settings")
    return settings if isinstance(settings, Mapping) else {}


def _enabled(record: Mapping[str, Any]) -> set[str] | None:
    """The codes the record's scan checked, or None when the record does not say."""
    codes = _settings(record).get("enabled")
    return {c for c in codes if isinstance(c, str)} if isinstance(codes, list) else None


def _selection_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    a, b = _settings(old), _settings(new)
    changes = []
    if "enabled" in a and "enabled" in b:
        was, now = _enabled(old) or set(), _enabled(new) or set()
        gained, lost = sorted(now - was), sorted(was - now)
        if gained:
            changes.append(Change("rules selected", "", ", ".join(gained)))
        if lost:
            changes.append(Change("rules no longer selected", ", ".join(lost), ""))
    for key in ("select", "ignore", "severity", "per_file_ignores", "extra_rules"):
        if key in a and key in b and a[key] != b[key]:
            changes.append(Change(key, a[key], b[key]))
    if old.get("target") != new.get("target"):
        changes.append(Change("target", old.get("target"), new.get("target")))
    return changes


def _multiset_delta(a: list[Finding], b: list[Finding]) -> list[tuple[Finding, int]]:
    """Findings of `a` whose fingerprint occurs more often in `a` than in `b`, with the excess."""
    excess = Counter(f.fingerprint for f in a) - Counter(f.fingerprint for f in b)
    out: list[tuple[Finding, int]] = []
    for f in sorted(a, key=lambda f: f.sort_key):
        if excess.get(f.fingerprint):
            out.append((f, excess.pop(f.fingerprint)))
    return out


def _version_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    a, b = version_summary(old), version_summary(new)
    return [Change(k, a[k], b[k]) for k in a if a[k] != b[k]]


def _project_path(record: Mapping[str, Any]) -> str | None:
    project = record.get("project")
    return str(project.get("path")) if isinstance(project, Mapping) else None


def _completed(record: Mapping[str, Any]) -> bool | None:
    return record["headline"].get("check_completed") if record.get("check") else None


def compare(old: Mapping[str, Any], new: Mapping[str, Any], old_label: str = "OLD", new_label: str = "NEW") -> RecordDiff:
    both_checked = bool(old.get("check")) and bool(new.get("check"))
    warnings = []
    old_path, new_path = _project_path(old), _project_path(new)
    if old_path != new_path:
        warnings.append(f"the records are of different projects: {old_path} and {new_path}")
    if old.get("check") and not new.get("check"):
        warnings.append(f"{new_label} has no check run ({old_label} has one): runtime results are not compared")
    elif new.get("check") and not old.get("check"):
        warnings.append(f"{old_label} has no check run: {new_label}'s runtime results are not compared")
    old_on, new_on = _enabled(old), _enabled(new)
    both_on = old_on & new_on if old_on is not None and new_on is not None else None

    def comparable(f: Finding) -> bool:
        return both_on is None or f.code in both_on or f.code not in (old_on or set()) | (new_on or set())

    old_all, new_all = _findings(old, runtime=both_checked), _findings(new, runtime=both_checked)
    old_f, new_f = [f for f in old_all if comparable(f)], [f for f in new_all if comparable(f)]
    fixed = _multiset_delta(old_f, new_f)
    added = _multiset_delta(new_f, old_f)
    deselected = [(f, 1) for f in sorted(old_all, key=lambda f: f.sort_key) if not comparable(f)]
    newly_selected = [(f, 1) for f in sorted(new_all, key=lambda f: f.sort_key) if not comparable(f)]

    # Runtime measures compare only when both records ran the program (else nothing was measured).
    old_ops = {op: e["count"] for op, e in fallback_ops(old).items()} if both_checked else {}
    new_ops = {op: e["count"] for op, e in fallback_ops(new).items()} if both_checked else {}
    new_fallback = [Change(op, 0, n) for op, n in new_ops.items() if op not in old_ops]
    more_calls = [Change(op, old_ops[op], n) for op, n in new_ops.items() if op in old_ops and n > old_ops[op]]
    gone = [Change(op, n, 0) for op, n in old_ops.items() if op not in new_ops]

    old_rc, new_rc = (recompile_sites(old), recompile_sites(new)) if both_checked else ({}, {})
    old_sites = {k: s["signatures"] for k, s in old_rc.items()}
    new_sites = {k: s["signatures"] for k, s in new_rc.items()}

    def label(key: str) -> str:
        site = new_rc.get(key) or old_rc[key]
        return f"{site['location']} `{site['symbol']}`"

    more_rc = [Change(label(k), old_sites.get(k, 0), n) for k, n in new_sites.items() if n > old_sites.get(k, 0)]
    fewer_rc = [Change(label(k), n, new_sites.get(k, 0)) for k, n in old_sites.items() if new_sites.get(k, 0) < n]

    moved, compared = _values_moved(old, new) if both_checked else ([], 0)

    oh, nh = old["headline"], new["headline"]
    headline = [Change(k, oh.get(k), nh.get(k)) for k in nh if oh.get(k) != nh.get(k)]
    check_broke = _completed(old) is True and _completed(new) is False
    check_dropped = bool(old.get("check")) and not new.get("check")

    reasons = []
    severe = sum(n for f, n in added if f.severity.rank >= _REGRESSION_SEVERITY.rank)
    if severe:
        reasons.append(f"{severe} new finding(s) at or above {_REGRESSION_SEVERITY.value}")
    if new_fallback:
        reasons.append(f"new CPU fallback op(s): {', '.join(c.key for c in new_fallback)}")
    if more_rc:
        reasons.append(f"more recompiles at {len(more_rc)} call site(s)")
    if check_broke:
        reasons.append("check completed before and does not now")
    if check_dropped:
        reasons.append("check ran before and was not run now")
    return RecordDiff(
        old_label, new_label, tuple(fixed), tuple(added), tuple(new_fallback), tuple(more_calls), tuple(gone),
        tuple(more_rc), tuple(fewer_rc), tuple(_version_changes(old, new)), tuple(headline), check_broke,
        tuple(reasons), tuple(deselected), tuple(newly_selected), tuple(_selection_changes(old, new)),
        tuple(warnings), tuple(moved), compared,
    )


def _numbers(value: Any) -> list[float] | None:
    items = value if isinstance(value, list) else [value]
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            return None
        try:
            out.append(float(v))
        except ValueError:
            return None
    return out


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= VALUE_ATOL + VALUE_RTOL * abs(b)


def _values_moved(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[list[Change], int]:
    """Lines whose last value read back moved (a loss, a metric: did the results change after a
    torch or rule-pack update?), and how many lines both records read values at."""
    before, after = check_values(old), check_values(new)
    moved, compared = [], 0
    for line, now in after.items():
        was = before.get(line)
        if was is None:
            continue
        compared += 1
        a, b = _numbers(was.get("last")), _numbers(now.get("last"))
        if a is None or b is None:
            same = was.get("last") == now.get("last")
        else:
            same = len(a) == len(b) and all(_close(y, x) for x, y in zip(a, b, strict=True))
        reads_changed = was.get("reads") != now.get("reads")
        if not same or reads_changed:
            key = f"{line} (reads {was.get('reads')} -> {now.get('reads')})" if reads_changed else line
            moved.append(Change(key, was.get("last"), now.get("last")))
    return moved, compared


# --- rendering ------------------------------------------------------------------------------------


def _count(n: int) -> str:
    return f" (x{n})" if n > 1 else ""


def render_text(d: RecordDiff) -> str:
    out = [f"neuron-migrate diff {d.old_label} -> {d.new_label}", ""]
    out += [f"warning: {w}" for w in d.warnings]
    if d.warnings:
        out.append("")

    def section(title: str, lines: list[str]) -> None:
        out.append(f"{title}: {'none' if not lines else len(lines)}")
        out.extend(f"  {line}" for line in lines)

    def line(f: Finding, n: int = 1) -> str:  # as scan's text line: the severity is always shown
        return f"{f.location()}: {f.code} [{f.severity.value}] {f.message}{_count(n)}"

    section("Findings fixed", [line(f, n) for f, n in d.fixed])
    section("New findings", [line(f, n) for f, n in d.new])
    section("New CPU fallback ops", [f"{c.key}: {c.new} calls" for c in d.new_fallback_ops])
    section("Fallback ops with more calls", [f"{c.key}: {c.old} -> {c.new}" for c in d.more_fallback_calls])
    section("Fallback ops gone", [c.key for c in d.gone_fallback_ops])
    section("More recompiles (signatures per call site)", [f"{c.key}: {c.old} -> {c.new}" for c in d.more_recompiles])
    section("Fewer recompiles", [f"{c.key}: {c.old} -> {c.new}" for c in d.fewer_recompiles])
    section("Version changes", [f"{c.key}: {c.old} -> {c.new}" for c in d.versions])
    section("Rule selection and settings changes", [f"{c.key}: {c.old} -> {c.new}" for c in d.selection])
    section("Findings of rules no longer selected (not fixed)", [line(f) for f, _ in d.deselected])
    section("Findings of newly selected rules", [line(f) for f, _ in d.newly_selected])
    section("Headline changes", [f"{c.key}: {c.old} -> {c.new}" for c in d.headline])
    if d.values_compared:
        section(f"Values read back that moved (of {d.values_compared} lines)",
                [f"{c.key}: last {c.old} -> {c.new}" for c in d.values_moved])
    out.append("")
    if d.regression:
        out.append("REGRESSION: " + "; ".join(d.reasons))
    else:
        out.append("No regression.")
    return "\n".join(out) + "\n"


def _md(text: Any) -> str:
    s = " ".join(str(text).split())
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def render_markdown(d: RecordDiff) -> str:
    out = [f"## neuron-migrate diff: `{_md(d.old_label)}` → `{_md(d.new_label)}`", ""]
    if d.regression:
        out += ["**Regression:** " + "; ".join(_md(r) for r in d.reasons) + " :x:", ""]
    else:
        out += ["No regression. :white_check_mark:", ""]
    out += [f"> **Warning:** {_md(w)}" for w in d.warnings]
    if d.warnings:
        out.append("")

    def table(title: str, header: list[str], rows: list[list[Any]]) -> None:
        out.append(f"### {title} ({len(rows)})")
        out.append("")
        if not rows:
            out.extend(["None.", ""])
            return
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join("---" for _ in header) + "|")
        out.extend("| " + " | ".join(_md(c) for c in row) + " |" for row in rows)
        out.append("")

    table("Findings fixed", ["Where", "Code", "Severity", "Message", "Count"],
          [[f.location(), f.code, f.severity.value, f.message, n] for f, n in d.fixed])
    table("New findings", ["Where", "Code", "Severity", "Message", "Count"],
          [[f.location(), f.code, f.severity.value, f.message, n] for f, n in d.new])
    table("New CPU fallback ops", ["Op", "Calls"], [[c.key, c.new] for c in d.new_fallback_ops])
    table("Fallback ops with more calls", ["Op", "Before", "Now"],
          [[c.key, c.old, c.new] for c in d.more_fallback_calls])
    table("Fallback ops gone", ["Op", "Calls before"], [[c.key, c.old] for c in d.gone_fallback_ops])
    table("More recompiles", ["Call site", "Signatures before", "Now"],
          [[c.key, c.old, c.new] for c in d.more_recompiles])
    table("Fewer recompiles", ["Call site", "Signatures before", "Now"],
          [[c.key, c.old, c.new] for c in d.fewer_recompiles])
    table("Version changes", ["What", "Before", "Now"], [[c.key, c.old, c.new] for c in d.versions])
    table("Rule selection and settings changes", ["What", "Before", "Now"], [[c.key, c.old, c.new] for c in d.selection])
    table("Findings of rules no longer selected (not fixed)", ["Where", "Code", "Severity", "Message"],
          [[f.location(), f.code, f.severity.value, f.message] for f, _ in d.deselected])
    table("Findings of newly selected rules", ["Where", "Code", "Severity", "Message"],
          [[f.location(), f.code, f.severity.value, f.message] for f, _ in d.newly_selected])
    table("Headline changes", ["Measure", "Before", "Now"], [[c.key, c.old, c.new] for c in d.headline])
    if d.values_compared:
        table(f"Values read back that moved (of {d.values_compared} lines)", ["Line", "Last before", "Last now"],
              [[c.key, c.old, c.new] for c in d.values_moved])
    return "\n".join(out)
