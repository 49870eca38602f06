"""`neuron-migrate scan`: find CUDA-specific code, report it in one or more formats, gate CI.

Streams follow ruff and pip-audit: the report goes to stdout (or `--output`), progress and notes
to stderr. The exit code comes from `neuron_migrate.pipeline.gate` alone, whatever formats are written.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from neuron_migrate.cli.output import check_destinations, fail_on_errors, note, write_atomic, write_outputs

if TYPE_CHECKING:
    from neuron_migrate.config import Settings
    from neuron_migrate.emit import JUnitGrouping
    from neuron_migrate.findings import Report
    from neuron_migrate.ruleset.model import RulePack

# The names of neuron_migrate.emit.FORMATS (not imported here, to keep `--help` light; a test
# checks that the two agree).
FORMAT_NAMES = ("text", "json", "sarif", "junit", "github", "markdown")
EXTRA_OUTPUTS = ("json", "sarif", "junit", "github", "markdown")  # --output-<format> FILE
PROGRESS_MIN_FILES = 200  # below this a scan is quick: no progress bar


def _joined(values: list[str] | None) -> str | None:
    """Repeated and comma-separated option values as one comma-separated string."""
    return ",".join(values) if values else None


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr, shown only on a terminal and only for long scans."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if "bar" not in state:
            if total < PROGRESS_MIN_FILES:
                return
            from rich.console import Console
            from rich.progress import Progress

            state["bar"] = Progress(console=Console(stderr=True), transient=True)
            state["bar"].start()
            state["task"] = state["bar"].add_task("scanning", total=total)
        state["bar"].update(state["task"], completed=done, total=total)

    try:
        yield update
    finally:
        if "bar" in state:
            state["bar"].stop()


def _project_urls() -> dict[str, str]:
    """`Project-URL` entries of the installed metadata by label (lower case), "home" for Home-page."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        meta = metadata("neuron-migrate")
    except PackageNotFoundError:
        return {}
    urls = {"home": meta.get("Home-page") or ""}
    for entry in meta.get_all("Project-URL") or ():
        label, _, url = entry.partition(",")
        if url.strip():
            urls.setdefault(label.strip().lower(), url.strip())
    return {k: v for k, v in urls.items() if v}


def _information_uri() -> str:
    """The project's home page (SARIF `informationUri`): the first Project-URL, else Home-page."""
    urls = _project_urls()
    return next((v for k, v in urls.items() if k != "home"), urls.get("home", ""))


def _rules_uri() -> str:
    """The rules page online (`Project-URL: Rules, ...`): SARIF points each rule at its section."""
    return _project_urls().get("rules", "")


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


def render_outputs(
    report: Report,
    settings: Settings,
    pack: RulePack | None,
    outputs: list[tuple[str, Path | None]],
    *,
    quiet: bool,
    junit_group: JUnitGrouping | None = None,
) -> None:
    """Render every requested format first (pure), then write them: files atomically, the rest
    to stdout. Shared by `scan` and `check`."""
    from neuron_migrate.emit import FORMATS, EmitOptions, JUnitGrouping

    options = EmitOptions(
        pack=pack,
        target=settings.target,
        summary=not quiet,
        junit_grouping=junit_group or JUnitGrouping.RULE,
        information_uri=_information_uri(),
        rules_uri=_rules_uri(),
    )
    write_outputs([
        (dest, FORMATS[fmt](report, options), None if quiet else f"wrote {fmt} report to {dest}")
        for fmt, dest in outputs
    ])


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
) -> int:
    from neuron_migrate.pipeline import baseline, gate
    from neuron_migrate.api import scan_with_settings
    from neuron_migrate.config import load_settings
    from neuron_migrate.emit import JUnitGrouping
    from neuron_migrate.errors import NeuronMigrateError
    from neuron_migrate.pipeline.finalize import build_report
    from neuron_migrate.ruleset.load import load_pack

    try:
        grouping = JUnitGrouping(junit_group)
    except ValueError:
        raise NeuronMigrateError(f"--junit-group: expected rule or file, got {junit_group!r}") from None
    if changed_only:
        if overrides.get("diff-against") is not None:
            raise NeuronMigrateError("use either --diff-against REV or --changed-only, not both")
        overrides = {**overrides, "diff-against": "HEAD"}
    paths = paths or [Path(".")]
    missing = [str(p) for p in paths if not p.exists() and not p.is_symlink()]
    if missing:
        raise NeuronMigrateError(f"no such file or directory: {', '.join(missing)}")
    settings = load_settings(paths[0], overrides, config_file=config_file)
    check_destinations([settings.write_baseline, output, *(dest for _, dest in extra_outputs)])
    if settings.write_baseline is not None:
        if settings.diff_against is not None:
            raise NeuronMigrateError("--write-baseline records every finding: drop --diff-against/--changed-only")
        settings = replace(settings, baseline=None)  # record everything, even what an old baseline hides
    pack = load_pack(settings.extra_rules)
    with _progress(not quiet) as progress:
        result = scan_with_settings(paths, settings, pack, use_cache=use_cache, jobs=jobs, progress=progress,
                                    root=_display_root(paths))
    for warning in result.warnings:
        note(f"warning: {warning}")
    report = build_report(result, settings, pack)
    if settings.write_baseline is not None:
        text = baseline.dumps(baseline.from_findings(report.findings), report.tool_version)
        write_atomic(settings.write_baseline, text)
        if not quiet:
            note(f"wrote baseline of {len(report.findings)} findings to {settings.write_baseline}")
    outputs: list[tuple[str, Path | None]] = [(settings.format, output), *extra_outputs]
    render_outputs(report, settings, pack, outputs, quiet=quiet, junit_group=grouping)
    return gate.exit_code(report, settings)


def register(app: typer.Typer) -> None:
    @app.command(no_args_is_help=False)
    def scan(
        paths: list[Path] | None = typer.Argument(None, help="Files or directories to scan (default: .)."),
        format: str | None = typer.Option(
            None, "--format", "-f", help=f"Report format: {', '.join(FORMAT_NAMES)} (default text)."
        ),
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
            )
        )
        raise typer.Exit(code)
