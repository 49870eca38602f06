"""`neuron-migrate check`: run a program on the emulated neuron device; report fallbacks, recompiles,
placement leaks; gate CI.

    neuron-migrate check train.py -- --epochs 1
    neuron-migrate check explore.ipynb             (code cells in order as one program; findings per cell)
    neuron-migrate check -m package.module
    neuron-migrate check --launcher torchrun --nproc-per-node 2 train.py
    neuron-migrate check --pytest tests/
    neuron-migrate check --from-records DIR        (report records written earlier)

Exit codes as in scan: 0 pass, 1 findings fail the gate (a user exception is an NM912 error
finding, so it fails by default), 2 usage/config error or the program could not be started
(missing file or module, syntax error in the script, emulator unavailable).
The program's own output goes to stderr so that a report on stdout stays parseable.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer

from neuron_migrate.cli.output import check_destinations, deliver, fail_on_errors, gate
from neuron_migrate.config import REPORT_FORMATS

EXTRA_OUTPUTS = ("json", "sarif", "junit", "github", "markdown")


def _split_dashes(args: list[str]) -> tuple[list[str], list[str]]:
    """(before the first `--`, after it): click keeps the `--` once a positional was seen
    (interspersed options are off, so nothing after the script is parsed as ours)."""
    if "--" not in args:
        return args, []
    i = args.index("--")
    return args[:i], args[i + 1:]


def _misplaced(tokens: list[str], ours: frozenset[str], what: str) -> None:
    """A usage error for `tokens` found between the program and `--`: our options there would
    silently become the program's (`check --pytest tests/ --format json`)."""
    from neuron_migrate.errors import NeuronMigrateError

    for token in tokens:
        if token.split("=", 1)[0] in ours:
            raise NeuronMigrateError(f"{token}: a neuron-migrate option after {what}: put it before {what} "
                                     "(the program's own arguments go after `--`)")
    if tokens:
        raise NeuronMigrateError(f"{tokens[0]}: the arguments of {what} go after `--` "
                                 f"(neuron-migrate check [OPTIONS] {what} -- {' '.join(tokens)})")


def _program_args(args: list[str], ours: frozenset[str], what: str) -> tuple[str, ...]:
    """The program's own arguments: only after `--` (`check train.py -- --steps 6`)."""
    before, after = _split_dashes(args)
    _misplaced(before, ours, what)
    return tuple(after)


def _pytest_args(args: list[str], ours: frozenset[str]) -> tuple[str, ...]:
    """pytest's arguments: test paths, then its options after `--` (`check --pytest tests/ -- -k
    model`); an option before `--` is a usage error, ours or pytest's."""
    before, after = _split_dashes(args)
    _misplaced([t for t in before if t.startswith("-")], ours, "the test paths")
    return (*before, *after)


def run_check(
    args: list[str],
    *,
    module: str | None,
    pytest_mode: bool,
    launcher: str | None,
    nproc_per_node: int,
    timeout: float | None,
    from_records: Path | None,
    keep_records: Path | None,
    root: Path | None,
    fail_on: str | None,
    overrides: dict[str, Any],
    config_file: Path | None,
    output: Path | None,
    extra_outputs: list[tuple[str, Path]],
    quiet: bool,
    our_options: frozenset[str] = frozenset(),
    parity: tuple[float, float, tuple[str, ...]] | None = None,
) -> int:
    from neuron_migrate import api
    from neuron_migrate.errors import NeuronMigrateError
    from neuron_migrate.pipeline.gate import parse_fail_on
    from neuron_migrate.ruleset.load import load_pack

    # The program's own arguments come only after `--` (`check train.py -- --steps 6`).
    script = None
    if module:
        program_args = _program_args(args, our_options, f"-m {module}")
    elif pytest_mode:
        program_args = _pytest_args(args, our_options)
    elif from_records:
        program_args = tuple(args)  # check_program refuses a program here
    else:
        args = args[1:] if args[:1] == ["--"] else args
        script = args[0] if args else None
        program_args = _program_args(args[1:], our_options, "the script")
    api.check_program(script, program_args, module=module, pytest=pytest_mode, from_records=from_records,
                      launcher=launcher, nproc_per_node=nproc_per_node)  # usage errors first
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise NeuronMigrateError(f"--timeout must be a finite, positive number of seconds (got {timeout:g})")
    compare = None
    if parity is not None:
        if from_records is not None or pytest_mode:
            raise NeuronMigrateError("--parity runs one program twice and compares its values: give a script "
                                     "or -m MODULE (not --from-records or --pytest)")
        if not all(math.isfinite(t) and t >= 0 for t in parity[:2]):
            raise NeuronMigrateError("--parity-rtol and --parity-atol must be finite and not negative")
        compare = api.Parity(*parity)
    check_destinations([output, *(dest for _, dest in extra_outputs)])  # before the program runs
    spec = parse_fail_on(fail_on, load_pack())
    settings, pack = api.check_settings(script, root=root, overrides={**overrides, "fail-on": spec.severity},
                                        config=config_file)
    settings = replace(settings, fail_on_kinds=spec.kinds)
    report = api.check(script, program_args, module=module, pytest=pytest_mode, from_records=from_records,
                       launcher=launcher, nproc_per_node=nproc_per_node, timeout=timeout,
                       keep_records=keep_records, root=root, settings=settings, stdout=sys.stderr, parity=compare)
    deliver(report, settings, pack, [(settings.format, output), *extra_outputs], quiet=quiet)
    return gate(report, settings, pack, quiet=quiet)


