"""What a matcher hands to the analyzer: the matched site (node, context) and the source's
line index that turns `ast` byte columns into the character columns of `findings.Span`."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from neuron_migrate.findings import Span

# Python's tokenizer ends lines at \r\n, \r or \n only (not at \f, \v or U+2028 like splitlines).
NEWLINE = re.compile(r"\r\n|\r|\n")


class LineIndex:
    """The source split into physical lines, with byte -> character column conversion."""

    __slots__ = ("lines",)

    def __init__(self, source: str) -> None:
        self.lines = NEWLINE.split(source) if "\r" in source else source.split("\n")

    def line(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    def col(self, lineno: int, byte_col: int) -> int:
        line = self.line(lineno)
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8", "surrogatepass")[:byte_col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> Span:
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        end = node.end_col_offset if node.end_col_offset is not None else node.col_offset  # type: ignore[attr-defined]
        return Span(line, self.col(line, node.col_offset), end_line, self.col(end_line, end))  # type: ignore[attr-defined]

    def span_at(self, pos: tuple[int, int, int, int]) -> Span:
        line, col, end_line, end_col = pos
        return Span(line, self.col(line, col), end_line, self.col(end_line, end_col))

    def text(self, span: Span) -> str:
        if span.line == span.end_line:
            return self.line(span.line)[span.col : span.end_col]
        parts = [self.line(span.line)[span.col :]]
        parts.extend(self.line(n) for n in range(span.line + 1, span.end_line))
        parts.append(self.line(span.end_line)[: span.end_col])
        return "\n".join(parts)

    def node_text(self, node: ast.AST) -> str:
        return self.text(self.span(node))


@dataclass(slots=True)
class Site:
    """One match, with the context fixes need. `node` gives the finding's span unless `span` does."""

    kind: str  # the Match field that matched: qualified_names, device_strings, methods, ...
    node: ast.AST
    symbol: str
    stmt: ast.AST  # innermost enclosing statement (or except handler / match case)
    stmt_line: int  # first line of `stmt`, decorators included
    call: ast.Call | None = None  # the call the match belongs to (argument, method, device string)
    arg: ast.AST | None = None  # the argument (ast.keyword or positional expression) holding it
    literal: ast.AST | None = None  # the string to edit (device string, argument value, env var)
    token: str = ""  # the matched device type / literal / env-var name inside `literal`
    qualified: str = ""  # resolved dotted name (qualified_names), callee (arguments)
    root_spec: str = ""  # the import binding the matched expression went through ("m.x")
    decorator: bool = False  # `node` is a bare decorator (`@torch.compile`), not a Call
    pos: tuple[int, int, int, int] | None = None  # (line, byte col, end line, end byte col) if not node's
    data: bool = False  # a device type listed as data (an entry, a table key): never renamed
