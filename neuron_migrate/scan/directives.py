"""Inline suppression comments: `# neuron-migrate: ignore[NM101, NM2]` or a bare `ignore`.

The scan only records where they are; applying them, and flagging unused (NM006) or malformed
(NM007) ones, is the pipeline's job. Directives are read from comment tokens only, so text that
looks like one inside a string literal or a docstring is no directive. The tokenizer runs only
when the text mentions `neuron-migrate:` at all. In a file that is not Python (a dependency file, a
configuration file, a shell script) a directive is read from the first `#` of a line on.
"""

from __future__ import annotations

import io
import re
import tokenize

from neuron_migrate.scan.result import Directive

MARKER = "neuron-migrate:"
_DIRECTIVE = re.compile(r"#[ \t]*neuron-migrate:[ \t]*ignore\b")
_SEPARATOR = re.compile(r"[,\s]+")
# After a bare `ignore`: a colon or a code means the codes were meant but not bracketed.
_UNBRACKETED = re.compile(r"[ \t]*(?::|[A-Za-z]{2}\d)")


def find_directives(text: str, cell: int | None = None) -> list[Directive]:
    if MARKER not in text:
        return []
    out: list[Directive] = []
    for line, comment in _comments(text):
        if MARKER in comment:
            out += (_directive(comment, m.end(), line, cell) for m in _DIRECTIVE.finditer(comment))
    return out


def find_line_directives(text: str) -> list[Directive]:
    """Directives of a file that is not Python (a requirements file, a YAML configuration, a shell
    script): on each line, in the text from its first `#`."""
    if MARKER not in text:
        return []
    out: list[Directive] = []
    for number, line in enumerate(text.split("\n"), start=1):
        hash_at = line.find("#")
        if hash_at >= 0 and MARKER in line:
            comment = line[hash_at:]
            out += (_directive(comment, m.end(), number, None) for m in _DIRECTIVE.finditer(comment))
    return out


def _directive(comment: str, end: int, line: int, cell: int | None) -> Directive:
    rest = comment[end:]
    if not rest.startswith("["):
        if _UNBRACKETED.match(rest):
            return Directive(line, (), cell, "codes must be in brackets, as in `ignore[NM101]`")
        return Directive(line, None, cell)
    close = rest.find("]")
    if close < 0:
        return Directive(line, (), cell, "`[` without a closing `]`")
    codes = tuple(c.upper() for c in _SEPARATOR.split(rest[1:close]) if c)
    if not codes:
        return Directive(line, (), cell, "`ignore[]` names no code")
    return Directive(line, codes, cell)


def _comments(text: str) -> list[tuple[int, str]]:
    """(line, text) of every comment token. Text the tokenizer stops at (a syntax error) is read
    line by line from there, `#` to the end of the line, as no string can be told apart anyway."""
    out: list[tuple[int, str]] = []
    last_line = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            last_line = tok.start[0]
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string))
    except (tokenize.TokenError, SyntaxError):  # IndentationError is a SyntaxError
        for number, physical in enumerate(text.split("\n")[last_line:], start=last_line + 1):
            hash_at = physical.find("#")
            if hash_at >= 0 and (number, physical[hash_at:]) not in out:
                out.append((number, physical[hash_at:]))
    return out
