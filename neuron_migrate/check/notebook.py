"""A Jupyter notebook as one program: its code cells in order, IPython lines (`%`, `%%`, `!`)
blanked as `scan` reads them (`neuron_migrate.scan.notebook`), each cell starting on a new line.

The child compiles that text with the notebook's own path as the file name, so every call site the
backend records is `(notebook, program line)`; `locate` maps a program line back to
`(cell index, line in the cell)`, the coordinates of scan's notebook findings.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass
from pathlib import Path

from neuron_migrate.errors import NeuronMigrateError

SUFFIX = ".ipynb"


def is_notebook(path: str | Path) -> bool:
    return str(path).endswith(SUFFIX)


@dataclass(frozen=True, slots=True)
class NotebookProgram:
    source: str
    starts: tuple[int, ...]  # program line (1-based) where each code cell begins
    cells: tuple[int, ...]  # the cell index (among all cells) of each code cell
    lines: tuple[str, ...]  # the program's lines

    def locate(self, line: int) -> tuple[int, int] | None:
        """Program line -> (cell index, 1-based line in the cell); None outside every cell."""
        i = bisect.bisect_right(self.starts, line) - 1
        if i < 0 or line > len(self.lines):
            return None
        return self.cells[i], line - self.starts[i] + 1

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 1 <= line <= len(self.lines) else ""


def program(text: str) -> NotebookProgram:
    """Raises Diagnosis (scan's NM005 message) for a notebook that is not valid nbformat 4 JSON."""
    from neuron_migrate.scan.notebook import code_cells

    lines: list[str] = []
    starts, cells = [], []
    for cell in code_cells(text):
        body = cell.source.split("\n")
        if body and body[-1] == "" and len(body) > 1:
            body.pop()  # the cell's final newline
        starts.append(len(lines) + 1)
        cells.append(cell.index)
        lines.extend(body)
    return NotebookProgram("\n".join(lines) + "\n", tuple(starts), tuple(cells), tuple(lines))


def load(path: str | Path) -> NotebookProgram:
    """The notebook's program; NeuronMigrateError naming the file for unreadable or broken JSON."""
    from neuron_migrate.scan.diagnostics import Diagnosis

    try:
        return program(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise NeuronMigrateError(f"{path}: cannot read notebook: {exc}") from None
    except Diagnosis as exc:
        raise NeuronMigrateError(f"{path}: {exc.detail}") from None


@functools.lru_cache(maxsize=16)
def cached(path: str) -> NotebookProgram | None:
    """For locating findings: None when the notebook cannot be read any more."""
    try:
        return load(path)
    except NeuronMigrateError:
        return None
