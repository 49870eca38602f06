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

_FORMATS = ("text", "json")


def rewrite(
    paths: list[Path] = typer.Argument(..., metavar="PATH", help="Files or directories to rewrite.",
                                       show_default=False),
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
) -> None:
    """Rewrite CUDA code for Neuron: show the diff, or write it with --apply."""
    code = fail_on_errors(
        lambda: _run(paths, apply, target, unsafe_fixes, allow_dirty, select, ignore, fail_on, diff,
                     output_format, no_cache, config, extend_select=extend_select, extend_ignore=extend_ignore,
                     exit_zero=exit_zero, quiet=quiet)
    )
    raise typer.Exit(code)


def _run(
    paths: list[Path],
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
    settings, pack = api.load(api.existing(paths)[0], overrides, config=config)
    with ProgressBars(not quiet) as bars:  # a large tree takes a while: show scanning, then fixing
        result = api.rewrite(paths, apply=apply, allow_dirty=allow_dirty, settings=settings, use_cache=not no_cache,
                             progress=bars.stage("scanning"), fix_progress=bars.stage("fixing"))
    report = result.report()
    if output_format == "json":
        sys.stdout.write(FORMATS["json"](report, EmitOptions(target=settings.target)))
    else:
        show_diff = (not apply) if diff is None else diff
        if show_diff:
            text = "".join(o.diff for o in result.files if o.diff)
            sys.stdout.write(colour_diff(text) if colour(sys.stdout) else text)
            sys.stdout.flush()
        for warning in result.warnings:
            typer.echo(f"neuron-migrate: warning: {warning}", err=True)
        if not quiet:
            typer.echo(summary_text(result), err=True, nl=False)
    return gate(report, settings, pack, quiet=True)


def register(app: typer.Typer) -> None:
    app.command("rewrite")(rewrite)
