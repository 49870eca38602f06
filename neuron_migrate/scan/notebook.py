"""Jupyter notebooks (nbformat 4): code cells, with IPython syntax blanked so that `ast` can parse
them and every line keeps its number (findings are reported per cell, lines relative to the cell)."""

from __future__ import annotations

import ast
import bisect
import json
import re
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from neuron_migrate.scan.diagnostics import BROKEN_NOTEBOOK, Diagnosis


@dataclass(frozen=True, slots=True)
class CodeCell:
    index: int  # 0-based among all cells, as `Finding.cell`
    source: str  # IPython-only lines blanked; same line count as the cell
    # The shell commands among the lines blanked, as written (1-based line, text): shell escapes
    # (`!nvidia-smi`), the magics that run one or set the environment (`%pip install`,
    # `%env X=1`) and a `%%bash` cell's lines, which `scan.matchers.shell.ipython_findings` reads.
    ipython: tuple[tuple[int, str], ...] = ()


# Cell magics whose body is still Python; any other `%%magic` (bash, html, writefile...) is not.
_PYTHON_BODY_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "py", "python", "python3"})
_LINE_MAGIC = re.compile(r"^\s*(?:%%?[A-Za-z_]|!|\?)")  # %magic, !shell, ?help (not `% x` in an expression)
# What runs a shell command: a `%%bash` cell; a shell escape, or a magic that installs, runs or sets
# the environment (also without its `%`: `pip install x`).
_SHELL_CELL = re.compile(r"\s*%%(?:bash|sh|system|script[ \t]+(?:ba|z)?sh)\b")
# (also one whose output a name keeps: `out = !nvidia-smi`, `x = %sx nvcc --version`)
_SHELL_LINE = re.compile(r"\s*(?:[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*(?=!|%(?:sx|system)\b))?"
                         r"(?:!|%?(?:pip3?|conda|mamba|env|set_env|sx|system)[ \t])")
# A line magic written without its `%` (IPython's automagic): `pip install x` is no Python.
_AUTOMAGIC = re.compile(r"^\s*(?:pip3?|conda|mamba|cd|env|set_env|load_ext|matplotlib)[ \t]+"
                        r"(?!(?:if|else|and|or|in|is|not|for)\b)[\w\"'./~-]")
_ASSIGNED_MAGIC = re.compile(r"^\s*[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[!%]")  # x = !ls
# A line magic that times or profiles the Python after it (`%timeit -n100 f(x); torch.cuda.synchronize()`):
# the magic and its options (`-o` alone is no statement), the statement after them.
_TIMED = re.compile(r"^(\s*)%(?:time|timeit|prun)(?:[ \t]+-[A-Za-z]+(?:[ \t]*\d+)?)*[ \t]+(?=[^\s-])")


def code_cells(text: str) -> list[CodeCell]:
    """Parse notebook JSON; raise Diagnosis(NM005) naming the JSON error position or bad field."""
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Diagnosis(BROKEN_NOTEBOOK, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                        exc.lineno, exc.colno - 1) from None
    except RecursionError:
        raise Diagnosis(BROKEN_NOTEBOOK, "invalid JSON: nested too deeply") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        if isinstance(nb, dict) and "worksheets" in nb:
            raise Diagnosis(BROKEN_NOTEBOOK, "nbformat 3 notebook (only nbformat 4 is supported)")
        raise Diagnosis(BROKEN_NOTEBOOK, "not a notebook: no 'cells' list at the top level")
    cells = []
    for index, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict):
            raise Diagnosis(BROKEN_NOTEBOOK, f"cell {index} is not a JSON object")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        elif not isinstance(source, str):
            raise Diagnosis(BROKEN_NOTEBOOK, f"cell {index}: 'source' is neither a string nor a list of strings")
        source = source.replace("\r\n", "\n")
        blanked = blank_ipython(source)
        cells.append(CodeCell(index, blanked, shell_lines(source, blanked)))
    return cells


def with_cells_above(cells: Iterable[CodeCell]) -> Iterator[tuple[CodeCell, str]]:
    """Each cell with what the cells above it leave for it, as source lines: their import
    statements and the literals their top level assigns to a name (`fp16 = False`,
    `optim = "paged_adamw_32bit"`), which carry from cell to cell as the kernel runs them
    (`scan.analyze.analyze_source`'s `prelude`)."""
    prelude = ""
    for cell in cells:
        yield cell, prelude
        prelude += _carried(cell.source)


def _carried(source: str) -> str:
    """The import statements a cell runs at its top level (also inside `try:`/`if`), and its
    top-level assignments of a literal to one name. Nothing for a cell that does not parse (its
    syntax error is reported on it)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            body = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    found: list[str] = []
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom) or (
                isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and _literal(node.value)):
            found.append(ast.unparse(node))
        elif isinstance(node, ast.If | ast.Try):
            blocks = [node.body, node.orelse, *([h.body for h in node.handlers] if isinstance(node, ast.Try) else [])]
            stack.extend(reversed([stmt for block in blocks for stmt in block]))
    return "".join(line + "\n" for line in found)


def _literal(node: ast.AST) -> bool:
    """A constant, or a list, tuple or dict of them (`{"": 0}`)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.List | ast.Tuple):
        return all(_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _literal(k) for k in node.keys) and all(_literal(v) for v in node.values)
    return False


