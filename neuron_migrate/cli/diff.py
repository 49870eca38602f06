"""`neuron-migrate diff OLD.json NEW.json`: what changed between two migration records.

Exit 1 on a regression (see `neuron_migrate.record.diff`), 0 otherwise, 2 when a file is missing or
is not a record of a supported schema version.
"""

from __future__ import annotations

from pathlib import Path

import typer

from neuron_migrate.cli.output import fail_on_errors, write_outputs

_FORMATS = ("text", "markdown")


def _run(old: Path, new: Path, output_format: str, output: Path | None) -> int:
    from neuron_migrate.errors import ConfigError
    from neuron_migrate.record.build import load_record
    from neuron_migrate.record.diff import compare, render_markdown, render_text

    if output_format not in _FORMATS:
        raise ConfigError(f"--format: expected one of {', '.join(_FORMATS)}, got {output_format!r}")
    result = compare(load_record(old), load_record(new), str(old), str(new))
    text = render_markdown(result) if output_format == "markdown" else render_text(result)
    regression = f"; regression: {'; '.join(result.reasons)}" if result.regression else ""
    write_outputs([(output, text, f"wrote {output}{regression}")])
    return 1 if result.regression else 0


def register(app: typer.Typer) -> None:
    @app.command("diff")
    def diff(
        old: Path = typer.Argument(..., help="The earlier record (JSON from `neuron-migrate report`)."),
        new: Path = typer.Argument(..., help="The later record."),
        output_format: str = typer.Option("text", "--format", "-f", help="text or markdown."),
        output: Path | None = typer.Option(None, "--output", "-o", dir_okay=False, help="Write to FILE."),
    ) -> None:
        """Compare two migration records; exit 1 on a regression, 0 otherwise, 2 on bad input."""
        raise typer.Exit(fail_on_errors(lambda: _run(old, new, output_format, output)))
