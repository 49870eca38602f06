"""Compare two migration records (`neuron-migrate diff OLD NEW`).

Findings (scan findings and check's runtime findings) are matched by fingerprint as multisets, so
moved lines match and a duplicated line counts twice. A regression, for CI (exit 1), is any of:
a new finding at or above `error`; a CPU fallback op the old record did not have; a recompile call
site with more distinct signatures than before (or a new one); a check that completed before and
does not now.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from neuron_migrate.findings import Finding, Severity
from neuron_migrate.record.build import (
    check_findings,
    fallback_ops,
    recompile_sites,
    scan_findings,
    version_summary,
)

_REGRESSION_SEVERITY = Severity.ERROR


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

    @property
    def regression(self) -> bool:
        return bool(self.reasons)


def _findings(record: Mapping[str, Any]) -> list[Finding]:
    return scan_findings(record) + check_findings(record)


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


def _completed(record: Mapping[str, Any]) -> bool | None:
    return record["headline"].get("check_completed") if record.get("check") else None


def compare(old: Mapping[str, Any], new: Mapping[str, Any], old_label: str = "OLD", new_label: str = "NEW") -> RecordDiff:
    old_f, new_f = _findings(old), _findings(new)
    fixed = _multiset_delta(old_f, new_f)
    added = _multiset_delta(new_f, old_f)

    old_ops = {op: e["count"] for op, e in fallback_ops(old).items()}
    new_ops = {op: e["count"] for op, e in fallback_ops(new).items()}
    new_fallback = [Change(op, 0, n) for op, n in new_ops.items() if op not in old_ops]
    more_calls = [Change(op, old_ops[op], n) for op, n in new_ops.items() if op in old_ops and n > old_ops[op]]
    gone = [Change(op, n, 0) for op, n in old_ops.items() if op not in new_ops]

    old_rc, new_rc = recompile_sites(old), recompile_sites(new)
    old_sites = {k: s["signatures"] for k, s in old_rc.items()}
    new_sites = {k: s["signatures"] for k, s in new_rc.items()}

    def label(key: str) -> str:
        site = new_rc.get(key) or old_rc[key]
        return f"{site['location']} `{site['symbol']}`"

    more_rc = [Change(label(k), old_sites.get(k, 0), n) for k, n in new_sites.items() if n > old_sites.get(k, 0)]
    fewer_rc = [Change(label(k), n, new_sites.get(k, 0)) for k, n in old_sites.items() if new_sites.get(k, 0) < n]

    oh, nh = old["headline"], new["headline"]
    headline = [Change(k, oh.get(k), nh.get(k)) for k in nh if oh.get(k) != nh.get(k)]
    check_broke = _completed(old) is True and _completed(new) is False

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
    return RecordDiff(
        old_label, new_label, tuple(fixed), tuple(added), tuple(new_fallback), tuple(more_calls), tuple(gone),
        tuple(more_rc), tuple(fewer_rc), tuple(_version_changes(old, new)), tuple(headline), check_broke,
        tuple(reasons),
    )


# --- rendering ------------------------------------------------------------------------------------


def _count(n: int) -> str:
    return f" (x{n})" if n > 1 else ""


def render_text(d: RecordDiff) -> str:
    out = [f"neuron-migrate diff {d.old_label} -> {d.new_label}", ""]

    def section(title: str, lines: list[str]) -> None:
        out.append(f"{title}: {'none' if not lines else len(lines)}")
        out.extend(f"  {line}" for line in lines)

    section("Findings fixed", [f"{f.location()}: {f.code} {f.message}{_count(n)}" for f, n in d.fixed])
    section("New findings", [f"{f.location()}: {f.code} [{f.severity.value}] {f.message}{_count(n)}" for f, n in d.new])
    section("New CPU fallback ops", [f"{c.key}: {c.new} calls" for c in d.new_fallback_ops])
    section("Fallback ops with more calls", [f"{c.key}: {c.old} -> {c.new}" for c in d.more_fallback_calls])
    section("Fallback ops gone", [c.key for c in d.gone_fallback_ops])
    section("More recompiles (signatures per call site)", [f"{c.key}: {c.old} -> {c.new}" for c in d.more_recompiles])
    section("Fewer recompiles", [f"{c.key}: {c.old} -> {c.new}" for c in d.fewer_recompiles])
    section("Version changes", [f"{c.key}: {c.old} -> {c.new}" for c in d.versions])
    section("Headline changes", [f"{c.key}: {c.old} -> {c.new}" for c in d.headline])
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

    table("Findings fixed", ["Where", "Code", "Message", "Count"],
          [[f.location(), f.code, f.message, n] for f, n in d.fixed])
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
    table("Headline changes", ["Measure", "Before", "Now"], [[c.key, c.old, c.new] for c in d.headline])
    return "\n".join(out)
