"""The migration record: one JSON document combining scan, rewrite and check of a project, with the
versions and command lines that produced it, so an evaluation can be kept and repeated after updates
(`neuron-migrate report`), and two records compared (`neuron-migrate diff`, `record_diff`).

The user's tree is never written: rewrite is applied to a temporary copy, and `check` runs the
rewritten program in that copy.

Record JSON, `schema_version` 1 (new optional keys may appear without a version change; a removed or
redefined key bumps the version)::

    {
      "kind": "neuron-migrate-record",
      "schema_version": 1,
      "created": "2025-01-31T12:00:00Z",            # UTC, ISO 8601, seconds
      "project": {"path": str, "name": str},         # absolute path as given, its last component
      "target": "neuron" | "accelerator",
      "unsafe_fixes": bool,
      "versions": {"tool": str, "python": str, "torch": str | null,
                   "rule_pack": {"name": str, "version": str, "digest": str,
                                 "neuron_sdk": str, "torch_neuronx": str}},
      "commands": {"report": str,                    # this invocation, shell-quoted
                   "scan": str, "rewrite": str,      # the equivalent single commands
                   "check": str | null},             # what ran (null without --run)
      "scan": Report,                                # `scan --format json` without target/summary
      "rewrite": {
        "target": str, "unsafe_fixes": bool,
        "files": [FileOutcome],                      # rewrite --format json `extras.files` entries
        "fixed": [str],                              # fingerprints of scan findings it fixed
        "remaining": [Finding],                      # findings a scan of the rewritten copy reports
        "idempotent": bool,                          # a second rewrite changed nothing
        "second_run_changed": [str],                 # paths a second run would change (should be [])
        "warnings": [str], "duration_s": float},
      "check": null | {
        "script": str, "args": [str], "launcher": str | null, "nproc_per_node": int | null,
        "exit_code": int | null,                     # of `neuron-migrate check`; null: did not start
        "duration_s": float,
        "error": str | null,                         # why there is no report (output tail)
        "report": Report | null},                    # `check --format json` (NM9xx findings)
      "headline": Headline,                          # derived from the above (see `headline`)
      "settings": {"select": [str], "ignore": [str],   # the effective rule selection and config
                   "severity": {str: str}, "per_file_ignores": [[glob, [str]]],
                   "extra_rules": [str], "enabled": [str]}  # enabled: every code the scan checked
    }                                                # (absent in records made before it existed)

The typed form is `record.model.MigrationRecord` (its `to_dict()` is this JSON; `Headline` the
headline). `Report` and `Finding` are `neuron_migrate.findings` `to_dict()` forms (`emit/report.schema.json`).
`headline`, `by_code`, `by_file`, `fallback_ops` and `recompile_sites` are views computed from a
loaded record; the renderers (`record_markdown`, `record_html`) and `record_diff` use only them.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import stat
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuron_migrate.errors import NeuronMigrateError
from neuron_migrate.findings import Finding, Report, Severity
from neuron_migrate.pipeline.gate import FALLBACK, RECOMPILE
from neuron_migrate.record.model import CheckHeadline, Commands, Headline, MigrationRecord, RecordCheck, RecordRewrite

if TYPE_CHECKING:
    from neuron_migrate.config import Settings
    from neuron_migrate.ruleset.model import RulePack

RECORD_KIND = "neuron-migrate-record"
RECORD_SCHEMA_VERSION = 1
# The runtime finding kinds the record summarises (rules/pack.yaml runtime_kinds; the codes of each,
# the hotspot rules and the did-not-finish rules come from rules/nm9-runtime.yaml).
HOST_SYNC_KIND = "host-sync"
# Never copied into the temporary tree: VCS data, caches, bytecode.
_COPY_IGNORE = (".git", ".hg", ".svn", ".neuron-migrate-cache", "__pycache__", ".pytest_cache", ".mypy_cache")
_ERROR_TAIL = 4000  # characters of check output kept when it produced no report


class RecordError(NeuronMigrateError):
    """A file that is not a readable migration record (names the file)."""


@dataclass(frozen=True, slots=True)
class RunSpec:
    """What `check` runs on the rewritten copy: a script relative to the project root."""

    script: str
    args: tuple[str, ...] = ()
    launcher: str | None = None
    nproc_per_node: int | None = None
    timeout_s: float | None = None


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    command: tuple[str, ...]
    exit_code: int | None
    duration_s: float
    report: dict[str, Any] | None
    error: str | None


CheckRunner = Callable[[Path, RunSpec, Path], CheckOutcome]


# --- building -------------------------------------------------------------------------------------


def _now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _torch_version() -> str | None:
    """Read from the installed metadata: importing torch costs a second and is not needed here."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def versions(pack: RulePack) -> dict[str, Any]:
    from neuron_migrate import __version__

    return {
        "tool": __version__,
        "python": platform.python_version(),
        "torch": _torch_version(),
        "rule_pack": {
            "name": pack.name,
            "version": pack.version,
            "digest": pack.digest,
            "neuron_sdk": pack.neuron_sdk,
            "torch_neuronx": pack.torch_neuronx,
        },
    }


