"""Output formats: one pure function per format, `(Report, EmitOptions) -> str`.

Emitters never print, write files or decide exit codes (that is `neuron_migrate.pipeline.gate`); the CLI
writes what they return. Every format renders the same `Report`, so a new format is one module
plus one line in `FORMATS`.
"""

from __future__ import annotations

from collections.abc import Callable

from neuron_migrate.emit import github, junit, markdown, sarif, text
from neuron_migrate.emit import json as json_format
from neuron_migrate.emit.options import EmitOptions, JUnitGrouping
from neuron_migrate.findings import Report

Emitter = Callable[[Report, EmitOptions], str]

FORMATS: dict[str, Emitter] = {
    "text": text.emit,
    "json": json_format.emit,
    "sarif": sarif.emit,
    "junit": junit.emit,
    "github": github.emit,
    "markdown": markdown.emit,
}

# File extension per format (golden files: tests/emit/golden/report.<ext>).
EXTENSIONS: dict[str, str] = {
    "text": "txt",
    "json": "json",
    "sarif": "sarif",
    "junit": "xml",
    "github": "github",
    "markdown": "md",
}

__all__ = ["EXTENSIONS", "FORMATS", "EmitOptions", "Emitter", "JUnitGrouping"]
