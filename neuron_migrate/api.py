"""The application layer: `scan`, `rewrite` and `check` of a project, as the CLI and the migration
record run them.

    from neuron_migrate.api import scan, rewrite, check

    report = scan(["src"])                      # the Report `neuron-migrate scan src` renders
    result = rewrite(["src"], apply=False)      # result.report(): what `rewrite --format json` prints
    report = check("train.py", args=["--steps", "2"])

Settings are found as the CLI finds them (`[tool.neuron-migrate]` in pyproject.toml, or
`.neuron-migrate.toml`, above the first path; then NEURON_MIGRATE_* variables), with `overrides`
(kebab-case keys, as on the command line) on top; pass `settings` to skip discovery. Every report
went through the same pipeline: inline suppressions, select/ignore, per-file-ignores, severity
overrides, baseline and diff filter. Importing this module is cheap and never imports torch; only
`check` needs it (in the child process that runs the program).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from os import PathLike
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neuron_migrate.check.runner import Program
    from neuron_migrate.config import Settings
    from neuron_migrate.findings import Finding, Report, Target
    from neuron_migrate.rewrite.engine import RewriteResult
    from neuron_migrate.ruleset.model import RulePack
    from neuron_migrate.scan.result import ScanResult

__all__ = ["check", "check_program", "check_settings", "gc_paused", "load", "rewrite", "rewrite_paths", "rewrite_text",
           "scan", "scan_text", "scan_with_settings"]

PathArg = str | PathLike[str]
Progress = Callable[[int, int], None]


def load(start: PathArg, overrides: Mapping[str, Any] | None = None, *,
         config: PathArg | None = None) -> tuple[Settings, RulePack]:
    """The settings of a run over `start` (config discovered from it) and the rule pack they name."""
    from neuron_migrate.config import load_settings
    from neuron_migrate.ruleset.load import load_pack

    settings = load_settings(Path(start), overrides, config_file=Path(config) if config is not None else None)
    return settings, load_pack(settings.extra_rules)


def _resolve(start: Path, settings: Settings | None, overrides: Mapping[str, Any] | None,
             config: PathArg | None) -> tuple[Settings, RulePack]:
    if settings is None:
        return load(start, overrides, config=config)
    from neuron_migrate.ruleset.load import load_pack

    return settings, load_pack(settings.extra_rules)


def existing(paths: Sequence[PathArg]) -> list[Path]:
    """`paths` as Paths (default: the working directory); NeuronMigrateError naming any missing."""
    from neuron_migrate.errors import NeuronMigrateError

    found = [Path(p) for p in paths] or [Path(".")]
    missing = [str(p) for p in found if not p.exists() and not p.is_symlink()]
    if missing:
        raise NeuronMigrateError(f"no such file or directory: {', '.join(missing)}")
    return found


# --- scan -----------------------------------------------------------------------------------------


def scan_with_settings(
    paths: Sequence[Path],
    settings: Settings,
    pack: RulePack,
    *,
    use_cache: bool = True,
    jobs: int | None = None,
    progress: Progress | None = None,
    root: Path | None = None,
    cached_fixes: bool = True,
) -> ScanResult:
    """The raw scan (findings before the pipeline) with the file-selection and cache settings of a
    run (include, exclude, respect-gitignore, cache-dir). `rewrite` passes `cached_fixes=False`:
    edits it writes come from the source, never from the cache file."""
    from neuron_migrate.scan.engine import scan_paths

    return scan_paths(
        paths,
        pack,
        include=settings.include,
        exclude=settings.exclude,
        respect_gitignore=settings.respect_gitignore,
        use_cache=use_cache,
        cache_dir=settings.cache_dir,
        jobs=jobs,
        progress=progress,
        root=root,
        cached_fixes=cached_fixes,
    )


def scan(
    paths: Sequence[PathArg] = (".",),
    *,
    settings: Settings | None = None,
    overrides: Mapping[str, Any] | None = None,
    config: PathArg | None = None,
    use_cache: bool = True,
    jobs: int | None = None,
    progress: Progress | None = None,
    root: PathArg | None = None,
) -> Report:
    """Scan files and directories: the Report `neuron-migrate scan PATHS` renders. Its `warnings`
    are the notes the CLI prints on stderr (an unreadable ignore file, ...)."""
    from neuron_migrate.pipeline.finalize import build_report

    found = existing(paths)
    settings, pack = _resolve(found[0], settings, overrides, config)
    with gc_paused():
        result = scan_with_settings(found, settings, pack, use_cache=use_cache, jobs=jobs, progress=progress,
                                    root=Path(root) if root is not None else None)
        return replace(build_report(result, settings, pack), warnings=tuple(result.warnings))


def gc_paused() -> AbstractContextManager[None]:
    """The cyclic collector off for a block that builds many objects and no garbage cycles (a
    caller rendering a large report); see `scan.engine.gc_paused`."""
    from neuron_migrate.scan.engine import gc_paused as paused

    return paused()


def stdin_name(filename: PathArg | None, cwd: Path | None = None) -> str:
    """The path a source read from stdin is reported under: `filename` relative to the working
    directory when inside it, else its base name (as `scan /elsewhere/x.py` names it); `stdin.py`
    without one (scan needs a suffix to know Python from a notebook)."""
    import os

    if filename is None or not str(filename):
        return "stdin.py"
    cwd = cwd or Path.cwd()
    absolute = os.path.normpath(os.path.join(cwd, filename))
    rel = os.path.relpath(absolute, cwd)
    if rel.startswith(os.pardir):
        rel = os.path.basename(absolute)
    return rel.replace(os.sep, "/")


def scan_text(
    source: str | bytes,
    filename: PathArg | None = None,
    *,
    settings: Settings | None = None,
    overrides: Mapping[str, Any] | None = None,
    config: PathArg | None = None,
) -> Report:
    """Scan one file's text (an editor's buffer, a pipe): the Report `neuron-migrate scan -
    --stdin-filename FILENAME` renders, its findings under `stdin_name(filename)`. Settings are
    discovered from FILENAME's directory, as for the file itself; nothing is written beside it."""
    import tempfile

    from neuron_migrate.pipeline.finalize import build_report

    name = stdin_name(filename)
    settings, pack = _resolve(Path(filename) if filename else Path("."), settings, overrides, config)
    with tempfile.TemporaryDirectory(prefix="neuron-migrate-stdin-") as tmp:
        path = Path(tmp, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(source.encode("utf-8") if isinstance(source, str) else source)
        # Only the named file: include/exclude globs and .gitignore choose among a tree's files.
        result = scan_with_settings([path], replace(settings, include=(), exclude=(), respect_gitignore=False),
                                    pack, use_cache=False, jobs=1, root=Path(tmp))
    return replace(build_report(result, settings, pack), warnings=tuple(result.warnings))


# --- rewrite --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rescan:
    """What `scan` reports on one file's rewritten text, kept in memory: its analysis, inline
    suppressions and the pipeline of `settings` (selection, per-file ignores, baseline, diff
    filter). `rewrite` plans another round of fixes from it (engine.rewrite_text)."""

    root: str
    settings: Settings

    def __reduce__(self) -> tuple[type[Rescan], tuple[str, Settings]]:
        # Worker processes get it pickled; a read-only mapping (MappingProxyType) cannot be.
        plain = replace(self.settings, severity=dict(self.settings.severity), sources=dict(self.settings.sources))
        return Rescan, (self.root, plain)

    def __call__(self, path: str, text: str) -> list[Finding]:
        from neuron_migrate.pipeline.finalize import finalize
        from neuron_migrate.pipeline.suppress import apply_directives
        from neuron_migrate.ruleset.load import load_pack
        from neuron_migrate.scan.analyze import analyze_source
        from neuron_migrate.scan.directives import find_directives
        from neuron_migrate.scan.project import ProjectFacts, conditional_codes, cuda_net, keep_findings

        pack = load_pack(self.settings.extra_rules)
        if path.endswith(".ipynb"):  # each code cell, as scan reads a notebook
            from neuron_migrate.scan.notebook import code_cells, with_cells_above

            cells = code_cells(text)
            found = [f for c, prelude in with_cells_above(cells)
                     for f in analyze_source(c.source, path, pack, cell=c.index, prelude=prelude)]
            directives = [d for c in cells for d in find_directives(c.source, c.index)]
        else:
            found, directives = analyze_source(text, path, pack), find_directives(text)
        if needs := conditional_codes(pack):
            found = keep_findings(found, path, ProjectFacts(self.root), needs, *cuda_net(pack))
        kept = apply_directives(path, found, directives, pack).kept
        return list(finalize("scan", self.root, kept, self.settings, pack).findings)


def rewrite_paths(
    paths: Sequence[Path],
    settings: Settings,
    *,
    apply: bool,
    unsafe: bool,
    allow_dirty: bool,
    target: Target,
    use_cache: bool = True,
    jobs: int | None = None,
    progress: Progress | None = None,
    fix_progress: Progress | None = None,
    root: Path | None = None,
    write_read_only: bool = False,
) -> RewriteResult:
    """Scan `paths` with `settings`, then fix what the resulting report holds (after selection,
    per-file ignores, inline suppressions, baseline and diff filter: what `scan` would show).
    The diffs name files relative to `root` when given, else to their git work tree, else to the
    working directory (`rewrite_findings`)."""
    from neuron_migrate.pipeline.finalize import build_report
    from neuron_migrate.rewrite.engine import FileStatus, RewriteResult, rewrite_findings
    from neuron_migrate.ruleset.load import load_pack

    start = time.perf_counter()
    pack = load_pack(settings.extra_rules)
    # Fix edits are written into sources: never take them from the cache file (scan.cache).
    scanned = scan_with_settings(paths, settings, pack, use_cache=use_cache, jobs=jobs, progress=progress,
                                 root=root, cached_fixes=False)
    report = build_report(scanned, settings, pack)
    outcomes = rewrite_findings(
        Path(scanned.root), report.findings, target=target, unsafe=unsafe, apply=apply, allow_dirty=allow_dirty,
        jobs=jobs, progress=fix_progress, patch_root=root, write_read_only=write_read_only,
        rescan=Rescan(scanned.root, settings),
    )
    rescanned = None
    if apply and any(o.status is FileStatus.CHANGED for o in outcomes):
        # Only the written files miss the cache, so this costs one analysis of each of them.
        after = scan_with_settings(paths, settings, pack, use_cache=use_cache, jobs=jobs, root=root)
        rescanned = build_report(after, settings, pack).findings
    return RewriteResult(
        root=scanned.root,
        target=target,
        apply=apply,
        unsafe=unsafe,
        files=outcomes,
        findings=tuple(report.findings),
        files_scanned=scanned.files_scanned,
        duration_s=time.perf_counter() - start,
        warnings=tuple(scanned.warnings),
        pack_version=pack.version,
        rescanned=rescanned,
    )


def rewrite(
    paths: Sequence[PathArg] = (".",),
    *,
    apply: bool = False,
    allow_dirty: bool = False,
    settings: Settings | None = None,
    overrides: Mapping[str, Any] | None = None,
    config: PathArg | None = None,
    use_cache: bool = True,
    jobs: int | None = None,
    progress: Progress | None = None,
    fix_progress: Progress | None = None,
    write_read_only: bool = False,
) -> RewriteResult:
    """Rewrite (or, without `apply`, plan the rewrite of) what a scan of `paths` reports, with the
    target and `unsafe-fixes` of the settings. `result.report()` is the Report
    `neuron-migrate rewrite --format json` prints; the result also holds each file's diff and
    outcome, which the text output shows (a Report of findings does not hold them). `progress` hears
    (files scanned, files to scan), `fix_progress` (files fixed, files with fixes). Read-only files
    are refused unless `write_read_only`."""
    found = existing(paths)
    settings, _ = _resolve(found[0], settings, overrides, config)
    return rewrite_paths(found, settings, apply=apply, unsafe=settings.unsafe_fixes, allow_dirty=allow_dirty,
                         target=settings.target, use_cache=use_cache, jobs=jobs, progress=progress,
                         fix_progress=fix_progress, write_read_only=write_read_only)


@dataclass(frozen=True, slots=True)
class TextRewrite:
    """`rewrite_text`'s answer: the run (diffs and outcome name the file as `stdin_name` does) and
    the rewritten source, the input's bytes where nothing was fixed."""

    result: RewriteResult
    source: bytes


def rewrite_text(
    source: str | bytes,
    filename: PathArg | None = None,
    *,
    settings: Settings | None = None,
    overrides: Mapping[str, Any] | None = None,
    config: PathArg | None = None,
    apply: bool = False,
) -> TextRewrite:
    """Rewrite one file's text (an editor's buffer, a pipe), as `neuron-migrate rewrite -
    --stdin-filename FILENAME` does: the same scan, pipeline and fixes as for the file on disk,
    with the settings discovered from FILENAME's directory. Nothing is written beside FILENAME: the
    text is fixed in a private temporary directory and read back. `apply` says what the report
    counts as left: with it, the findings of the returned source; without it (a dry run, the diff
    shown), all of them."""
    import tempfile

    name = stdin_name(filename)
    settings, _ = _resolve(Path(filename) if filename else Path("."), settings, overrides, config)
    original = source.encode("utf-8") if isinstance(source, str) else source
    with tempfile.TemporaryDirectory(prefix="neuron-migrate-stdin-") as tmp:
        path = Path(tmp, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(original)
        # Only the named file (globs and .gitignore choose among a tree's files); the temporary
        # directory is outside any git work tree, so the dirty-tree guard has nothing to protect.
        result = rewrite_paths([path], replace(settings, include=(), exclude=(), respect_gitignore=False),
                               apply=True, unsafe=settings.unsafe_fixes, allow_dirty=True, target=settings.target,
                               use_cache=False, jobs=1, root=Path(tmp))
        fixed = path.read_bytes()
    return TextRewrite(replace(result, root=".", apply=apply), fixed)


# --- check ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Parity:
    """`check --parity`: tolerances, and the lines whose values are not compared."""

    rtol: float = 1e-3
    atol: float = 1e-5
    exclude: tuple[str, ...] = ()  # FILE:LINE


def notebook_lines(report: Report) -> dict[str, dict[int, list[int]]]:
    """For the report's notebook findings: notebook -> cell -> the .ipynb file line of each cell line
    (what SARIF needs to point into the file; see `EmitOptions.notebook_lines`)."""
    from neuron_migrate.scan.notebook import file_lines

    return file_lines(Path(report.root), {f.path for f in report.findings if f.cell is not None})


def _project_root(explicit: PathArg | None, script: Path | None, cwd: Path) -> Path:
    """Findings' paths are relative to the project root: `root`, else the working directory when
    it holds the script (as scan does), else the script's directory."""
    if explicit is not None:
        return (cwd / explicit).resolve()
    if script is None:
        return cwd
    script = (cwd / script).resolve()
    return cwd if script.is_relative_to(cwd) else script.parent


def check_program(
    script: PathArg | None = None,
    args: Sequence[str] = (),
    *,
    module: str | None = None,
    pytest: bool = False,
    from_records: PathArg | None = None,
    launcher: str | None = None,
    nproc_per_node: int = 1,
) -> Program | None:
    """What `check` runs (None: it reads `from_records`); NeuronMigrateError on a usage error."""
    from neuron_migrate.check.runner import Program
    from neuron_migrate.errors import NeuronMigrateError

    if sum(bool(x) for x in (module, pytest, from_records is not None)) > 1:
        raise NeuronMigrateError("use only one of -m/--module, --pytest and --from-records")
    if from_records is not None and (script is not None or args):
        raise NeuronMigrateError("--from-records reports existing records: give no program")
    if script is not None and (module or pytest):
        raise NeuronMigrateError("give either a script or -m MODULE / --pytest")
    if script is None and not (module or pytest or from_records is not None):
        raise NeuronMigrateError("nothing to check: give a script, -m MODULE, --pytest or --from-records DIR")
    if launcher is None and nproc_per_node != 1:
        raise NeuronMigrateError("--nproc-per-node needs --launcher torchrun")
    if launcher is not None and pytest:
        raise NeuronMigrateError("--launcher cannot run --pytest")
    if module:
        return Program("module", module, tuple(args))
    if pytest:
        return Program("pytest", "pytest", tuple(args))
    return Program("path", str(script), tuple(args)) if script is not None else None


def check_settings(
    script: PathArg | None = None,
    *,
    root: PathArg | None = None,
    cwd: PathArg | None = None,
    overrides: Mapping[str, Any] | None = None,
    config: PathArg | None = None,
) -> tuple[Settings, RulePack]:
    """The settings of a check run: the config found from the script (or the project root)."""
    from neuron_migrate.config import load_settings
    from neuron_migrate.ruleset.load import load_pack

    workdir = Path(cwd).resolve() if cwd is not None else Path.cwd().resolve()
    script_path = Path(script) if script is not None else None
    start = workdir / script_path if script_path is not None else _project_root(root, None, workdir)
    settings = load_settings(start, overrides, config_file=Path(config) if config is not None else None, cwd=workdir)
    if settings.write_baseline is not None:
        settings = replace(settings, baseline=None)  # record everything, even what an old baseline hides
    return settings, load_pack(settings.extra_rules)


def check(
    script: PathArg | None = None,
    args: Sequence[str] = (),
    *,
    module: str | None = None,
    pytest: bool = False,
    from_records: PathArg | None = None,
    launcher: str | None = None,
    nproc_per_node: int = 1,
    timeout: float | None = None,
    keep_records: PathArg | None = None,
    root: PathArg | None = None,
    cwd: PathArg | None = None,
    settings: Settings | None = None,
    overrides: Mapping[str, Any] | None = None,
    config: PathArg | None = None,
    stdout: IO[Any] | None = None,
    parity: Parity | None = None,
) -> Report:
    """Run a program on the emulated device (a script with `args`, a `module`, or `pytest` with
    `args`) and return the Report of NM9xx findings `neuron-migrate check` renders; or report
    the records of an earlier run (`from_records`). The program runs in a child process, in `cwd`
    (default: this process's), with its output on `stdout` (default: inherited). With `parity` it
    runs twice, with the device's numerics and as a CPU reference, and the values it read back are
    compared (NM915)."""
    from neuron_migrate.check.records import load_dir
    from neuron_migrate.check.report import build_report
    from neuron_migrate.check.runner import run_program
    from neuron_migrate.ruleset.load import load_pack

    program = check_program(script, args, module=module, pytest=pytest, from_records=from_records,
                            launcher=launcher, nproc_per_node=nproc_per_node)
    workdir = Path(cwd).resolve() if cwd is not None else Path.cwd().resolve()
    project = _project_root(root, Path(script) if script is not None else None, workdir)
    if settings is None:
        settings, pack = check_settings(script, root=root, cwd=workdir, overrides=overrides, config=config)
    else:
        pack = load_pack(settings.extra_rules)
    if program is None:
        assert from_records is not None
        return build_report(load_dir(Path(from_records)), settings, pack, root=project, program=str(from_records))
    from neuron_migrate.check import parity as check_parity

    records_dir = Path(keep_records) if keep_records is not None else None
    exclusions = tuple(check_parity.Exclusion.parse(e) for e in parity.exclude) if parity is not None else ()
    result = run_program(program, launcher=launcher, nproc_per_node=nproc_per_node, timeout=timeout,
                         records_dir=records_dir, stdout=stdout, cwd=workdir,
                         env=check_parity.device_env() if parity is not None else None)
    duration, compared = result.duration_s, None
    if parity is not None:
        reference = run_program(program, launcher=launcher, nproc_per_node=nproc_per_node, timeout=timeout,
                                records_dir=records_dir / "reference" if records_dir is not None else None,
                                stdout=stdout, cwd=workdir, env=check_parity.reference_env())
        duration += reference.duration_s
        compared = check_parity.compare(result.records, reference.records, rtol=parity.rtol, atol=parity.atol,
                                        exclude=exclusions)
    return build_report(result.records, settings, pack, root=project, program=program.describe(),
                        duration_s=duration, timeout=result.timeout, crash=result.crash, parity=compared,
                        survivors=result.survivors)