def _display(argv: Sequence[str]) -> str:
    return shlex.join(argv)


def _check_command(spec: RunSpec) -> tuple[str, ...]:
    """The single `neuron-migrate check` command that runs the same check: its options before the
    script, the script's own arguments after `--`."""
    argv = ["neuron-migrate", "check"]
    if spec.launcher:
        argv += ["--launcher", spec.launcher]
    if spec.nproc_per_node is not None:
        argv += ["--nproc-per-node", str(spec.nproc_per_node)]
    if spec.timeout_s is not None:
        argv += ["--timeout", f"{spec.timeout_s:g}"]
    return (*argv, spec.script, *(("--", *spec.args) if spec.args else ()))


def _tail(text: str) -> str:
    return text if len(text) <= _ERROR_TAIL else "..." + text[-_ERROR_TAIL:]


def run_check(root: Path, spec: RunSpec, workdir: Path) -> CheckOutcome:
    """Check `spec.script` in `root` as `neuron-migrate check` would from there (the api in this
    process; the program itself runs in a child). Its output is kept in `workdir`, and its tail is
    the error when the check could not run."""
    from neuron_migrate import api
    from neuron_migrate.emit import FORMATS, EmitOptions
    from neuron_migrate.pipeline.gate import EXIT_ERROR, exit_code

    command = _check_command(spec)
    started = time.perf_counter()
    log = workdir / "output.txt"
    with log.open("w+", encoding="utf-8", errors="replace") as out:
        try:
            settings, pack = api.check_settings(spec.script, cwd=root)
            report = api.check(spec.script, spec.args, launcher=spec.launcher, nproc_per_node=spec.nproc_per_node or 1,
                               timeout=spec.timeout_s, cwd=root, settings=settings, stdout=out)
        except NeuronMigrateError as exc:
            out.seek(0)
            detail = _tail(out.read() + f"neuron-migrate: error: {exc}").strip()
            return CheckOutcome(command, EXIT_ERROR, time.perf_counter() - started, None,
                                f"check produced no report; exit {EXIT_ERROR}: {detail}")
    options = EmitOptions(pack=pack, target=settings.target)
    data = json.loads(FORMATS["json"](report, options))  # what `check --format json` prints
    return CheckOutcome(command, exit_code(report, settings, pack), time.perf_counter() - started, data, None)


def _copy_ignore(directory: str, names: list[str]) -> set[str]:
    """What the temporary copy leaves out: tool caches and VCS data, and FIFOs, sockets and
    devices (never scanned; copying a FIFO would block or fail)."""
    skipped = set(shutil.ignore_patterns(*_COPY_IGNORE)(directory, names))
    for name in names:
        try:
            mode = os.lstat(os.path.join(directory, name)).st_mode
        except OSError:
            continue  # gone meanwhile: copytree reports it
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            skipped.add(name)
    return skipped


