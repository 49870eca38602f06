"""CUDA words in a file that does not parse.

A file with a syntax error gets its NM001, and no syntax tree to walk; its CUDA sites are still
sites (old code: `x.cuda(async=True)`, a Python 2 `print` statement beside `torch.cuda` calls). So
its tokens are read instead (`tokenize` reads text the parser rejects) and each CUDA word of a
name, or of a short string that is code, is reported by the `match.tokens` rules, once per line,
as the walk's net reports it. What the walk keeps silent stays silent here as far as the tokens
tell: comments, a string that is a statement (a docstring), and what follows a word that prints,
logs, warns, raises or asserts, or an argparse `help=`, on its logical line.
"""

from __future__ import annotations

import ast
import io
import tokenize
import warnings
from dataclasses import replace

from neuron_migrate.findings import Finding, Span
from neuron_migrate.scan.matchers.tokens import TokenTable

__all__ = ["unparsed_findings"]

# Names that make a line's strings a message: print/logging/warnings calls, raise, assert, help=.
_MESSAGE_WORDS = frozenset({"print", "raise", "assert", "help", "warn", "warning", "warnings", "info", "debug",
                            "error", "exception", "critical", "log", "logger", "logging"})
_STATEMENT_START = frozenset({tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT})


def unparsed_findings(text: str, rel: str, words: TokenTable, cell: int | None = None) -> list[Finding]:
    found: list[Finding] = []
    reported: set[int] = set()
    lines = text.split("\n")
    previous = tokenize.NEWLINE  # the type of the last significant token
    message = False  # the logical line so far prints, logs, raises...
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                kind = tok.type
                if kind in (tokenize.COMMENT, tokenize.ENCODING):
                    continue
                if kind == tokenize.NEWLINE:
                    message = False
                hit = None
                if kind == tokenize.NAME:
                    message = message or tok.string in _MESSAGE_WORDS
                    hit = words.name(tok.string) if not message else None
                elif kind == tokenize.STRING and not message and previous not in _STATEMENT_START:
                    value = _value(tok.string)
                    hit = words.string(value) if value is not None else None
                if hit is not None and tok.start[0] not in reported:
                    line, col = tok.start
                    end_line, end_col = tok.end if tok.end[0] == line else (line, len(lines[line - 1]))
                    reported.add(line)
                    span = Span(line, col, end_line, end_col)
                    found += [replace(rule.finding(rel, span, tok.string, lines[line - 1]), cell=cell) for rule in hit[1]]
                if kind not in _STATEMENT_START or kind == tokenize.NEWLINE:
                    previous = kind
    except (tokenize.TokenError, SyntaxError):  # an unclosed bracket or string, a bad dedent: what came before stands
        pass
    return found


def _value(literal: str) -> str | None:
    """A string token's text, without its prefix and quotes (an f-string's too), or None."""
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        body = literal.lstrip("rRbBuUfF")
        quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
        return body[len(quote):-len(quote)] if len(body) >= 2 * len(quote) else None
    return value if isinstance(value, str) else None
