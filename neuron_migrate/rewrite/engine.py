"""The rewrite engine: apply the fixes of findings already computed, file by file.

Three layers, as in Fixit's api: `rewrite_text` (text in, text out, no disk), `rewrite_findings`
(adds reading, guards and writing for findings already computed) here, and
`neuron_migrate.api.rewrite_paths` (adds the scan and the pipeline). A problem with one file is
that file's outcome; the run goes on.
"""

from __future__ import annotations

import concurrent.futures as cf
import difflib
import multiprocessing
import os
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuron_migrate.errors import NeuronMigrateError
from neuron_migrate.findings import Finding, Report, Target, cell_label
from neuron_migrate.rewrite.apply import SkippedFix, applicable_fix
from neuron_migrate.rewrite.files import FileProblem

if TYPE_CHECKING:
    pass


def finding_key(f: Finding) -> tuple[object, ...]:
    """Identity of a finding across processes (findings come back from workers as copies)."""
    return (f.path, f.cell, f.code, f.span, f.fingerprint)


class FileStatus(StrEnum):
    CHANGED = "changed"  # written (with --apply) or would be written (dry run)
    UNCHANGED = "unchanged"  # had fixes, but they leave the text as it is
    SKIPPED = "skipped"  # could not be rewritten safely; `reason` says why
    REFUSED = "refused"  # --apply on a file git does not have committed and clean, or a read-only one


@dataclass(frozen=True, slots=True)
class FileOutcome:
    path: str  # relative to the root, like Finding.path
    status: FileStatus
    reason: str = ""
    diff: str = ""
    applied: tuple[Finding, ...] = ()  # findings whose fix is in the new text
    skipped: tuple[SkippedFix, ...] = ()  # applicable fixes left out, with why

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status.value,
            "reason": self.reason,
            "diff": self.diff,
            "fixed": [f.code for f in self.applied],
            "skipped": [{"code": s.finding.code, "line": s.finding.span.line, "reason": s.reason} for s in self.skipped],
        }


@dataclass(frozen=True, slots=True)
class RewriteResult:
    root: str
    target: Target
    apply: bool  # True: changes were written
    unsafe: bool
    files: tuple[FileOutcome, ...]
    findings: tuple[Finding, ...]  # what the scan reported after selection and suppression
    files_scanned: int = 0
    duration_s: float = 0.0
    warnings: tuple[str, ...] = field(default_factory=tuple)
    pack_version: str = ""
    # After --apply: what a fresh scan of the written files reports. One fix can remove another
    # finding too (NM401 rewrites the `default="nccl"` that NM402 also names), so this is exact.
    rescanned: tuple[Finding, ...] | None = None

    @property
    def fixed(self) -> tuple[Finding, ...]:
        """Findings whose fix is in a changed file (written, or shown in the diff of a dry run)."""
        return tuple(f for o in self.files if o.status is FileStatus.CHANGED for f in o.applied)

    @property
    def needs_person(self) -> tuple[Finding, ...]:
        """Findings this rewrite does not fix: manual/none, unsafe without opt-in, or skipped."""
        fixed = {finding_key(f) for f in self.fixed}
        return tuple(f for f in self.findings if finding_key(f) not in fixed)

    @property
    def remaining(self) -> tuple[Finding, ...]:
        """Findings still in the code on disk after this run (all of them in a dry run)."""
        if not self.apply:
            return self.findings
        return self.rescanned if self.rescanned is not None else self.needs_person

    def report(self) -> Report:
        from neuron_migrate import __version__

        return Report(
            command="rewrite",
            root=self.root,
            findings=self.remaining,
            files_scanned=self.files_scanned,
            duration_s=self.duration_s,
            tool_version=__version__,
            pack_version=self.pack_version,
            extras={
                "target": self.target.value,
                "applied": self.apply,
                "unsafe_fixes": self.unsafe,
                "files": [o.to_dict() for o in self.files],
                "fixed": len(self.fixed),
            },
        ).sorted()


# --- layer 1: text --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextResult:
    new_text: str
    diff: str
    applied: tuple[Finding, ...]
    skipped: tuple[SkippedFix, ...]
    error: str = ""


