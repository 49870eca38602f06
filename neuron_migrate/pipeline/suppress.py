"""Inline suppressions: `# neuron-migrate: ignore[NM101,NM201]` or a bare `# neuron-migrate: ignore`.

A directive silences the findings of its codes (a code, a prefix like `NM2`, or an old code that
the pack redirects) whose line, or the first line of whose statement, is the directive's line, in
the same notebook cell. Directives are applied to the raw findings, before rule selection, so a
comment for a rule that is switched off today is not reported. A directive (or a code in it) that
silences nothing becomes an NM006 finding, as ruff's RUF100 does for `noqa`, except in a file the
scan could not fully analyse (it has an NM0xx diagnostic): there, "unused" would be a guess. A
malformed directive (`ignore[NM101` without `]`, `ignore[]`) silences nothing and is an NM007
finding wherever it is, and so is a code the pack does not know (`ignore[NM999]`: a typo would
otherwise read as "unused"). `ignore[ALL]` names every code, like a bare `ignore`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from neuron_migrate.findings import Finding, FixClass, Severity, Span
from neuron_migrate.ruleset.model import RulePack
from neuron_migrate.scan.result import Directive

UNUSED_CODE = "NM006"
INVALID_CODE = "NM007"
TOOL_PREFIX = "NM0"  # the scan's own diagnostics: the file was not (fully) analysed


@dataclass(frozen=True, slots=True)
class Suppressed:
    kept: list[Finding]  # findings no directive silenced
    suppressed: int  # how many were silenced
    unused: list[Finding]  # NM006 findings for directives that silenced nothing, NM007 for malformed ones


ALL = "ALL"
_SELECTOR = re.compile(r"^NM\d{0,3}$")


def _matches(selector: str, code: str, pack: RulePack | None) -> bool:
    if selector == ALL:
        return True
    live = pack.redirects.get(selector, selector) if pack else selector
    return code.startswith(live)


def _known(selector: str, pack: RulePack | None) -> bool:
    """Whether `selector` names a code of the pack (a code, a prefix, a redirected code or ALL)."""
    if selector == ALL or pack is None:
        return True
    return bool(_SELECTOR.match(selector)) and (
        selector in pack.redirects or any(code.startswith(selector) for code in pack.rules))


def _covers(directive: Directive, finding: Finding) -> bool:
    if directive.cell != finding.cell:
        return False
    return directive.line in (finding.span.line, finding.statement_line or finding.span.line)


def _unused_finding(path: str, directive: Directive, codes: tuple[str, ...] | None,
                    pack: RulePack | None) -> Finding:
    symbol = "ignore" if codes is None else f"ignore[{','.join(codes)}]"
    return _tool_finding(UNUSED_CODE, path, directive, symbol, pack,
                         f"`# neuron-migrate: {symbol}` suppresses nothing")


def _tool_finding(code: str, path: str, directive: Directive, symbol: str, pack: RulePack | None,
                  fallback: str) -> Finding:
    rule = pack.get(code) if pack else None
    return Finding(
        code=code,
        severity=rule.severity if rule else Severity.WARNING,
        fix_class=rule.fix.fix_class if rule else FixClass.MANUAL,
        category=rule.category if rule else "tool",
        path=path,
        span=Span(directive.line, 0, directive.line, 0),
        message=rule.render_message(symbol) if rule else fallback,
        symbol=symbol,
        cell=directive.cell,
    )


def apply_directives(
    path: str, findings: Sequence[Finding], directives: Sequence[Directive], pack: RulePack | None
) -> Suppressed:
    used: set[tuple[int, str | None]] = set()  # (directive index, code or None for bare)
    kept: list[Finding] = []
    for finding in findings:
        hit = False
        for i, d in enumerate(directives):
            if not _covers(d, finding):
                continue
            if d.codes is None:
                used.add((i, None))
                hit = True
            else:
                for code in d.codes:
                    if _matches(code, finding.code, pack):
                        used.add((i, code))
                        hit = True
        if not hit:
            kept.append(finding)
    unused = [_tool_finding(INVALID_CODE, path, d, d.problem, pack, f"malformed suppression: {d.problem}")
              for d in directives if d.problem is not None]
    for d in directives:
        unknown = [c for c in d.codes or () if d.problem is None and not _known(c, pack)]
        if unknown:
            problem = f"unknown code{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} (see `neuron-migrate rules`)"
            unused.append(_tool_finding(INVALID_CODE, path, d, problem, pack, f"malformed suppression: {problem}"))
    if any(f.code.startswith(TOOL_PREFIX) for f in findings):
        return Suppressed(kept, len(findings) - len(kept), unused)
    for i, d in enumerate(directives):
        if d.problem is not None:
            continue
        if d.codes is None:
            if (i, None) not in used:
                unused.append(_unused_finding(path, d, None, pack))
            continue
        idle = tuple(c for c in d.codes if (i, c) not in used and _known(c, pack))
        if idle:
            unused.append(_unused_finding(path, d, idle, pack))
    return Suppressed(kept, len(findings) - len(kept), unused)
