"""GitHub Actions workflow commands (`::error file=...::message`): annotations on the pull request.

Escaping follows the runner's toolkit: in the message `%`, CR and LF are percent-encoded; in
property values `:` and `,` are too. Other control characters (a terminal escape in a file
name) are shown as `\\xNN`. Notebook findings annotate the file without a line (the
lines are cell-relative) and name the cell in the message.
"""

from __future__ import annotations

from neuron_migrate.emit.escape import printable
from neuron_migrate.emit.options import EmitOptions
from neuron_migrate.findings import Finding, Report, Severity, cell_label

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding) -> str:
    props = [("file", f.path)]
    message = f.message
    if f.cell is None:
        props += [
            ("line", str(f.span.line)),
            ("col", str(f.span.col + 1)),
            ("endLine", str(f.span.end_line)),
            ("endColumn", str(f.span.end_col + 1)),
        ]
    else:
        message = f"{cell_label(f.cell)}{f.span.line}:{f.span.col + 1}: {message}"
    props.append(("title", f.code))
    joined = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{_COMMAND[f.severity]} {joined}::{escape_data(message)}"


def emit(report: Report, options: EmitOptions) -> str:
    return "".join(annotation(f) + "\n" for f in report.findings)
