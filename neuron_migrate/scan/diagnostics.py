"""NM0xx findings: the tool's own diagnostics about a user's file.

Code, severity, fix class, category and message template all come from the rule in the pack
(`rules/nm0-tool.yaml`); the engine only supplies the detail that fills `{symbol}`.
"""

from __future__ import annotations

from neuron_migrate.findings import Finding, FixClass, Severity, Span
from neuron_migrate.ruleset.model import RulePack

SYNTAX_ERROR = "NM001"  # unparsable Python, including Python 2
UNDECODABLE = "NM002"  # undecodable text, NUL bytes, binary content
UNREADABLE = "NM003"  # permission denied, symlink loop, other OS errors
TOO_LARGE = "NM004"  # over the size limit: skipped
BROKEN_NOTEBOOK = "NM005"  # .ipynb that is not valid nbformat-4 JSON
BROKEN_DEPENDENCIES = "NM008"  # pyproject.toml / setup.cfg / environment.yml that does not parse


class Diagnosis(Exception):
    """Raised inside the per-file pipeline to stop at the first problem with a file."""

    def __init__(self, code: str, detail: str, line: int = 1, col: int = 0,
                 source_line: str = "", cell: int | None = None) -> None:
        super().__init__(detail)
        self.code, self.detail, self.line, self.col = code, detail, line, col
        self.source_line, self.cell = source_line, cell

    def to_finding(self, pack: RulePack, path: str) -> Finding:
        return tool_finding(pack, self.code, path, self.detail, line=self.line, col=self.col,
                            source_line=self.source_line, cell=self.cell)


def tool_finding(pack: RulePack, code: str, path: str, detail: str, *, line: int = 1, col: int = 0,
                 end_line: int | None = None, end_col: int | None = None, source_line: str = "",
                 cell: int | None = None) -> Finding:
    line = max(line, 1)
    col = max(col, 0)
    end_line = line if end_line is None or end_line < line else end_line
    if end_col is None or (end_line == line and end_col < col):
        end_col = len(source_line) if source_line and end_line == line and len(source_line) > col else col
    span = Span(line, col, end_line, end_col)
    rule = pack.get(code)
    if rule is None:  # a pack without nm0-tool.yaml: still say what happened, in the pack's absence
        return Finding(code=code, severity=Severity.ERROR, fix_class=FixClass.NONE, category="tool",
                       path=path, span=span, message=detail, source_line=source_line, symbol=detail,
                       cell=cell)
    return Finding(code=rule.code, severity=rule.severity, fix_class=rule.fix.fix_class,
                   category=rule.category, path=path, span=span,
                   message=rule.render_message(detail), source_line=source_line, symbol=detail,
                   cell=cell)
