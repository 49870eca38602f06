"""Hand-made findings with fixes, located by the text they replace (independent of the analyzer)."""

from __future__ import annotations

import re

from neuron_migrate.findings import Edit, Finding, Fix, FixClass, Severity, Span, Target


def span_of(source: str, needle: str, occurrence: int = 0) -> Span:
    """The Span (1-based line, 0-based character column) of the n-th `needle` in `source`."""
    starts = [0, *(m.end() for m in re.finditer(r"\r\n|\r|\n", source))]
    index = -1
    for _ in range(occurrence + 1):
        index = source.index(needle, index + 1)
    end = index + len(needle)

    def where(offset: int) -> tuple[int, int]:
        line = max(i for i, s in enumerate(starts) if s <= offset)
        return line + 1, offset - starts[line]

    (line, col), (end_line, end_col) = where(index), where(end)
    return Span(line, col, end_line, end_col)


def finding(
    source: str,
    needle: str,
    replacement: str,
    *,
    code: str = "NM101",
    occurrence: int = 0,
    fix_class: FixClass = FixClass.SAFE,
    target: Target = Target.NEURON,
    add: tuple[str, ...] = (),
    remove: tuple[str, ...] = (),
    path: str = "m.py",
    cell: int | None = None,
    extra_edits: tuple[Edit, ...] = (),
) -> Finding:
    span = span_of(source, needle, occurrence)
    lines = re.split(r"\r\n|\r|\n", source)
    fix = Fix(target, fix_class, f"replace {needle}", (Edit(span, replacement), *extra_edits), add, remove)
    return Finding(
        code=code,
        severity=Severity.WARNING,
        fix_class=fix_class,
        category="device",
        path=path,
        span=span,
        message=f"{needle} is CUDA-specific",
        source_line=lines[span.line - 1],
        symbol=needle,
        fixes=(fix,),
        cell=cell,
        statement_line=span.line,
    )
