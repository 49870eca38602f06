"""Apply the fixes that scan computed to one file's text (no disk, no detection).

Edits come in the findings' coordinates: 1-based lines split at `\\r\\n`, `\\r` or `\\n` (as Python's
tokenizer does) and 0-based character columns. Fixes are applied whole or not at all; when two
fixes overlap the first (by position) wins and the other is reported as skipped. Imports are then
added where missing and removed where unused, and the result must parse with `ast` and libcst or
the whole file is left alone. libcst is imported, and the file parsed with it once, only when a
fix applies.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from neuron_migrate.findings import Finding, Fix, FixClass, Target

_NEWLINE = re.compile(r"\r\n|\r|\n")


OVERLAPS = "overlaps the fix for"  # how a skip for an overlap starts (another round may apply it)


@dataclass(frozen=True, slots=True)
class SkippedFix:
    finding: Finding
    reason: str


@dataclass(frozen=True, slots=True)
class ApplyResult:
    new_source: str
    applied: tuple[Finding, ...]  # findings whose fix is in new_source
    skipped: tuple[SkippedFix, ...]  # applicable fixes that were not applied, with why
    error: str = ""  # set when the whole file was left alone (new_source is then the input)

    @property
    def changed(self) -> bool:
        return bool(self.applied)


@dataclass(frozen=True, slots=True)
class ImportContext:
    """What the rest of a notebook binds and uses, so one cell's imports are judged in context."""

    bound_elsewhere: frozenset[str] = frozenset()  # normalised import statements in other cells
    used_elsewhere: frozenset[str] = frozenset()  # names read in other cells


def applicable_fix(finding: Finding, target: Target, *, unsafe: bool) -> Fix | None:
    """The fix `rewrite` may apply for this finding: safe always, unsafe on request, else none."""
    fix = finding.fix_for(target)
    if fix is None or not fix.edits:
        return None
    if fix.applicability is FixClass.SAFE or (fix.applicability is FixClass.UNSAFE and unsafe):
        return fix
    return None


def line_starts(source: str) -> list[int]:
    """Offset of the first character of each line (index 0 is line 1)."""
    return [0, *(m.end() for m in _NEWLINE.finditer(source))]


def newline_of(source: str) -> str:
    m = _NEWLINE.search(source)
    return m.group() if m else "\n"


def _line_text(source: str, starts: Sequence[int], line: int) -> str:
    end = starts[line] if line < len(starts) else len(source)
    return source[starts[line - 1] : end].rstrip("\r\n")


def _offset(source: str, starts: Sequence[int], line: int, col: int) -> int | None:
    if not 1 <= line <= len(starts) or col < 0:
        return None
    if col > len(_line_text(source, starts, line)):
        return None
    return starts[line - 1] + col


@dataclass(frozen=True, slots=True)
class _Planned:
    finding: Finding
    fix: Fix
    spans: tuple[tuple[int, int, str], ...]  # (start, end, replacement), sorted

    @property
    def first(self) -> int:
        return self.spans[0][0]


