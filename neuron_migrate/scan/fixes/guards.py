"""The guard rule: a guard is rewritten together with everything it guards, or not at all.

A guard is a condition that decides which code runs: the test of an `if`/`while`/ternary, an
`assert` (it guards the rest of its block) or an operand of an `and`-chain (it guards the later
operands). Rewriting `torch.cuda.is_available()` to `torch.neuron.is_available()` sends the program
into the guarded code on Trainium, where it used to take its CPU path; if anything in there stays
CUDA-only, the program that worked now crashes. So a fix inside a guard's test is kept only when
every finding in what it guards is fixed as well; otherwise the guard and its block stay as they
are and the guard's finding becomes the one manual finding that says why.

`settle` applies the rule to the fixes scan computes (a finding with no fix for a target blocks
it); `blocked` applies it again at rewrite time to the fixes one run will actually apply (an
unsafe fix without `--unsafe-fixes`, or one skipped for an overlap, blocks it too).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from neuron_migrate.findings import Edit, Finding, FixClass, Severity, Span, Target
from neuron_migrate.scan.matchers.site import LineIndex

_BLOCKS = ("body", "orelse", "finalbody")


@dataclass(frozen=True, slots=True)
class Guard:
    tests: tuple[Span, ...]  # the condition(s) whose rewrite changes which path runs
    region: Span  # everything the guard decides, tests included
    kind: str  # "if", "while", "ternary", "assert", "and"
    message: Span | None = None  # an assert's message, when it is one plain one-line string


def _start(s: Span) -> tuple[int, int]:
    return (s.line, s.col)


def _end(s: Span) -> tuple[int, int]:
    return (s.end_line, s.end_col)


def inside(inner: Span, outer: Span) -> bool:
    return _start(outer) <= _start(inner) and _end(inner) <= _end(outer)


def guards_in(tree: ast.AST, lines: LineIndex, near: Sequence[int] | None = None) -> list[Guard]:
    """Every guard of the tree, innermost (smallest region) first. With `near` (sorted line
    numbers), only the guards whose test spans one of those lines: a guard matters only when a
    finding with a fix sits in its test, and building every guard of a large file costs more than
    the rest of its analysis."""

    def wanted(first: ast.AST, last: ast.AST) -> bool:
        if near is None:
            return True
        i = bisect.bisect_left(near, first.lineno)  # type: ignore[attr-defined]
        return i < len(near) and near[i] <= (last.end_lineno or last.lineno)  # type: ignore[attr-defined]

    out: list[Guard] = []
    for node in ast.walk(tree) if near is None else _around(tree, near):
        cls = node.__class__
        if cls is ast.If or cls is ast.While:
            if wanted(node.test, node.test):  # type: ignore[attr-defined]
                out.append(Guard((lines.span(node.test),), lines.span(node), "if" if cls is ast.If else "while"))  # type: ignore[attr-defined]
        elif cls is ast.IfExp:
            if wanted(node.test, node.test):  # type: ignore[attr-defined]
                out.append(Guard((lines.span(node.test),), lines.span(node), "ternary"))  # type: ignore[attr-defined]
        elif cls is ast.BoolOp and node.op.__class__ is ast.And:  # type: ignore[attr-defined]
            values = node.values  # type: ignore[attr-defined]
            if wanted(values[0], values[-2]):
                out.append(Guard(tuple(lines.span(v) for v in values[:-1]), lines.span(node), "and"))
        for field in _BLOCKS:
            block = getattr(node, field, None)
            if block.__class__ is list:
                _asserts(block, lines, out, wanted)
        for holder in getattr(node, "handlers", None) or getattr(node, "cases", None) or ():
            _asserts(holder.body, lines, out, wanted)
    out.sort(key=lambda g: (g.region.end_line - g.region.line, g.region.end_col - g.region.col))
    return out


def _around(tree: ast.AST, near: Sequence[int]) -> Iterator[ast.AST]:
    """The nodes whose lines hold one of `near` (and those without a position): every guard
    with such a line in its test is among them, and the rest of a large tree is never visited.
    Breadth first, as `ast.walk`."""
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        yield node
        for child in ast.iter_child_nodes(node):
            first = getattr(child, "lineno", None)
            if first is not None:
                i = bisect.bisect_left(near, first)
                if i == len(near) or near[i] > (child.end_lineno or first):  # type: ignore[attr-defined]
                    continue
            todo.append(child)


def _asserts(block: list[ast.stmt], lines: LineIndex, out: list[Guard], wanted: Callable[[ast.AST, ast.AST], bool]) -> None:
    for i, stmt in enumerate(block):
        if stmt.__class__ is ast.Assert and wanted(stmt.test, stmt.test):  # type: ignore[attr-defined]
            test = lines.span(stmt.test)  # type: ignore[attr-defined]
            own, last = lines.span(stmt), lines.span(block[-1])
            msg = stmt.msg  # type: ignore[attr-defined]
            message = None
            if msg is not None and msg.__class__ is ast.Constant and isinstance(msg.value, str):
                span = lines.span(msg)
                message = span if span.line == span.end_line else None
            out.append(Guard((test,), Span(own.line, own.col, last.end_line, last.end_col), "assert", message))


class _Index:
    """Findings sorted by start, for the ones inside a span without a scan of them all."""

    def __init__(self, findings: Sequence[Finding]) -> None:
        self.items = sorted(findings, key=lambda f: _start(f.span))
        self.keys = [_start(f.span) for f in self.items]

    def within(self, span: Span) -> list[Finding]:
        lo = bisect.bisect_left(self.keys, _start(span))
        hi = bisect.bisect_right(self.keys, _end(span))
        return [f for f in self.items[lo:hi] if inside(f.span, span)]


def _matters(f: Finding, target: Target) -> bool:
    """A finding that stays unfixed under a flipped guard breaks or changes the program. Hints (info
    findings with no fix for the target) do not; an info finding whose fix for the target the run
    does not apply does, e.g. `torch.backends.cudnn.benchmark = True` under
    `if device.startswith("cuda"):` (found by the behaviour property test: the flipped guard ran
    CUDA-only code that used to be skipped)."""
    fix = f.fix_for(target)
    return f.severity is not Severity.INFO or (fix is not None and bool(fix.edits))


@dataclass(frozen=True, slots=True)
class Block:
    """One guard that must stay: the findings whose fix it withholds, and the finding that is why."""

    guard: Guard
    guard_findings: tuple[Finding, ...]
    withheld: tuple[Finding, ...]
    why: Finding


def blocked(
    guards: Sequence[Guard], findings: Sequence[Finding], fixed: Callable[[Finding], bool], target: Target
) -> list[Block]:
    """Guards whose test holds a fixed finding while what they guard holds one that is not fixed.
    `fixed` says which findings get their fix; the withheld ones count as unfixed for the guards
    around them (a blocked inner guard blocks the outer one too: inner guards come first)."""
    index = _Index(findings)
    withheld: set[int] = set()
    out: list[Block] = []

    def is_fixed(f: Finding) -> bool:
        return id(f) not in withheld and fixed(f)

    regions = [(g, index.within(g.region)) for g in guards]
    regions = [(g, r) for g, r in regions if r]
    done: set[int] = set()
    changed = True
    while changed:  # an outer guard may be blocked only by what an inner one withheld
        changed = False
        for i, (guard, region) in enumerate(regions):
            if i in done:
                continue
            tests = [f for f in region if any(inside(f.span, t) for t in guard.tests)]
            moving = [f for f in tests if is_fixed(f)]
            if not moving:
                continue
            test_ids = {id(f) for f in tests}
            why = next((f for f in region if id(f) not in test_ids and _matters(f, target) and not is_fixed(f)), None)
            if why is None:
                continue
            taken = [f for f in region if is_fixed(f)]
            withheld.update(id(f) for f in taken)
            out.append(Block(guard, tuple(moving), tuple(taken), why))
            done.add(i)
            changed = True
    return out


def _where(f: Finding) -> str:
    return f"line {f.span.line}"


def reason(block: Block) -> str:
    why = block.why
    what = f"`{why.symbol}`" if why.symbol else why.code
    return f"it guards {what} ({why.code}, {_where(why)}), which is not rewritten"


def settle(findings: Sequence[Finding], tree: ast.AST, lines: LineIndex, targets: Iterable[Target]) -> list[Finding]:
    """Scan-time guard rule: drop each target's fixes inside a guard that cannot move whole, and
    make the guard's finding say why. A finding left with no fix at all becomes manual."""
    guards = guards_in(tree, lines, sorted({n for f in findings if f.fixes for n in range(f.span.line, f.span.end_line + 1)}))
    if not guards:
        return list(findings)
    dropped: dict[int, set[Target]] = {}
    notes: dict[int, list[str]] = {}
    targets = tuple(targets)
    findings = _share_removals(findings, guards, targets)
    for target in targets:

        def fixed(f: Finding, target: Target = target) -> bool:
            fix = f.fix_for(target)
            return fix is not None and bool(fix.edits) and fix.applicability in (FixClass.SAFE, FixClass.UNSAFE)

        for block in blocked(guards, findings, fixed, target):
            for f in block.withheld:
                dropped.setdefault(id(f), set()).add(target)
            text = reason(block)
            for f in block.guard_findings:
                if text not in notes.setdefault(id(f), []):
                    notes[id(f)].append(text)
            for f in block.withheld:
                if f not in block.guard_findings:
                    note = f"it is guarded by the condition at line {block.guard.tests[0].line}, which stays as it is"
                    if note not in notes.setdefault(id(f), []):
                        notes[id(f)].append(note)
    words = _retell_asserts(findings, guards, lines)
    if not dropped and not words:
        return list(findings)
    out: list[Finding] = []
    for f in findings:
        key = id(f)
        lost = dropped.get(key)
        if key in words:
            f = replace(f, fixes=tuple(
                x if x.target in (lost or ()) else
                replace(x, edits=x.edits + tuple(replace(e, replacement=_SAYS[x.target]) for e in words[key]))
                for x in f.fixes))
        if not lost:
            out.append(f)
            continue
        fixes = tuple(x for x in f.fixes if x.target not in lost)
        cls = f.fix_class if fixes else FixClass.MANUAL
        only = f" for the {' and '.join(sorted(t.value for t in lost))} target" if fixes else ""
        message = f"{f.message}; left as is{only} because {' and '.join(notes[key])}"
        out.append(replace(f, fixes=fixes, fix_class=cls, message=message))
    return out


