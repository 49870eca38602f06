"""Findings as plain tuples: what workers send back and what the cache stores.

Building a `Finding` (frozen dataclass, plus Span/Fix/Edit objects) costs tens of microseconds;
a repeat scan of a large tree must not pay that for findings nobody looks at, so results travel
and persist as rows and become objects only when read (see `FileResult`).

A row is its dataclass's fields in declaration order (a finding's without `path`, which the file
result holds once): the layout is derived from `dataclasses.fields`, never written out by hand.
Fields whose values are not plain data (enums, spans, nested fixes, a details mapping) are
converted by their `_CONVERT` entry; every other field must be a str, an int or None
(tests/scan/test_engine.py checks that against the annotations).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from neuron_migrate.findings import Edit, Finding, Fix, FixClass, Severity, Span, Target
from neuron_migrate.scan.result import Directive

Row = tuple[Any, ...]

# field name -> (its row value, its field value) as expressions of `$` (the field's value, then the
# row's), for every field that is not a plain value. Expressions, not functions: the converters are
# generated code (below), as fast as hand-written tuples; a warm scan converts tens of thousands.
_CONVERT: dict[type, dict[str, tuple[str, str]]] = {
    Finding: {
        "severity": ("$.value", "SEVERITY[$]"),
        "fix_class": ("$.value", "FIX_CLASS[$]"),
        "span": ("($.line, $.col, $.end_line, $.end_col)", "Span(*$)"),
        "fixes": ("tuple(map(fix_to_row, $))", "tuple(map(row_to_fix, $))"),
        "details": ("(dict($) if $ else None)", "($ or {})"),
    },
    Fix: {
        "target": ("$.value", "TARGET[$]"),
        "applicability": ("$.value", "FIX_CLASS[$]"),
        "edits": ("tuple(((e.span.line, e.span.col, e.span.end_line, e.span.end_col), e.replacement) for e in $)",
                  "tuple(Edit(Span(*e[0]), e[1]) for e in $)"),
        "add_imports": ("$", "tuple($)"),
        "remove_imports": ("$", "tuple($)"),
    },
}

# The row layouts: field names in declaration order (Finding's without `path`).
FINDING_FIELDS = tuple(f.name for f in dataclasses.fields(Finding) if f.name != "path")
FIX_FIELDS = tuple(f.name for f in dataclasses.fields(Fix))


def _compile(cls: type, names: tuple[str, ...], given: tuple[str, ...] = ()) -> tuple[Callable[..., Any], ...]:
    """(to_row, from_row) for `cls`, generated from its field names (as dataclasses and namedtuple
    generate their methods). `given`: fields passed to from_row beside the row (not stored in it)."""
    convert = _CONVERT[cls]
    values = ", ".join(convert[n][0].replace("$", f"x.{n}") if n in convert else f"x.{n}" for n in names)
    at = {n: f"r[{i}]" for i, n in enumerate(names)}
    args = ", ".join(n if n in given else convert[n][1].replace("$", at[n]) if n in convert else at[n]
                     for n in (f.name for f in dataclasses.fields(cls)))
    source = (f"def to_row(x):\n    return ({values},)\n"
              f"def from_row(r{''.join(', ' + g for g in given)}):\n    return cls({args})\n")
    env = dict(_ENV, cls=cls)
    exec(source, env)  # our own field names and expressions, nothing read from data
    return env["to_row"], env["from_row"]


_ENV: dict[str, Any] = {"SEVERITY": {s.value: s for s in Severity}, "FIX_CLASS": {c.value: c for c in FixClass},
                        "TARGET": {t.value: t for t in Target}, "Span": Span, "Edit": Edit}
_ENV["fix_to_row"], _ENV["row_to_fix"] = fix_to_row, row_to_fix = _compile(Fix, FIX_FIELDS)
_finding_to_row, _row_to_finding = _compile(Finding, FINDING_FIELDS, given=("path",))


def finding_to_row(f: Finding) -> Row:
    return _finding_to_row(f)  # type: ignore[no-any-return]


def row_to_finding(row: Row, path: str) -> Finding:
    return _row_to_finding(row, path)  # type: ignore[no-any-return]


def directive_to_row(d: Directive) -> Row:
    return (d.line, d.codes, d.cell, d.problem)


def row_to_directive(row: Row) -> Directive:
    return Directive(row[0], tuple(row[1]) if row[1] is not None else None, row[2], row[3])