def _copy_project(project: Path, dest: Path) -> Path:
    """Copy the project under `dest`; returns the path that corresponds to `project`."""
    if project.is_dir():
        target = dest / project.name
        try:
            shutil.copytree(project, target, symlinks=True, ignore=_copy_ignore)
        except shutil.Error as exc:  # its argument is a list of (source, destination, reason)
            problems = exc.args[0] if exc.args and isinstance(exc.args[0], list) else [("", "", str(exc))]
            source, _, reason = problems[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise NeuronMigrateError(f"{source or project}: cannot copy into the temporary tree: {reason}{more}") from None
        return target
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / project.name
    shutil.copy2(project, target)
    return target


def _scan(project: Path, settings: Settings, use_cache: bool) -> Report:
    from neuron_migrate import api

    root = project if project.is_dir() else project.parent
    return api.scan([project], settings=settings, use_cache=use_cache, root=root)


def _rewrite(copy: Path, settings: Settings) -> RecordRewrite:
    from neuron_migrate.api import rewrite_paths
    from neuron_migrate.rewrite.engine import FileStatus

    # A private copy: its read-only files (copied with their modes) are written too.
    common: dict[str, Any] = {"unsafe": settings.unsafe_fixes, "allow_dirty": True, "target": settings.target,
                              "use_cache": False, "write_read_only": True}
    first = rewrite_paths([copy], settings, apply=True, **common)
    second = rewrite_paths([copy], settings, apply=False, **common)
    again = [o.path for o in second.files if o.status is FileStatus.CHANGED]
    return RecordRewrite(
        target=settings.target.value,
        unsafe_fixes=settings.unsafe_fixes,
        files=[o.to_dict() for o in first.files],
        fixed=[f.fingerprint for f in first.fixed],
        remaining=[f.to_dict() for f in sorted(second.findings, key=lambda f: f.sort_key)],
        idempotent=not again,
        second_run_changed=again,
        warnings=list(first.warnings),
        duration_s=round(first.duration_s + second.duration_s, 3),
    )


def build_record(
    project: Path,
    settings: Settings,
    *,
    run: RunSpec | None = None,
    argv: Sequence[str] = (),
    use_cache: bool = True,
    check_runner: CheckRunner = run_check,
) -> dict[str, Any]:
    """Scan `project`, rewrite a temporary copy of it, optionally `check` the rewritten program, and
    return the record (a JSON-ready dict). `argv` is the command line that asked for it."""
    from neuron_migrate.ruleset.load import load_pack

    project = project.resolve()
    if not project.exists():
        raise NeuronMigrateError(f"{project}: no such file or directory")
    pack = load_pack(settings.extra_rules)
    created = _now_utc()
    scan_report = _scan(project, settings, use_cache)
    target = settings.target.value
    rewrite_cmd = ["neuron-migrate", "rewrite", str(project), "--apply", "--target", target]
    if settings.unsafe_fixes:
        rewrite_cmd.append("--unsafe-fixes")
    check: RecordCheck | None = None
    check_command: str | None = None
    with tempfile.TemporaryDirectory(prefix="neuron-migrate-report-") as tmp:
        copy = _copy_project(project, Path(tmp) / "tree")  # never a path under the project itself
        rewrite = _rewrite(copy, settings)
        if run is not None:
            root = copy if copy.is_dir() else copy.parent
            if not (root / run.script).is_file():
                raise NeuronMigrateError(f"--run {run.script}: no such file in {project}")
            work = Path(tmp) / "check"
            work.mkdir()
            outcome = check_runner(root, run, work)
            check = RecordCheck(
                script=run.script,
                args=list(run.args),
                launcher=run.launcher,
                nproc_per_node=run.nproc_per_node,
                exit_code=outcome.exit_code,
                duration_s=round(outcome.duration_s, 3),
                error=outcome.error,
                report=outcome.report,
            )
            check_command = _display(outcome.command)
    record = MigrationRecord(
        kind=RECORD_KIND,
        schema_version=RECORD_SCHEMA_VERSION,
        created=created,
        project={"path": str(project), "name": project.name},
        target=target,
        unsafe_fixes=settings.unsafe_fixes,
        versions=versions(pack),
        commands=Commands(
            report=_display(argv) if argv else "",
            scan=_display(["neuron-migrate", "scan", str(project)]),
            rewrite=_display(rewrite_cmd),
            check=check_command,
        ),
        scan=scan_report.to_dict(),
        rewrite=rewrite,
        check=check,
        settings=effective_settings(settings, pack),
    )
    data = record.to_dict()
    return replace(record, headline=headline(data)).to_dict()


def effective_settings(settings: Settings, pack: RulePack) -> dict[str, Any]:
    """What decides which findings a record can hold, so `diff` tells a selection change from a fix."""
    from neuron_migrate.ruleset.select import select_codes

    return {
        "select": list(settings.select),
        "ignore": list(settings.ignore),
        "severity": {code: level.value for code, level in sorted(settings.severity.items())},
        "per_file_ignores": [[p.glob, list(p.codes)] for p in settings.per_file_ignores],
        "extra_rules": [str(path) for path in settings.extra_rules],
        "enabled": sorted(select_codes(pack, settings.select, settings.ignore)),
    }


# --- reading --------------------------------------------------------------------------------------

_REQUIRED = ("created", "project", "target", "versions", "commands", "scan", "rewrite", "check", "headline")


def validate(data: Any, source: str) -> dict[str, Any]:
    """`data` as a record, or RecordError naming `source` and what is wrong."""
    if not isinstance(data, dict) or data.get("kind") != RECORD_KIND:
        raise RecordError(f"{source}: not a neuron-migrate record (no \"kind\": \"{RECORD_KIND}\")")
    version = data.get("schema_version")
    if version != RECORD_SCHEMA_VERSION:
        raise RecordError(
            f"{source}: record schema_version {version!r} is not supported "
            f"(this neuron-migrate reads version {RECORD_SCHEMA_VERSION})"
        )
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise RecordError(f"{source}: record is missing {', '.join(repr(k) for k in missing)}")
    for key, kinds, expected in (("versions", dict, "an object"), ("headline", dict, "an object"),
                                 ("check", (dict, type(None)), "an object or null")):
        if not isinstance(data[key], kinds):
            raise RecordError(f"{source}: malformed record: {key!r} must be {expected}, not {type(data[key]).__name__}")
    try:
        # Everything `diff` reads, so that a damaged record is this error and never a crash later.
        Report.from_dict(data["scan"])
        remaining_findings(data)
        if data["check"] is not None and data["check"].get("report") is not None:
            Report.from_dict(data["check"]["report"])
        version_summary(data)
        fallback_ops(data)
        recompile_sites(data)
    except KeyError as exc:
        raise RecordError(f"{source}: malformed record: missing key {exc}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise RecordError(f"{source}: malformed record: {exc.__class__.__name__}: {exc}") from None
    return data


def load_record(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecordError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{path}: not JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise RecordError(f"{path}: not JSON: nested too deeply") from None
    return validate(data, str(path))


def dumps(record: Mapping[str, Any]) -> str:
    return json.dumps(record, indent=2, ensure_ascii=False) + "\n"


# --- views ----------------------------------------------------------------------------------------


def scan_findings(record: Mapping[str, Any]) -> list[Finding]:
    return [Finding.from_dict(f) for f in record["scan"]["findings"]]


def remaining_findings(record: Mapping[str, Any]) -> list[Finding]:
    return [Finding.from_dict(f) for f in record["rewrite"]["remaining"]]


def version_summary(record: Mapping[str, Any]) -> dict[str, Any]:
    """What a record was made with, by label: tool, rule pack, torch, Python, target."""
    v = record["versions"]
    pack = v["rule_pack"]
    return {
        "neuron-migrate": v["tool"],
        "rule pack version": pack["version"],
        "rule pack digest": pack["digest"],
        "Neuron SDK (rule pack)": pack["neuron_sdk"],
        "torch": v["torch"],
        "Python": v["python"],
        "target": record["target"],
    }


def _pack() -> RulePack:
    """The built-in pack, where the NM9xx rules (check's findings) live."""
    from neuron_migrate.ruleset.load import load_pack

    return load_pack()


def check_findings(record: Mapping[str, Any]) -> list[Finding]:
    check = record.get("check") or {}
    report = check.get("report") or {}
    return [Finding.from_dict(f) for f in report.get("findings", ())]


def _int(value: Any, default: int = 1) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, (list, tuple)):
        return len(value)
    return default


def fallback_ops(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Op -> {"count": calls on the CPU, "sites": [first user location], "phases": ...} from the
    check report's NM901 findings (one finding per op, or per op and call site)."""
    ops: dict[str, dict[str, Any]] = {}
    codes = _pack().codes_of_kind(FALLBACK)
    for f in check_findings(record):
        if f.code not in codes:
            continue
        entry = ops.setdefault(f.symbol, {"count": 0, "sites": []})
        entry["count"] += _int(f.details.get("count"))
        entry["sites"].append(f.location())
    return dict(sorted(ops.items()))


def _varied(details: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The dimensions that changed at a call site, over all its ops: "input 0 dim 1" -> values."""
    out: dict[str, list[Any]] = {}
    for op in details.get("ops", ()):
        for dim, values in (op.get("varied") or {}).items():
            seen = out.setdefault(dim, [])
            seen += [v for v in values if v not in seen]
    return {k: sorted(v, key=str) if not all(isinstance(x, int) for x in v) else sorted(v) for k, v in out.items()}


def _advice(details: Mapping[str, Any]) -> list[str]:
    """Per varying dimension, the padding/bucketing option with the fewest compiles (then the least
    padding), as check worded it."""
    out = []
    for dim in details.get("varied_dimensions", ()):
        options = [o for o in dim.get("options", ()) if isinstance(o, Mapping) and o.get("advice")]
        if options:
            best = min(options, key=lambda o: (_int(o.get("compiles"), 0), float(o.get("padding") or 0)))
            if str(best["advice"]) not in out:  # ranks and ops often give the same advice
                out.append(str(best["advice"]))
    return out


def recompile_sites(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Call site -> {"location", "symbol" (the source line), "signatures" (distinct input signatures
    compiled there), "compiles", "varying" (dimension -> observed values), "advice" (how to pad or
    bucket)} from check's NM903 findings. Keyed by the finding's fingerprint, so a site keeps its
    key when lines move."""
    sites: dict[str, dict[str, Any]] = {}
    codes = _pack().hotspot_codes(RECOMPILE)
    for f in check_findings(record):
        if f.code not in codes:
            continue
        details = f.details
        sites[f.fingerprint] = {
            "location": f.location(),
            "symbol": f.symbol,
            "signatures": _int(details.get("distinct_signatures", details.get("signatures"))),
            "compiles": _int(details.get("compiles"), 0),
            "varying": _varied(details),
            "advice": _advice(details),
        }
    return dict(sorted(sites.items(), key=lambda kv: kv[1]["location"]))


def check_values(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """User line ("train.py:42") -> {"reads", "first", "last"}: the values the program read back to
    the host (losses, metrics; check.parity.summarize), from the check report's summary."""
    check = record.get("check") or {}
    extras = (check.get("report") or {}).get("extras") or {}
    values = (extras.get("check") or {}).get("values") if isinstance(extras, Mapping) else None
    if not isinstance(values, Mapping):
        return {}
    return {str(k): dict(v) for k, v in values.items() if isinstance(v, Mapping)}


def headline(record: Mapping[str, Any]) -> Headline:
    """The numbers a reader wants first, from the record's scan, rewrite and check."""
    from neuron_migrate.emit.summary import summarize
    from neuron_migrate.findings import Target

    summary = summarize(Report.from_dict(record["scan"]), Target(record["target"]))
    check = record.get("check")
    checked: CheckHeadline | None = None
    if check is not None:
        runtime = check_findings(record)
        pack = _pack()
        ending, host_syncs = pack.ending_codes(), pack.codes_of_kind(HOST_SYNC_KIND)
        checked = CheckHeadline(
            check_completed=check.get("report") is not None and check.get("exit_code") in (0, 1)
            and not any(f.code in ending for f in runtime),
            check_exit_code=check.get("exit_code"),
            fallback_ops=len(fallback_ops(record)),
            host_syncs=sum(f.code in host_syncs for f in runtime),
            recompile_hotspots=len(recompile_sites(record)),
            runtime_findings=len(runtime),
        )
    return Headline(
        sites=summary.total,
        errors=dict(summary.by_severity)[Severity.ERROR],
        files_with_findings=summary.files_with_findings,
        files_scanned=summary.files_scanned,
        auto_fixable=summary.fixable,
        auto_fixable_safe=summary.fixable_safe,
        auto_fixable_share=round(summary.fixable_share, 4),
        fixed_by_rewrite=len(record["rewrite"]["fixed"]),
        needs_person=len(record["rewrite"]["remaining"]),
        rewrite_idempotent=bool(record["rewrite"]["idempotent"]),
        check=checked,
    )


@dataclass(frozen=True, slots=True)
class CodeRow:
    code: str
    title: str
    severity: str
    fix_class: str
    found: int
    fixed: int
    remaining: int


def by_code(record: Mapping[str, Any], pack: RulePack | None = None) -> list[CodeRow]:
    """One row per code found by scan or still present after the rewrite."""
    found = scan_findings(record)
    fixed_prints = Counter(record["rewrite"]["fixed"])
    fixed: Counter[str] = Counter()
    for f in found:
        if fixed_prints[f.fingerprint] > 0:
            fixed_prints[f.fingerprint] -= 1
            fixed[f.code] += 1
    left = remaining_findings(record)
    found_by = Counter(f.code for f in found)
    left_by = Counter(f.code for f in left)
    sample = {f.code: f for f in [*left, *found]}
    rows = []
    for code in sorted(set(found_by) | set(left_by)):
        rule = pack.get(code) if pack else None
        f = sample[code]
        rows.append(CodeRow(code, rule.title if rule else "", f.severity.value, f.fix_class.value,
                            found_by[code], fixed[code], left_by[code]))
    return rows


@dataclass(frozen=True, slots=True)
class FileRow:
    path: str
    found: int
    fixed: int
    remaining: int
    status: str  # the rewrite outcome: changed, unchanged, skipped, refused, or "" (not touched)


def by_file(record: Mapping[str, Any]) -> list[FileRow]:
    found = Counter(f.path for f in scan_findings(record))
    left = Counter(f.path for f in remaining_findings(record))
    outcomes = {o["path"]: o for o in record["rewrite"]["files"]}
    rows = [
        FileRow(path, found[path], len(outcomes.get(path, {}).get("fixed", ())), left[path],
                outcomes.get(path, {}).get("status", ""))
        for path in sorted(set(found) | set(left) | set(outcomes))
    ]
    return sorted(rows, key=lambda r: (-r.found, r.path))


def runtime_by_code(record: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """(code, severity, count) of the check report's findings."""
    counts = Counter((f.code, f.severity.value) for f in check_findings(record))
    return [(code, sev, n) for (code, sev), n in sorted(counts.items())]


def check_extras(record: Mapping[str, Any]) -> Mapping[str, Any]:
    check = record.get("check") or {}
    return (check.get("report") or {}).get("extras", {})