_CUDA_WORD = re.compile(r"\bCUDA\b")
_SAYS = {Target.NEURON: "Neuron", Target.ACCELERATOR: "an accelerator"}


def _retell_asserts(findings: Sequence[Finding], guards: Sequence[Guard], lines: LineIndex) -> dict[int, tuple[Edit, ...]]:
    """`assert torch.cuda.is_available(), "CUDA is required"`: when the assert moves, its message
    stops saying CUDA (the word inside the string only). Per finding of an assert's test (the
    first one carries them), the word's edits: `Edit.replacement` is filled in per target."""
    out: dict[int, tuple[Edit, ...]] = {}
    index = _Index(findings)
    for guard in guards:
        if guard.message is None:
            continue
        m_span = guard.message
        text = lines.line(m_span.line)[m_span.col : m_span.end_col]
        words = [Edit(Span(m_span.line, m_span.col + m.start(), m_span.line, m_span.col + m.end()), "")
                 for m in _CUDA_WORD.finditer(text)]
        carrier = next((f for f in index.within(guard.tests[0]) if f.fixes), None)
        if words and carrier is not None:
            out[id(carrier)] = tuple(words)
    return out


def _share_removals(findings: Sequence[Finding], guards: Sequence[Guard], targets: Sequence[Target]) -> list[Finding]:
    """When a fix removes a whole guarded statement (its block emptied, `compute._emptied_guard`),
    the findings in the guard's test take that same edit (applied once) instead of an edit inside
    the removed text, which would only be skipped as an overlap."""
    out = list(findings)
    position = {id(f): i for i, f in enumerate(out)}
    index = _Index(out)
    for guard in guards:
        if guard.kind != "if":
            continue
        region = index.within(guard.region)
        for target in targets:
            covering = next(
                (x for f in region if (x := f.fix_for(target)) is not None
                 and any(_start(e.span) <= _start(guard.region) and _end(guard.region) <= _end(e.span) for e in x.edits)),
                None,
            )
            if covering is None:
                continue
            for f in region:
                if not any(inside(f.span, t) for t in guard.tests):
                    continue
                current = out[position[id(f)]]
                own = current.fix_for(target)
                if own is None or own.edits == covering.edits:
                    continue
                # The removal needs what it removes to go: it is as safe as the fix that removes it.
                shared = replace(own, edits=covering.edits, add_imports=(), applicability=covering.applicability)
                out[position[id(f)]] = replace(current, fixes=tuple(shared if x is own else x for x in current.fixes))
    return out
