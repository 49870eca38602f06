"""`neuron-migrate scan`: find CUDA-specific code, report it in one or more formats, gate CI.

Streams follow ruff and pip-audit: the report goes to stdout (or `--output`), progress and notes
to stderr. The exit code comes from `neuron_migrate.pipeline.gate` alone, whatever formats are written.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from neuron_migrate.cli.console import ProgressBars
from neuron_migrate.cli.output import check_destinations, choose, deliver, fail_on_errors, gate
from neuron_migrate.config import REPORT_FORMATS

if TYPE_CHECKING:
    from neuron_migrate.findings import Report

EXTRA_OUTPUTS = ("json", "sarif", "junit", "github", "markdown")  # --output-<format> FILE


def _joined(values: list[str] | None) -> str | None:
    """Repeated and comma-separated option values as one comma-separated string."""
    return ",".join(values) if values else None


def _display_root(paths: list[Path]) -> Path | None:
    """The working directory when it holds every path (as ruff shows paths): then `scan src` and
    `scan .` name files alike, so baselines, annotations and SARIF URIs agree across invocations."""
    cwd = os.getcwd()
    if os.path.dirname(cwd) == cwd:  # the filesystem root: keep the scanned directory as root
        return None
    inside = [os.path.abspath(p) for p in paths]
    if all(p == cwd or p.startswith(cwd.rstrip(os.sep) + os.sep) for p in inside):
        return Path(cwd)
    return None


def run_scan(
    paths: list[Path],
    overrides: dict[str, Any],
    *,
    config_file: Path | None,
    output: Path | None,
    extra_outputs: list[tuple[str, Path]],
    use_cache: bool,
    jobs: int | None,
    quiet: bool,
    changed_only: bool = False,
    junit_group: str = "rule",
    stdin_filename: Path | None = None,
    show_source: bool = False,
    statistics: bool = False,
) -> int:
    from neuron_migrate import api
    from neuron_migrate.emit import JUnitGrouping
    from neuron_migrate.errors import NeuronMigrateError

    grouping = JUnitGrouping(choose("--junit-group", junit_group, tuple(JUnitGrouping)))
    if changed_only:
        if overrides.get("diff-against") is not None:
            raise NeuronMigrateError("use either --diff-against REV or --changed-only, not both")
        overrides = {**overrides, "diff-against": "HEAD"}
    stdin = stdin_filename is not None or [str(p) for p in paths] == ["-"]
    if stdin and [str(p) for p in paths] not in ([], ["-"]):
        raise NeuronMigrateError("source from stdin (`-` or --stdin-filename) is scanned alone: drop the other paths")
    paths = paths or [Path(".")]
    missing = [str(p) for p in paths if not stdin and not p.exists() and not p.is_symlink()]
    if missing:
        raise NeuronMigrateError(f"no such file or directory: {', '.join(missing)}")
    settings, pack = api.load(stdin_filename or paths[0], overrides, config=config_file)
    check_destinations([settings.write_baseline, output, *(dest for _, dest in extra_outputs)])
    if settings.write_baseline is not None:
        if settings.diff_against is not None:
            raise NeuronMigrateError("--write-baseline records every finding: drop --diff-against/--changed-only")
        settings = replace(settings, baseline=None)  # record everything, even what an old baseline hides
    report: Report
    if stdin:
        report = api.scan_text(sys.stdin.buffer.read(), stdin_filename, settings=settings)
    else:
        with ProgressBars(not quiet) as bars:
            report = api.scan(paths, settings=settings, use_cache=use_cache, jobs=jobs, progress=bars.stage("scanning"),
                              root=_display_root(paths))
    with api.gc_paused():  # rendering tens of thousands of findings makes no garbage cycles
        deliver(report, settings, pack, [(settings.format, output), *extra_outputs], quiet=quiet, junit_group=grouping,
                show_source=show_source, statistics=statistics)
    return gate(report, settings, pack, quiet=quiet)


def register(app: typer.Typer) -> None:
    @app.command(no_args_is_help=False)
    def scan(
        paths: list[Path] | None = typer.Argument(
            None, metavar="PATH", show_default=False,
            help="Files or directories to scan (default: .); `-` reads one file's source from stdin."),
        format: str | None = typer.Option(
            None, "--format", "--output-format", "-f", metavar="FORMAT",
            help=f"Report format: {', '.join(REPORT_FORMATS)} (default text).",
        ),
        show_source: bool = typer.Option(False, "--show-source",
                                         help="Text: show each finding's source line with a caret under it."),
        statistics: bool = typer.Option(False, "--statistics",
                                        help="Text: count findings per code instead of listing them."),
        stdin_filename: Path | None = typer.Option(
            None, "--stdin-filename", metavar="FILENAME", dir_okay=False,
            help="Read the source from stdin and report it as FILENAME (config found from it)."),
        output: Path | None = typer.Option(
            None, "--output", "-o", help="Write the report to FILE instead of stdout.", dir_okay=False
        ),
        output_json: Path | None = typer.Option(None, "--output-json", help="Also write JSON to FILE.", dir_okay=False),
        output_sarif: Path | None = typer.Option(None, "--output-sarif", help="Also write SARIF 2.1.0 to FILE.",
                                          dir_okay=False),
        output_junit: Path | None = typer.Option(None, "--output-junit", help="Also write JUnit XML to FILE.",
                                          dir_okay=False),
        output_github: Path | None = typer.Option(None, "--output-github", dir_okay=False,
                                           help="Also write GitHub workflow annotations to FILE."),
        output_markdown: Path | None = typer.Option(None, "--output-markdown", dir_okay=False,
                                             help="Also write a Markdown summary (PR comment) to FILE."),
        junit_group: str = typer.Option("rule", "--junit-group", help="JUnit test cases per rule or per file."),
        select: list[str] | None = typer.Option(None, "--select", help="Only these codes or prefixes (NM1,NM201)."),
        ignore: list[str] | None = typer.Option(None, "--ignore", help="Skip these codes or prefixes."),
        extend_select: list[str] | None = typer.Option(None, "--extend-select",
                                                       help="Add these codes or prefixes to the selection."),
        extend_ignore: list[str] | None = typer.Option(None, "--extend-ignore",
                                                       help="Skip these too, keeping the configured ignore list."),
        fail_on: str = typer.Option(
            None, "--fail-on", help="Exit 1 on findings at or above: error (default), warning, info, never."
        ),
        exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even with findings (errors still exit 2)."),
        target: str | None = typer.Option(None, "--target", help="Fix shown in SARIF/summary: neuron or accelerator."),
        baseline: Path | None = typer.Option(None, "--baseline", help="Report and fail only on findings not in FILE.",
                                      dir_okay=False),
        write_baseline: Path | None = typer.Option(None, "--write-baseline", dir_okay=False,
                                            help="Record every current finding in FILE (then exit 0)."),
        diff_against: str | None = typer.Option(None, "--diff-against", metavar="REV",
                                         help="Only findings on lines changed since git revision REV."),
        changed_only: bool = typer.Option(False, "--changed-only", help="Same as --diff-against HEAD."),
        include: list[str] | None = typer.Option(None, "--include", help="Only paths matching these globs."),
        exclude: list[str] | None = typer.Option(None, "--exclude", help="Skip paths matching these globs."),
        extra_rules: list[Path] | None = typer.Option(None, "--extra-rules", help="Extra rule YAML files."),
        respect_gitignore: bool | None = typer.Option(None, "--respect-gitignore/--no-respect-gitignore",
                                               help="Skip files that .gitignore ignores (default on)."),
        cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Where to keep the scan cache."),
        no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the cache."),
        config: Path | None = typer.Option(None, "--config", help="Use this config file instead of discovering one.",
                                    dir_okay=False),
        jobs: int | None = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes (default: all cores)."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="Findings only: no summary, progress or notes."),
    ) -> None:
        """Report CUDA-specific code; exit 0 (clean), 1 (findings at or above --fail-on) or 2 (error)."""
        overrides: dict[str, Any] = {
            "format": format,
            "select": _joined(select),
            "ignore": _joined(ignore),
            "extend-select": _joined(extend_select),
            "extend-ignore": _joined(extend_ignore),
            "fail-on": fail_on,
            "exit-zero": True if exit_zero else None,
            "target": target,
            "baseline": baseline,
            "write-baseline": write_baseline,
            "diff-against": diff_against,
            "include": _joined(include),
            "exclude": _joined(exclude),
            "extra-rules": [str(p) for p in extra_rules] if extra_rules else None,
            "respect-gitignore": respect_gitignore,
            "cache-dir": cache_dir,
        }
        extra = [
            (fmt, dest)
            for fmt, dest in zip(
                EXTRA_OUTPUTS, (output_json, output_sarif, output_junit, output_github, output_markdown),
                strict=True,
            )
            if dest is not None
        ]
        code = fail_on_errors(
            lambda: run_scan(
                paths or [],
                overrides,
                config_file=config,
                output=output,
                extra_outputs=extra,
                use_cache=not no_cache,
                jobs=jobs,
                quiet=quiet,
                changed_only=changed_only,
                junit_group=junit_group,
                stdin_filename=stdin_filename,
                show_source=show_source,
                statistics=statistics,
            )
        )
        raise typer.Exit(code)
