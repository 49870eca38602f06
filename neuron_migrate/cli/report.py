"""`neuron-migrate report`: write one migration record (JSON, Markdown, HTML) of a project.

    neuron-migrate report PATH [--target neuron|accelerator] [--run SCRIPT [--launcher torchrun
        --nproc-per-node N] -- ARGS...] [--output-json F] [--output-markdown F] [--output-html F]

Each `--output-*` option writes one form of the record; `-` as FILE writes it to stdout. With none,
nothing is written and the headline goes to stdout (the JSON record is on stdout only when asked:
`--output-json -`). Otherwise the headline and where each file went go to stderr. Exit 0 once the
record is written (whatever its findings: `neuron-migrate diff` is the gate), 1 when `--run` was
given and the check of the rewritten program did not complete (it did not start, crashed, raised,
or timed out), 2 on errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from neuron_migrate.cli.output import check_destinations, fail_on_errors, note, write_outputs

STDOUT = Path("-")


def _destination(path: Path | None) -> Path | None:
    """`-` is stdout (None for write_outputs)."""
    return None if path == STDOUT else path


def _headline_text(record: dict) -> str:  # type: ignore[type-arg]
    from neuron_migrate.record.views import headline_rows

    width = max(len(k) for k, _ in headline_rows(record))
    return "\n".join(f"{k:<{width}}  {v}" for k, v in headline_rows(record))


@dataclass(frozen=True, slots=True)
class _Options:
    """The parsed options of one `report` invocation."""

    path: Path
    target: str | None
    unsafe_fixes: bool | None
    script: str | None
    script_args: tuple[str, ...]
    launcher: str | None
    nproc_per_node: int | None
    timeout: float | None
    output_json: Path | None
    output_markdown: Path | None
    output_html: Path | None
    use_cache: bool
    config: Path | None
    quiet: bool


def _command_line(o: _Options) -> list[str]:
    """This invocation, rebuilt from the parsed options (the same in-process and from a shell)."""
    argv = ["neuron-migrate", "report", str(o.path)]
    flags: list[tuple[str, object]] = [
        ("--target", o.target), ("--config", o.config), ("--run", o.script), ("--launcher", o.launcher),
        ("--nproc-per-node", o.nproc_per_node), ("--timeout", o.timeout), ("--output-json", o.output_json),
        ("--output-markdown", o.output_markdown), ("--output-html", o.output_html),
    ]
    if o.unsafe_fixes is not None:
        argv.append("--unsafe-fixes" if o.unsafe_fixes else "--no-unsafe-fixes")
    if not o.use_cache:
        argv.append("--no-cache")
    for flag, value in flags:
        if value is not None:
            argv += [flag, str(value)]
    return argv + (["--", *o.script_args] if o.script_args else [])


def _run(o: _Options) -> int:
    from neuron_migrate.config import load_settings
    from neuron_migrate.errors import ConfigError
    from neuron_migrate.pipeline.gate import record_exit_code
    from neuron_migrate.record import html as record_html
    from neuron_migrate.record import markdown as record_markdown
    from neuron_migrate.record.build import RunSpec, build_record, dumps
    from neuron_migrate.ruleset.load import load_pack

    if not o.path.exists():
        raise ConfigError(f"{o.path}: no such file or directory")
    if o.script is None and (o.script_args or o.launcher or o.nproc_per_node is not None or o.timeout is not None):
        raise ConfigError("program arguments, --launcher, --nproc-per-node and --timeout need --run SCRIPT")
    if o.nproc_per_node is not None and not o.launcher:
        raise ConfigError("--nproc-per-node needs --launcher (e.g. --launcher torchrun)")
    outputs = [(o.output_json, "json"), (o.output_markdown, "markdown"), (o.output_html, "html")]
    to_stdout = [kind for path, kind in outputs if path == STDOUT]
    if len(to_stdout) > 1:
        raise ConfigError(f"only one output can go to stdout (-), got {' and '.join(to_stdout)}")
    check_destinations(tuple(path for path, _ in outputs if path not in (None, STDOUT)))
    settings = load_settings(o.path, {"target": o.target, "unsafe-fixes": o.unsafe_fixes}, config_file=o.config)
    run = None
    if o.script is not None:
        run = RunSpec(o.script, o.script_args, o.launcher, o.nproc_per_node, o.timeout)
    argv = _command_line(o)
    record = build_record(o.path, settings, run=run, argv=argv, use_cache=o.use_cache)

    pack = load_pack(settings.extra_rules)
    rendered: list[tuple[Path | None, str]] = []
    if o.output_json is not None:
        rendered.append((_destination(o.output_json), dumps(record)))
    if o.output_markdown is not None:
        rendered.append((_destination(o.output_markdown), record_markdown.render(record, pack)))
    if o.output_html is not None:
        rendered.append((_destination(o.output_html), record_html.render(record, pack)))
    if not rendered:
        typer.echo(_headline_text(record))
        if not o.quiet:
            note("no record written: --output-json FILE, --output-markdown FILE or --output-html FILE keep it "
                 "(- for stdout)")
    else:
        write_outputs([(dest, text, None if o.quiet or dest is None else f"wrote {dest}") for dest, text in rendered])
        if not o.quiet:
            note(_headline_text(record))
    return record_exit_code(run is not None, bool(record["headline"].get("check_completed")))


def register(app: typer.Typer) -> None:
    @app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": False})
    def report(
        ctx: typer.Context,
        path: Path = typer.Argument(..., help="The project directory (or one file)."),
        target: str | None = typer.Option(None, "--target", help="Rewrite target: neuron (default) or accelerator."),
        unsafe_fixes: bool | None = typer.Option(
            None, "--unsafe-fixes/--no-unsafe-fixes", help="Also apply fixes that may change behaviour."
        ),
        run: str | None = typer.Option(
            None, "--run", metavar="SCRIPT",
            help="Run `check` on SCRIPT (relative to PATH) in the rewritten copy; its arguments follow `--`.",
        ),
        launcher: str | None = typer.Option(None, "--launcher", help="Launch the script with this (torchrun)."),
        nproc_per_node: int | None = typer.Option(None, "--nproc-per-node", min=1, help="Processes for --launcher."),
        timeout: float | None = typer.Option(None, "--timeout", min=0.0, help="Seconds before check stops the program."),
        output_json: Path | None = typer.Option(None, "--output-json", dir_okay=False, help="Write the JSON record to FILE."),
        output_markdown: Path | None = typer.Option(None, "--output-markdown", dir_okay=False,
                                                    help="Write the record as Markdown to FILE."),
        output_html: Path | None = typer.Option(None, "--output-html", dir_okay=False,
                                                help="Write the record as a self-contained HTML page to FILE."),
        no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the scan cache."),
        config: Path | None = typer.Option(None, "--config", dir_okay=False, help="Use this config file."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No headline or notes on stderr."),
    ) -> None:
        """Write a migration record: scan, rewrite (on a temporary copy) and check, with versions."""
        code = fail_on_errors(
            lambda: _run(_Options(path, target, unsafe_fixes, run, tuple(ctx.args), launcher, nproc_per_node, timeout,
                                  output_json, output_markdown, output_html, not no_cache, config, quiet))
        )
        raise typer.Exit(code)
