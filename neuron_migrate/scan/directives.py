"""Inline suppression comments: `# neuron-migrate: ignore[NM101, NM2]` or a bare `ignore`.

The scan only records where they are (cheaply: a regex, run only when the text mentions
`neuron-migrate:`); applying them, and flagging unused ones (NM006), is the pipeline's job.
"""

from __future__ import annotations

import re

from neuron_migrate.scan.result import Directive

MARKER = "neuron-migrate:"
_DIRECTIVE = re.compile(r"#[ \t]*neuron-migrate:[ \t]*ignore\b(?:\[([^\]\n]*)\])?")
_SEPARATOR = re.compile(r"[,\s]+")


def find_directives(text: str, cell: int | None = None) -> list[Directive]:
    if MARKER not in text:
        return []
    out = []
    for m in _DIRECTIVE.finditer(text):
        listed = m.group(1)
        codes = None if listed is None else tuple(c.upper() for c in _SEPARATOR.split(listed) if c)
        out.append(Directive(text.count("\n", 0, m.start()) + 1, codes, cell))
    return out
