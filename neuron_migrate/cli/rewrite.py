"""`neuron-migrate rewrite`: show (default) or write (`--apply`) the fixes of scan's findings.

The diff goes to stdout (plain when piped, so `rewrite . > fix.patch` works for Python files);
the summary of what changed and what still needs a person goes to stderr. With `--format json`
stdout holds the JSON report instead (remaining findings; per-file outcomes and diffs in
`extras.files`). Exit codes come from `neuron_migrate.pipeline.gate` over the findings still in the code.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from neuron_migrate.cli.output import fail_on_errors

_FORMATS = ("text", "json")


def _use_colour(stream) -> bool:  # type: ignore[no-untyped-def]
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return bool(getattr(stream, "isatty", lambda: False)())


def rewrite(
    paths: list[Path] = typer.Argument(..., help="Files or directories to rewrite.", show_default=False),
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
    fail_on: str | None = typer.Option(
        None, "--fail-on", help="Exit 1 while findings at or above this remain: error, warning, info, never."
    ),
    diff: bool | None = typer.Option(
        None, "--diff/--no-diff", help="Print the unified diff. [default: on without --apply, off with it]"
    ),
    output_format: str = typer.Option("text", "--format", help="text or json."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the scan cache."),
    config: Path | None = typer.Option(None, "--config", help="Use this config file instead of discovering one."),
) -> None:
    """Rewrite CUDA code for Neuron: show the diff, or write it with --apply."""
    code = fail_on_errors(
        lambda: _run(paths, apply, target, unsafe_fixes, allow_dirty, select, ignore, fail_on, diff,
                     output_format, no_cache, config)
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
) -> int:
    from neuron_migrate.config import load_settings
    from neuron_migrate.errors import ConfigError
    from neuron_migrate.pipeline.gate import exit_code
    from neuron_migrate.rewrite.api import rewrite_paths
    from neuron_migrate.emit.rewrite_text import colour_diff, summary_text

    if output_format not in _FORMATS:
        raise ConfigError(f"command line option --format: expected one of {', '.join(_FORMATS)}, got {output_format!r}")
    missing = [str(p) for p in paths if not p.exists() and not p.is_symlink()]
    if missing:
        raise ConfigError(f"no such file or directory: {', '.join(missing)}")
    overrides = {
        "target": target,
        "unsafe-fixes": unsafe_fixes,
        "select": ",".join(select) if select else None,
        "ignore": ",".join(ignore) if ignore else None,
        "fail-on": fail_on,
    }
    settings = load_settings(paths[0], overrides, config_file=config)
    result = rewrite_paths(
        paths,
        settings,
        apply=apply,
        unsafe=settings.unsafe_fixes,
        allow_dirty=allow_dirty,
        target=settings.target,
        use_cache=not no_cache,
    )
    report = result.report()
    if output_format == "json":
        from neuron_migrate.emit import FORMATS, EmitOptions

        sys.stdout.write(FORMATS["json"](report, EmitOptions(target=settings.target)))
    else:
        show_diff = (not apply) if diff is None else diff
        if show_diff:
            text = "".join(o.diff for o in result.files if o.diff)
            sys.stdout.write(colour_diff(text) if _use_colour(sys.stdout) else text)
            sys.stdout.flush()
        for warning in result.warnings:
            typer.echo(f"neuron-migrate: warning: {warning}", err=True)
        typer.echo(summary_text(result), err=True, nl=False)
    return exit_code(report, settings)


def register(app: typer.Typer) -> None:
    app.command("rewrite")(rewrite)