def _overlaps(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    if a == b:
        return False  # the very same edit from two findings is applied once
    if a[0] < b[1] and b[0] < a[1]:
        return True
    # Two insertions at one point, or an insertion at the start of a replacement: order is ambiguous.
    return a[0] == b[0] and (a[0] == a[1] or b[0] == b[1])


class _Taken:
    """The edits of the fixes accepted so far, sorted by position. They never overlap one another,
    so their ends rise with their starts and a new edit is compared with its neighbours only:
    overlap checks cost O(log n) per edit, not a scan of every accepted fix."""

    def __init__(self) -> None:
        self._spans: list[tuple[int, int, str]] = []
        self._owners: list[_Planned] = []

    def add(self, planned: _Planned) -> None:
        for span in planned.spans:
            i = bisect.bisect_right(self._spans, span)
            self._spans.insert(i, span)
            self._owners.insert(i, planned)

    def clash(self, span: tuple[int, int, str]) -> _Planned | None:
        start, end, _ = span
        i = bisect.bisect_left(self._spans, (start,))
        if i and _overlaps(self._spans[i - 1], span):  # the one before may reach past `start`
            return self._owners[i - 1]
        while i < len(self._spans) and (self._spans[i][0] < end or self._spans[i][0] == start):
            if _overlaps(self._spans[i], span):
                return self._owners[i]
            i += 1
        return None


def _plan(
    source: str, findings: Sequence[Finding], target: Target, unsafe: bool
) -> tuple[list[_Planned], list[SkippedFix]]:
    starts = line_starts(source)
    newline = newline_of(source)
    candidates: list[_Planned] = []
    skipped: list[SkippedFix] = []
    for finding in findings:
        fix = applicable_fix(finding, target, unsafe=unsafe)
        if fix is None:
            continue
        line = finding.span.line
        if finding.source_line and (
            not 1 <= line <= len(starts) or _line_text(source, starts, line) != finding.source_line
        ):
            skipped.append(SkippedFix(finding, "the file changed since it was scanned"))
            continue
        spans: list[tuple[int, int, str]] = []
        for edit in fix.edits:
            s = edit.span
            start = _offset(source, starts, s.line, s.col)
            end = _offset(source, starts, s.end_line, s.end_col)
            if start is None or end is None or end < start:
                spans = []
                break
            replacement = edit.replacement
            if newline != "\n":
                replacement = re.sub(r"(?<!\r)\n", newline, replacement)
            spans.append((start, end, replacement))
        if not spans:
            skipped.append(SkippedFix(finding, "an edit lies outside the file"))
            continue
        spans.sort()
        if any(_overlaps(a, b) for a, b in itertools.pairwise(spans)):
            skipped.append(SkippedFix(finding, "the fix's own edits overlap"))
            continue
        candidates.append(_Planned(finding, fix, tuple(spans)))

    candidates.sort(key=lambda p: (p.first, p.finding.code))
    accepted: list[_Planned] = []
    taken = _Taken()
    for cand in candidates:
        clash = next((c for c in map(taken.clash, cand.spans) if c is not None), None)
        if clash is None:
            accepted.append(cand)
            taken.add(cand)
        else:
            where = f"{clash.finding.span.line}:{clash.finding.span.col + 1}"
            skipped.append(SkippedFix(cand.finding, f"{OVERLAPS} {clash.finding.code} at {where}"))
    if accepted:
        accepted, held = _hold_guards(source, findings, accepted, target)
        skipped += held
    return accepted, skipped


def _hold_guards(
    source: str, findings: Sequence[Finding], accepted: list[_Planned], target: Target
) -> tuple[list[_Planned], list[SkippedFix]]:
    """The guard rule for this run: a fix in a guard's test only goes with every fix it guards
    (scan already withheld guards around code with no fix; here an unsafe fix left out, or one
    skipped for an overlap, holds its guard back too)."""
    from neuron_migrate.scan.fixes.guards import blocked, guards_in, withheld_note
    from neuron_migrate.scan.matchers.site import LineIndex

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return accepted, []  # the result will not parse either: the file is refused later
    # (the guards whose tests or feeds hold a finding: only those can hold a fix back)
    guards = guards_in(tree, LineIndex(source), sorted({n for f in findings for n in range(f.span.line, f.span.end_line + 1)}))
    ids = {id(p.finding) for p in accepted}
    blocks = blocked(guards, findings, lambda f: id(f) in ids, target)
    if not blocks:
        return accepted, []
    held: dict[int, str] = {}
    for block in blocks:
        note = withheld_note(block)
        for f in block.withheld:
            held.setdefault(id(f), note)
    return [p for p in accepted if id(p.finding) not in held], [
        SkippedFix(p.finding, held[id(p.finding)]) for p in accepted if id(p.finding) in held
    ]


def _splice(source: str, planned: Sequence[_Planned]) -> tuple[str, int]:
    """Apply every edit; also return the new offset of the first edit that needs an import."""
    edits = sorted({span for p in planned for span in p.spans})
    needs_import = {span for p in planned if p.fix.add_imports for span in p.spans}
    out: list[str] = []
    pos = 0
    first_needing = -1
    length = 0
    for start, end, replacement in edits:
        out.append(source[pos:start])
        length += start - pos
        if first_needing < 0 and (start, end, replacement) in needs_import:
            first_needing = length
        out.append(replacement)
        length += len(replacement)
        pos = end
    out.append(source[pos:])
    return "".join(out), first_needing


class Rejected(ValueError):
    """The rewritten file cannot be accepted (does not parse, a bad import entry...): why."""


def _parse(source: str) -> ast.Module:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        where = f" at line {line}" if line else ""
        raise Rejected(f"the rewritten code does not parse ({exc.__class__.__name__}{where})") from None
    except RecursionError:
        raise Rejected("the rewritten code does not parse (nested too deeply)") from None


def apply_fixes_to_source(
    source: str,
    findings: Iterable[Finding],
    target: Target,
    *,
    unsafe: bool,
    imports: ImportContext | None = None,
) -> ApplyResult:
    """Apply the applicable fixes of `findings` (all from this `source`) for `target`."""
    findings = list(findings)
    planned, skipped = _plan(source, findings, target, unsafe)
    if not planned:
        return ApplyResult(source, (), tuple(skipped))

    from neuron_migrate.rewrite import imports as import_tools

    context = imports or ImportContext()
    spliced, first_needing = _splice(source, planned)
    remove = [name for p in planned for name in p.fix.remove_imports]
    add = [stmt for p in planned for stmt in p.fix.add_imports]
    new_source = spliced
    try:
        tree = _parse(spliced)
        # Add first: a new import then takes the place of the one it replaces.
        if add:
            new_source = import_tools.add_missing_imports(
                new_source, add, before_offset=first_needing, tree=tree, bound_elsewhere=context.bound_elsewhere
            )
        module = import_tools.parse_with_libcst(new_source)  # the one libcst parse of this file
        if new_source != spliced:
            tree = _parse(new_source)  # removal edits sit at this text's positions
        if remove:
            new_source = import_tools.remove_unused_imports(
                new_source, remove, module, tree=tree, add=add, used_elsewhere=context.used_elsewhere
            )
        if new_source != spliced:
            _parse(new_source)
    except Rejected as exc:
        every = [SkippedFix(p.finding, f"file left unchanged: {exc}") for p in planned]
        return ApplyResult(source, (), tuple(skipped + every), error=str(exc))
    return ApplyResult(new_source, tuple(p.finding for p in planned), tuple(skipped))
