"""What an emitter may be told besides the report itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from neuron_migrate.findings import Target
from neuron_migrate.ruleset.model import RulePack


class JUnitGrouping(StrEnum):
    RULE = "rule"  # one test case per rule code
    FILE = "file"  # one test case per file


@dataclass(frozen=True, slots=True)
class EmitOptions:
    pack: RulePack | None = None  # rule metadata (titles, help) for SARIF, JUnit and Markdown
    target: Target = Target.NEURON  # the fix SARIF shows and the summary counts as auto-fixable
    summary: bool = True  # text: the summary after the findings (`--quiet` turns it off)
    show_source: bool = False  # text: each finding's source line with a caret under its span
    statistics: bool = False  # text: one count per code instead of the findings (`--statistics`)
    junit_grouping: JUnitGrouping = JUnitGrouping.RULE
    top_files: int = 5  # text/Markdown: how many "files with most work" to list
    markdown_max_details: int = 200  # keeps a PR comment under GitHub's 65,536-character limit
    information_uri: str = ""  # the tool's home page (from the installed metadata), if any
    color: bool = False  # text: ANSI colours (the CLI's console policy decides)
    width: int = 100  # text: the line width check's rich-rendered report wraps at
    # notebook path -> cell index -> the .ipynb file's line of each cell line (scan.notebook.source_lines):
    # SARIF points into the file; the other formats say `cell[N]:line`.
    notebook_lines: Mapping[str, Mapping[int, Sequence[int]]] = field(default_factory=dict)
    rules_uri: str = ""  # the rules page (docs/rules.md) online, if the metadata names one: SARIF helpUri
