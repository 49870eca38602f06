"""`neuron-migrate config [PATH]`: the effective settings for PATH and where each came from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from neuron_migrate.cli.output import fail_on_errors


def _toml_value(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def show(path: Path, config_file: Path | None, fmt: str) -> int:
    from neuron_migrate.config import load_settings
    from neuron_migrate.errors import NeuronMigrateError

    if fmt not in ("text", "json"):
        raise NeuronMigrateError(f"--format: expected text or json, got {fmt!r}")
    if not path.exists():
        raise NeuronMigrateError(f"{path}: no such file or directory")
    settings = load_settings(path, config_file=config_file)
    values = settings.to_dict()
    if fmt == "json":
        data = {
            "config_files": [str(p) for p in settings.config_files],
            "settings": {k: {"value": v, "source": settings.source(k)} for k, v in values.items()},
        }
        typer.echo(json.dumps(data, indent=2))
        return 0
    files = ", ".join(str(p) for p in settings.config_files) or "none found"
    typer.echo(f"# config files (lowest precedence first): {files}")
    typer.echo("# precedence: command line > NEURON_MIGRATE_<KEY> > .neuron-migrate.toml > pyproject.toml > default")
    width = max(len(k) for k in values)
    for key, value in values.items():
        typer.echo(f"{key:<{width}} = {_toml_value(value)}  # {settings.source(key)}")
    return 0


def register(app: typer.Typer) -> None:
    @app.command("config")
    def config_command(
        path: Path = typer.Argument(Path("."), help="The file or directory whose settings to show."),
        config: Path | None = typer.Option(None, "--config", help="Use this config file instead of discovering one.",
                                    dir_okay=False),
        format: str = typer.Option("text", "--format", "-f", help="text or json."),
    ) -> None:
        """Print the effective settings and where each value came from."""
        raise typer.Exit(fail_on_errors(lambda: show(path, config, format)))