def _patch_lines(text: str) -> list[str]:
    """Lines as `patch` and `git apply` see them: ended by `\\n` alone (`str.splitlines` also splits
    at `\\r`, form feeds and U+2028, which made the patch disagree with the file)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _diff(old: str, new: str, label: str) -> str:
    lines = difflib.unified_diff(_patch_lines(old), _patch_lines(new), f"a/{label}", f"b/{label}")
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def patch_label(real: Path, root: Path, base: Path | None = None) -> str:
    """The path a patch names for the file `real` found under `root`: relative to `base`, else
    to the git work tree holding it, else to the working directory when it holds the file, else
    to `root`; so `git apply` (or `patch -p1`) takes the patch where the user ran `rewrite`,
    whatever PATH they gave."""
    from neuron_migrate.rewrite.files import git_top

    if base is None:
        cwd = Path(os.path.realpath(os.getcwd()))
        top = Path(os.path.realpath(root))
        base = git_top(real) or (cwd if cwd in real.parents else top.parent if top.is_file() else top)
    return Path(os.path.relpath(real, base)).as_posix()


def is_notebook(path: str) -> bool:
    return path.endswith(".ipynb")


def rewrite_text(text: str, path: str, findings: Sequence[Finding], target: Target, *, unsafe: bool,
                 label: str | None = None) -> TextResult:
    """Rewrite decoded text of a Python file or notebook (`path` picks which; the diff names
    `label`, by default `path`)."""
    label = path if label is None else label
    if is_notebook(path):
        from neuron_migrate.rewrite.notebook import rewrite_notebook

        nb = rewrite_notebook(text, findings, target, unsafe=unsafe)
        diff = "".join(_diff(c.old, c.new, f"{label}:{cell_label(c.index)[:-1]}") for c in nb.changes)
        return TextResult(nb.new_text, diff, nb.applied, nb.skipped)
    from neuron_migrate.rewrite.apply import apply_fixes_to_source

    result = apply_fixes_to_source(text, findings, target, unsafe=unsafe)
    return TextResult(result.new_source, _diff(text, result.new_source, label), result.applied, result.skipped,
                      result.error)


# --- layer 2: files -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Pending:
    outcome: FileOutcome
    real: Path
    original: bytes
    new: bytes


@dataclass(frozen=True, slots=True)
class _Work:
    root: Path
    rel: str
    findings: Sequence[Finding]
    target: Target
    unsafe: bool
    patch_root: Path | None  # what the diff's paths are relative to (None: see patch_label)


def _plan_file(work: _Work) -> FileOutcome | _Pending:
    from neuron_migrate.rewrite import files

    root, rel, findings, target, unsafe = work.root, work.rel, work.findings, work.target, work.unsafe
    try:
        real = files.resolve_inside(root / rel, root)
        original = real.read_bytes()
        decoded = files.decode_json(original) if is_notebook(rel) else files.decode_python(original)
        result = rewrite_text(decoded.text, rel, findings, target, unsafe=unsafe,
                              label=patch_label(real, root, work.patch_root))
        if result.error:
            return FileOutcome(rel, FileStatus.SKIPPED, result.error, skipped=result.skipped)
        if not result.applied or result.new_text == decoded.text:
            return FileOutcome(rel, FileStatus.UNCHANGED, skipped=result.skipped)
        new = decoded.encode(result.new_text)
    except FileProblem as exc:
        return FileOutcome(rel, FileStatus.SKIPPED, str(exc))
    except OSError as exc:
        return FileOutcome(rel, FileStatus.SKIPPED, f"cannot read: {exc.strerror or exc}")
    except Exception as exc:  # noqa: BLE001 - a bug must cost one file, not the run (and never a half-written file)
        return FileOutcome(rel, FileStatus.SKIPPED, f"internal error, please report it: {type(exc).__name__}: {exc}")
    outcome = FileOutcome(rel, FileStatus.CHANGED, diff=result.diff, applied=result.applied, skipped=result.skipped)
    return _Pending(outcome, real, original, new)


_POOL_MIN_FILES = 8  # below this, starting workers costs more than it saves


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _plan_all(work: list[_Work], jobs: int | None,
              progress: Callable[[int, int], None] | None = None) -> list[FileOutcome | _Pending]:
    """Plan every file, in parallel when there are many (libcst parsing dominates); `progress`
    hears (files planned, files to plan) as plans come in."""
    workers = jobs if jobs is not None else _usable_cpus()
    if workers <= 1 or len(work) < _POOL_MIN_FILES:
        return _counted(map(_plan_file, work), len(work), progress)
    context = multiprocessing.get_context("fork") if sys.platform == "linux" else None
    try:
        with cf.ProcessPoolExecutor(max_workers=min(workers, len(work)), mp_context=context) as pool:
            plans = pool.map(_plan_file, work, chunksize=max(1, len(work) // (workers * 4)))
            return _counted(plans, len(work), progress)
    except cf.process.BrokenProcessPool as exc:
        raise NeuronMigrateError(f"a rewrite worker process died unexpectedly ({exc})") from None


def _counted(plans: Iterable[FileOutcome | _Pending], total: int,
             progress: Callable[[int, int], None] | None) -> list[FileOutcome | _Pending]:
    out = []
    for plan in plans:
        out.append(plan)
        if progress is not None:
            progress(len(out), total)
    return out


def _not_written(o: FileOutcome, status: FileStatus, reason: str) -> FileOutcome:
    lost = tuple(SkippedFix(f, f"file {status.value}: {reason}") for f in o.applied)
    return FileOutcome(o.path, status, reason, o.diff, (), o.skipped + lost)


def rewrite_findings(
    root: Path,
    findings: Sequence[Finding],
    *,
    target: Target,
    unsafe: bool,
    apply: bool,
    allow_dirty: bool = False,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    patch_root: Path | None = None,
    write_read_only: bool = False,
) -> tuple[FileOutcome, ...]:
    """Apply the fixes of `findings` (paths relative to `root`); only files with an applicable fix.
    A file reached by several paths (an in-root symlink and its target) is planned once, under
    its own path when the scan saw it, else under the first; the others say where it went."""
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        by_path[finding.path].append(finding)
    fixable = [rel for rel, group in sorted(by_path.items())
               if any(applicable_fix(f, target, unsafe=unsafe) for f in group)]
    by_real: dict[str, list[str]] = defaultdict(list)
    for rel in fixable:
        by_real[os.path.realpath(root / rel)].append(rel)
    root_real = os.path.realpath(root)
    primary = {}
    for real, rels in by_real.items():
        own = [rel for rel in rels if os.path.join(root_real, rel) == real]
        primary[real] = (own or rels)[0]
    work = [_Work(root, rel, by_path[rel], target, unsafe, patch_root) for rel in fixable
            if primary[os.path.realpath(root / rel)] == rel]
    planned: list[FileOutcome | _Pending] = _plan_all(work, jobs, progress)
    for real, rels in by_real.items():
        reason = f"the same file as {primary[real]}, rewritten under that path"
        planned += [FileOutcome(rel, FileStatus.UNCHANGED, reason) for rel in rels if rel != primary[real]]
    planned.sort(key=lambda p: (p.outcome if isinstance(p, _Pending) else p).path)
    if not apply:
        return tuple(p.outcome if isinstance(p, _Pending) else p for p in planned)

    from neuron_migrate.rewrite import files

    pending = [p for p in planned if isinstance(p, _Pending)]
    dirty = {} if allow_dirty else files.uncommitted(p.real for p in pending)
    outcomes: list[FileOutcome] = []
    for item in planned:
        if not isinstance(item, _Pending):
            outcomes.append(item)
            continue
        o = item.outcome
        if item.real in dirty:
            reason = f"{dirty[item.real]} (commit or stash it, or pass --allow-dirty)"
            outcomes.append(_not_written(o, FileStatus.REFUSED, reason))
            continue
        try:
            if not write_read_only and files.read_only(item.real):
                reason = "read-only (pass --write-read-only to write it anyway)"
                outcomes.append(_not_written(o, FileStatus.REFUSED, reason))
                continue
            files.atomic_write(item.real, item.new, expected=item.original)
        except FileProblem as exc:
            outcomes.append(_not_written(o, FileStatus.SKIPPED, str(exc)))
            continue
        outcomes.append(o)
    return tuple(outcomes)