def register(app: typer.Typer) -> None:
    @app.command(context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})
    def check(
        ctx: typer.Context,
        args: list[str] | None = typer.Argument(None, help="SCRIPT [ARGS...] (or the args of -m MODULE / --pytest)."),
        module: str | None = typer.Option(None, "--module", "-m", help="Run a module, as python -m does."),
        pytest_mode: bool = typer.Option(False, "--pytest", help="Run pytest (ARGS are pytest's) with the plugin."),
        launcher: str | None = typer.Option(None, "--launcher", help="torchrun: one process per rank."),
        nproc_per_node: int = typer.Option(1, "--nproc-per-node", min=1, help="Processes for --launcher torchrun."),
        timeout: float | None = typer.Option(None, "--timeout", help="Stop the program after SECONDS of user code."),
        from_records: Path | None = typer.Option(None, "--from-records", file_okay=False,
                                                 help="Report the records in DIR instead of running anything."),
        keep_records: Path | None = typer.Option(None, "--keep-records", file_okay=False,
                                                 help="Keep the run's records in DIR."),
        root: Path | None = typer.Option(None, "--root", file_okay=False,
                                         help="Project root that finding paths are relative to."),
        format: str | None = typer.Option(None, "--format", "--output-format", "-f", metavar="FORMAT",
                                          help=f"Report format: {', '.join(REPORT_FORMATS)} (default text)."),
        output: Path | None = typer.Option(None, "--output", "-o", dir_okay=False, help="Write the report to FILE."),
        output_json: Path | None = typer.Option(None, "--output-json", dir_okay=False, help="Also write JSON to FILE."),
        output_sarif: Path | None = typer.Option(None, "--output-sarif", dir_okay=False, help="Also write SARIF."),
        output_junit: Path | None = typer.Option(None, "--output-junit", dir_okay=False, help="Also write JUnit XML."),
        output_github: Path | None = typer.Option(None, "--output-github", dir_okay=False,
                                                  help="Also write GitHub annotations."),
        output_markdown: Path | None = typer.Option(None, "--output-markdown", dir_okay=False,
                                                    help="Also write a Markdown summary."),
        select: list[str] | None = typer.Option(None, "--select", help="Only these codes or prefixes."),
        ignore: list[str] | None = typer.Option(None, "--ignore", help="Skip these codes or prefixes."),
        extend_select: list[str] | None = typer.Option(None, "--extend-select",
                                                       help="Add these codes or prefixes to the selection."),
        extend_ignore: list[str] | None = typer.Option(None, "--extend-ignore",
                                                       help="Skip these too, keeping the configured ignore list."),
        fail_on: str | None = typer.Option(
            None, "--fail-on",
            help="Severity (error, warning, info, never) and/or kinds: fallback, host-sync, recompile, "
                 "graph-break, placement, dtype, parity, exception (comma-separated)."),
        max_recompiles: int | None = typer.Option(None, "--max-recompiles", min=0, help="Recompiles allowed."),
        max_fallback_ops: int | None = typer.Option(None, "--max-fallback-ops", min=0,
                                                    help="Distinct CPU-fallback ops allowed."),
        allow_ops: list[str] | None = typer.Option(None, "--allow-ops", help="Known fallback ops: aten::x,aten::y."),
        exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even with findings."),
        baseline: Path | None = typer.Option(None, "--baseline", dir_okay=False, help="Only findings not in FILE."),
        write_baseline: Path | None = typer.Option(None, "--write-baseline", dir_okay=False,
                                                   help="Record every current finding in FILE (then exit 0)."),
        config: Path | None = typer.Option(None, "--config", dir_okay=False, help="Use this config file."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="Findings only: no summary or notes."),
        parity: bool = typer.Option(False, "--parity",
                                    help="Also run a CPU reference and compare the values read back (NM915)."),
        parity_rtol: float = typer.Option(1e-3, "--parity-rtol", help="Relative tolerance of --parity."),
        parity_atol: float = typer.Option(1e-5, "--parity-atol", help="Absolute tolerance of --parity."),
        parity_exclude: list[str] | None = typer.Option(None, "--parity-exclude", metavar="FILE:LINE",
                                                        help="A line whose values --parity does not compare."),
    ) -> None:
        """Run a program on the emulated neuron device; exit 0 (pass), 1 (gate failed) or 2 (error)."""
        overrides: dict[str, Any] = {
            "format": format,
            "select": ",".join(select) if select else None,
            "ignore": ",".join(ignore) if ignore else None,
            "extend-select": ",".join(extend_select) if extend_select else None,
            "extend-ignore": ",".join(extend_ignore) if extend_ignore else None,
            "exit-zero": True if exit_zero else None,
            "baseline": baseline,
            "write-baseline": write_baseline,
            "max-recompiles": max_recompiles,
            "max-fallback-ops": max_fallback_ops,
            "allow-ops": ",".join(allow_ops) if allow_ops else None,
        }
        extra = [
            (fmt, dest)
            for fmt, dest in zip(EXTRA_OUTPUTS, (output_json, output_sarif, output_junit, output_github,
                                                 output_markdown), strict=True)
            if dest is not None
        ]

        code = fail_on_errors(lambda: run_check(
            list(args or []), module=module, pytest_mode=pytest_mode, launcher=launcher,
            nproc_per_node=nproc_per_node, timeout=timeout, from_records=from_records,
            keep_records=keep_records, root=root, fail_on=fail_on, overrides=overrides,
            config_file=config, output=output, extra_outputs=extra, quiet=quiet,
            parity=(parity_rtol, parity_atol, tuple(parity_exclude or ())) if parity else None,
            our_options=frozenset(o for p in ctx.command.params for o in (*p.opts, *p.secondary_opts)
                                  if o.startswith("-")),
        ))
        raise typer.Exit(code)
