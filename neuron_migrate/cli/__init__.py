"""The typer application. Command modules only parse options and call the API; they import
their engines lazily so that `--help`, `scan` and `rewrite` never import torch."""

from __future__ import annotations

import importlib
import sys

import typer

from neuron_migrate import __version__

app = typer.Typer(
    name="neuron-migrate",
    help="Move PyTorch CUDA code to AWS Trainium (TorchNeuron): scan, rewrite, check.",
    # Plain click help: typer's rich help imports rich.markdown and friends (~0.3 s), and
    # `--help` must answer in well under half a second.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each module defines `register(app: typer.Typer) -> None`. Add a module here to add commands.
COMMAND_MODULES: tuple[str, ...] = (
    "rewrite",
    "scan",
    "config",
    "rules",
    "report",
    "diff",
    "check",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"neuron-migrate {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Move PyTorch CUDA code to AWS Trainium (TorchNeuron): scan, rewrite, check."""


for _name in COMMAND_MODULES:
    importlib.import_module(f"neuron_migrate.cli.{_name}").register(app)


def main() -> None:
    try:
        app()
    except BrokenPipeError:  # `neuron-migrate scan . | head` is not an error
        sys.stderr.close()
        sys.exit(0)
