"""Jupyter notebooks (nbformat 4): code cells, with IPython syntax blanked so that `ast` can parse
them and every line keeps its number (findings are reported per cell, lines relative to the cell)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from neuron_migrate.scan.diagnostics import BROKEN_NOTEBOOK, Diagnosis


@dataclass(frozen=True, slots=True)
class CodeCell:
    index: int  # 0-based among all cells, as `Finding.cell`
    source: str  # IPython-only lines blanked; same line count as the cell


# Cell magics whose body is still Python; any other `%%magic` (bash, html, writefile...) is not.
_PYTHON_BODY_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "py", "python", "python3"})
_LINE_MAGIC = re.compile(r"^\s*(?:%%?[A-Za-z_]|!|\?)")  # %magic, !shell, ?help (not `% x` in an expression)
_ASSIGNED_MAGIC = re.compile(r"^\s*[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[!%]")  # x = !ls


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
        cells.append(CodeCell(index, blank_ipython(source.replace("\r\n", "\n"))))
    return cells


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
            indent = line[: len(line) - len(line.lstrip())]
            lines[i] = indent + "pass" if indent else ""  # keeps an indented block non-empty
        else:
            continue
        continued = stripped.endswith("\\")
    return "\n".join(lines)


def _is_ipython_line(stripped: str, line: str) -> bool:
    if not stripped:
        return False
    if _LINE_MAGIC.match(line) or _ASSIGNED_MAGIC.match(line):
        return True
    return stripped.endswith("?") and "#" not in stripped  # `obj?` / `obj??` help