def shell_lines(source: str, blanked: str) -> tuple[tuple[int, str], ...]:
    """The lines of a cell that the shell runs (`CodeCell.ipython`), among those `blank_ipython`
    blanked (`blanked`)."""
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and _SHELL_CELL.match(lines[first]):
        return tuple((number, line) for number, line in enumerate(lines, start=1) if number > first + 1)
    return tuple((number, line) for number, (line, kept) in enumerate(zip(lines, blanked.split("\n"), strict=True), 1)
                 if line != kept and _SHELL_LINE.match(line))


def blank_ipython(source: str) -> str:
    """Replace magics, shell escapes and help lines by blank lines (`pass` when indented)."""
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].lstrip()[2:].split(maxsplit=1)
        if not name or name[0] not in _PYTHON_BODY_MAGICS:
            return "\n".join("" for _ in lines)
        lines[first] = ""
    continued = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if continued:
            lines[i] = ""  # the rest of a magic continued with a backslash
        elif _is_ipython_line(stripped, line):
            timed = _timed(line)
            if timed is not None:
                lines[i] = timed
                continue
            indent = line[: len(line) - len(line.lstrip())]
            lines[i] = indent + "pass" if indent else ""  # keeps an indented block non-empty
        else:
            continue
        continued = stripped.endswith("\\")
    return "\n".join(lines)


# What a timing magic and its options are written over with, so that its statement reads as Python
# where it stands (`rewrite.notebook` puts the magic back where it finds it).
TIMED_PREFIX = "...;"


def timed_statement(line: str) -> int:
    """Where the statement of a timing magic's line starts (the column after the magic and its
    options), or -1 when the line is none."""
    m = _TIMED.match(line)
    return -1 if m is None or line.rstrip().endswith("\\") or m.end() - m.end(1) < len(TIMED_PREFIX) else m.end()


def _timed(line: str) -> str | None:
    """A timing magic's line with the magic and its options written over by `...;` and spaces,
    so that the statement it runs is read as Python where it stands; None when there is no such
    statement on the line (or no simple one: `%time for ...` is left blank)."""
    start = timed_statement(line)
    if start < 0:
        return None
    indent = line[: len(line) - len(line.lstrip())]
    timed = indent + TIMED_PREFIX + " " * (start - len(indent) - len(TIMED_PREFIX)) + line[start:]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(timed.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return timed


def _is_ipython_line(stripped: str, line: str) -> bool:
    if not stripped:
        return False
    if _LINE_MAGIC.match(line) or _ASSIGNED_MAGIC.match(line) or _AUTOMAGIC.match(line):
        return True
    return stripped.endswith("?") and "#" not in stripped  # `obj?` / `obj??` help


# --- where a cell's lines are in the .ipynb file ----------------------------------------------------

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _members(text: str, i: int) -> list[tuple[str, int, int]]:
    """(key, value start, value end) of the JSON object starting at `i`."""
    if text[i] != "{":
        raise ValueError("not an object")
    out, i = [], _skip(text, i + 1)
    while text[i] != "}":
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]  # json's own, not in typeshed
        i = _skip(text, i)
        if text[i] != ":":
            raise ValueError("expected ':'")
        start = _skip(text, i + 1)
        _, end = _DECODER.raw_decode(text, start)
        out.append((key, start, end))
        i = _skip(text, end)
        if text[i] == ",":
            i = _skip(text, i + 1)
    return out


def _elements(text: str, i: int) -> list[int]:
    """Start offsets of the elements of the JSON array starting at `i`."""
    if text[i] != "[":
        raise ValueError("not an array")
    out, i = [], _skip(text, i + 1)
    while text[i] != "]":
        out.append(i)
        _, i = _DECODER.raw_decode(text, i)
        i = _skip(text, i)
        if text[i] == ",":
            i = _skip(text, i + 1)
    return out


def source_lines(text: str) -> dict[int, list[int]]:
    """Cell index -> the 1-based line of the .ipynb file that holds each line of the cell's source
    (a report that points into the file, as SARIF does, needs file lines, not cell lines). Empty when
    the text is not notebook JSON. A cell whose source is one JSON string has all its lines on the
    string's line; the usual list form has one element per line."""
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]

    def line_of(offset: int) -> int:
        return bisect.bisect_right(newlines, offset) + 1

    out: dict[int, list[int]] = {}
    try:
        top = dict((k, v) for k, v, _ in _members(text, _skip(text, 0)))
        for index, start in enumerate(_elements(text, top["cells"])):
            fields = {k: v for k, v, _ in _members(text, start)}
            if "source" not in fields:
                continue
            at = fields["source"]
            strings = [at] if text[at] == '"' else _elements(text, at)
            lines: list[int] = []
            pending = True  # the next character starts a cell line
            for offset in strings:
                value, _ = json.decoder.scanstring(text, offset + 1)  # type: ignore[attr-defined]  # json's own, not in typeshed
                for ch in value:
                    if pending:
                        lines.append(line_of(offset))
                        pending = False
                    pending = ch == "\n"
            if strings and (pending or not lines):
                lines.append(line_of(strings[-1]))  # the empty line after a final newline
            out[index] = lines
    except (ValueError, KeyError, IndexError, TypeError):
        return {}
    return out


def file_lines(root: Path, paths: Iterable[str]) -> dict[str, dict[int, list[int]]]:
    """`source_lines` of each notebook in `paths` (relative to `root`) that can be read."""
    out = {}
    for rel in set(paths):
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if lines := source_lines(text):
            out[rel] = lines
    return out
