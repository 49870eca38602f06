"""Findings as plain tuples: what workers send back and what the cache stores.

Building a `Finding` (frozen dataclass, plus Span/Fix/Edit objects) costs tens of microseconds;
a repeat scan of a large tree must not pay that for findings nobody looks at, so results travel
and persist as rows and become objects only when read (see `FileResult`).
"""

from __future__ import annotations

from typing import Any

from neuron_migrate.findings import Edit, Finding, Fix, FixClass, Severity, Span, Target
from neuron_migrate.scan.result import Directive

Row = tuple[Any, ...]

_SEVERITY = {s.value: s for s in Severity}
_FIX_CLASS = {c.value: c for c in FixClass}
_TARGET = {t.value: t for t in Target}


def finding_to_row(f: Finding) -> Row:
    s = f.span
    return (f.code, f.severity.value, f.fix_class.value, f.category, (s.line, s.col, s.end_line, s.end_col),
            f.message, f.source_line, f.symbol, tuple(_fix_row(x) for x in f.fixes), f.cell,
            f.statement_line, dict(f.details) if f.details else None, f.fingerprint)


def row_to_finding(row: Row, path: str) -> Finding:
    (code, severity, fix_class, category, span, message, source_line, symbol, fixes, cell,
     statement_line, details, fingerprint) = row
    return Finding(code, _SEVERITY[severity], _FIX_CLASS[fix_class], category, path, Span(*span),
                   message, source_line, symbol, tuple(_row_fix(x) for x in fixes), cell,
                   statement_line, details or {}, fingerprint)


def directive_to_row(d: Directive) -> Row:
    return (d.line, d.codes, d.cell, d.problem)


def row_to_directive(row: Row) -> Directive:
    return Directive(row[0], tuple(row[1]) if row[1] is not None else None, row[2], row[3])


def _fix_row(x: Fix) -> Row:
    return (x.target.value, x.applicability.value, x.title,
            tuple(((e.span.line, e.span.col, e.span.end_line, e.span.end_col), e.replacement) for e in x.edits),
            x.add_imports, x.remove_imports)


def _row_fix(r: Row) -> Fix:
    return Fix(_TARGET[r[0]], _FIX_CLASS[r[1]], r[2], tuple(Edit(Span(*e[0]), e[1]) for e in r[3]),
               tuple(r[4]), tuple(r[5]))
