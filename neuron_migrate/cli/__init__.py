"""The typer application. Command modules only parse options and call the API; they import
their engines lazily so that `--help`, `scan` and `rewrite` never import torch."""

from __future__ import annotations

import gc
import importlib
import sys
from typing import Any

import typer
import typer.core

from neuron_migrate import __version__


def _metavar(param: Any) -> str:
    """A value's name in help as people write it (FILE, DIR, N, CODES), never the Python type
    typer would show (`<list[Path]>`, `<int range>`), read from the parameter's click type."""
    kind = param.type
    if hasattr(kind, "file_okay") and hasattr(kind, "dir_okay"):
        return "DIR" if not kind.file_okay else "FILE" if not kind.dir_okay else "PATH"
    type_name = str(getattr(kind, "name", ""))
    number = int if type_name.startswith("integer") else float if type_name.startswith("float") else None
    if number is int:
        return "N"
    if number is float:
        return "SECONDS" if param.name == "timeout" else "NUMBER"
    name = param.name or "value"
    return _NAMED.get(name, name.upper().replace("_", "-"))


_NAMED = {"select": "CODES", "ignore": "CODES", "extend_select": "CODES", "extend_ignore": "CODES",
          "fail_on": "LEVEL", "format": "FORMAT", "output_format": "FORMAT", "args": "ARGS",
          "include": "GLOBS", "exclude": "GLOBS", "allow_ops": "OPS", "junit_group": "GROUP"}


class _Group(typer.core.TyperGroup):
    """The root group: every command's parameters get plain metavars before help is shown."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        for param in command.params if command is not None else ():
            if isinstance(param, typer.core.TyperArgument):
                param.metavar = param.metavar or _metavar(param)
            elif isinstance(param, typer.core.TyperOption) and not param.is_flag and param.metavar is None:
                param.metavar = _metavar(param)
        return command


app = typer.Typer(
    name="neuron-migrate",
    cls=_Group,
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
# `--help` lists commands in this order, the order of a migration: scan, rewrite, check, keep a
# record and compare records; then the reference commands (rules and explain, config).
COMMAND_MODULES: tuple[str, ...] = (
    "scan",
    "rewrite",
    "check",
    "report",
    "diff",
    "rules",
    "config",
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
    finally:
        # The process ends here. What the command built (on a large tree, tens of thousands of
        # findings) goes with it, without the interpreter's last collection walking it (~0.1 s
        # of a 0.5 s repeat scan of torch).
        gc.freeze()
