"""`neuron-migrate rewrite`: show (default) or write (`--apply`) the fixes of scan's findings.

The diff goes to stdout (plain when piped, so `rewrite . > fix.patch` works for Python files);
the summary of what changed and what still needs a person goes to stderr. With `--format json`
stdout holds the JSON report instead (remaining findings; per-file outcomes and diffs in
`extras.files`). Exit codes come from `neuron_migrate.pipeline.gate` over the findings still in the code.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from neuron_migrate.cli.output import choose, fail_on_errors, gate
from neuron_migrate.errors import NeuronMigrateError

_FORMATS = ("text", "json")


def rewrite(
    paths: list[Path] | None = typer.Argument(None, metavar="PATH", show_default=False,
                                       help="Files or directories to rewrite; `-` reads one file's source from stdin."),
    apply: bool = typer.Option(False, "--apply", help="Write the changes (default: only show the diff)."),
    target: str | None = typer.Option(
        None, "--target", help="neuron: Neuron code; accelerator: device-agnostic torch.accelerator code. [default: neuron]"
    ),
    unsafe_fixes: bool | None = typer.Option(
        None, "--unsafe-fixes/--no-unsafe-fixes", help="Also apply fixes that may change behaviour."
    ),
    allow_dirty: bool = typer.Option(
        False,
        "--allow-dirty",
        help="With --apply, also write files git does not have committed and clean (modified, staged, "
        "untracked, ignored). Files outside any git work tree are always written.",
    ),
    write_read_only: bool = typer.Option(
        False,
        "--write-read-only",
        help="With --apply, also write read-only files (no write permission, e.g. chmod a-w); they "
        "keep their mode. Without it they are refused.",
    ),
    select: list[str] | None = typer.Option(None, "--select", help="Codes or prefixes to fix (comma-separated)."),
    ignore: list[str] | None = typer.Option(None, "--ignore", help="Codes or prefixes to leave alone."),
    extend_select: list[str] | None = typer.Option(None, "--extend-select",
                                                   help="Add these codes or prefixes to the selection."),
    extend_ignore: list[str] | None = typer.Option(None, "--extend-ignore",
                                                   help="Leave these alone too, keeping the configured ignore list."),
    fail_on: str | None = typer.Option(
        None, "--fail-on", help="Exit 1 while findings at or above this remain: error, warning, info, never."
    ),
    diff: bool | None = typer.Option(
        None, "--diff/--no-diff", help="Print the unified diff. [default: on without --apply, off with it]"
    ),
    exit_zero: bool = typer.Option(False, "--exit-zero",
                                   help="Exit 0 even when findings remain (errors still exit 2)."),
    output_format: str = typer.Option("text", "--format", "--output-format", metavar="FORMAT", help="text or json."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="The diff (or JSON) only: no summary or progress."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the scan cache."),
    config: Path | None = typer.Option(None, "--config", help="Use this config file instead of discovering one."),
    stdin_filename: Path | None = typer.Option(
        None, "--stdin-filename", metavar="FILENAME", dir_okay=False,
        help="Read the source from stdin as FILENAME (config found from it); with --apply the fixed "
        "source goes to stdout, without it the diff."),
) -> None:
    """Rewrite CUDA code for Neuron: show the diff, or write it with --apply."""
    code = fail_on_errors(
        lambda: _run(paths, apply, target, unsafe_fixes, allow_dirty, select, ignore, fail_on, diff,
                     output_format, no_cache, config, extend_select=extend_select, extend_ignore=extend_ignore,
                     exit_zero=exit_zero, quiet=quiet, stdin_filename=stdin_filename,
                     write_read_only=write_read_only)
    )
    raise typer.Exit(code)


def _run(
    paths: list[Path] | None,
    apply: bool,
    target: str | None,
    unsafe_fixes: bool | None,
    allow_dirty: bool,
    select: list[str] | None,
    ignore: list[str] | None,
    fail_on: str | None,
    diff: bool | None,
    output_format: str,
    no_cache: bool,
    config: Path | None,
    *,
    extend_select: list[str] | None = None,
    extend_ignore: list[str] | None = None,
    exit_zero: bool = False,
    quiet: bool = False,
    stdin_filename: Path | None = None,
    write_read_only: bool = False,
) -> int:
    from neuron_migrate import api
    from neuron_migrate.cli.console import ProgressBars, colour
    from neuron_migrate.emit import FORMATS, EmitOptions
    from neuron_migrate.emit.rewrite_text import colour_diff, summary_text

    choose("--format", output_format, _FORMATS)
    overrides = {
        "target": target,
        "unsafe-fixes": unsafe_fixes,
        "select": ",".join(select) if select else None,
        "ignore": ",".join(ignore) if ignore else None,
        "extend-select": ",".join(extend_select) if extend_select else None,
        "extend-ignore": ",".join(extend_ignore) if extend_ignore else None,
        "fail-on": fail_on,
        "exit-zero": True if exit_zero else None,
    }
    paths = paths or []
    stdin = stdin_filename is not None or "-" in [str(p) for p in paths]
    if stdin and [str(p) for p in paths] not in ([], ["-"]):
        raise NeuronMigrateError("source from stdin (`-` or --stdin-filename) is rewritten alone: drop the other paths")
    if not paths and not stdin:
        raise NeuronMigrateError("rewrite needs a PATH to rewrite (or `-` with --stdin-filename for stdin)")
    settings, pack = api.load(stdin_filename or (Path(".") if stdin else api.existing(paths)[0]), overrides,
                              config=config)
    fixed_source: bytes | None = None
    if stdin:
        text_rewrite = api.rewrite_text(sys.stdin.buffer.read(), stdin_filename, settings=settings, apply=apply)
        result, fixed_source = text_rewrite.result, text_rewrite.source
    else:
        with ProgressBars(not quiet) as bars:  # a large tree takes a while: show scanning, then fixing
            result = api.rewrite(paths, apply=apply, allow_dirty=allow_dirty, settings=settings,
                                 use_cache=not no_cache, progress=bars.stage("scanning"),
                                 fix_progress=bars.stage("fixing"), write_read_only=write_read_only)
    report = result.report()
    if output_format == "json":
        sys.stdout.write(FORMATS["json"](report, EmitOptions(target=settings.target)))
    elif fixed_source is not None and apply and not diff:
        # As `ruff check --fix -`: the fixed buffer replaces the editor's, so it is all stdout holds.
        sys.stdout.flush()
        sys.stdout.buffer.write(fixed_source)
        sys.stdout.buffer.flush()
    elif diff or (diff is None and not apply):
        text = "".join(o.diff for o in result.files if o.diff)
        sys.stdout.write(colour_diff(text) if colour(sys.stdout) else text)
        sys.stdout.flush()
    if output_format != "json":
        for warning in result.warnings:
            typer.echo(f"neuron-migrate: warning: {warning}", err=True)
        if not quiet:
            typer.echo(summary_text(result), err=True, nl=False)
    return gate(report, settings, pack, quiet=True)


def register(app: typer.Typer) -> None:
    app.command("rewrite")(rewrite)
