"""The rewrite engine: apply the fixes of findings already computed, file by file.

Three layers, as in Fixit's api: `rewrite_text` (text in, text out, no disk), `rewrite_findings`
(adds reading, guards and writing for findings already computed) here, and
`neuron_migrate.api.rewrite_paths` (adds the scan and the pipeline). A problem with one file is
that file's outcome; the run goes on.
"""

from __future__ import annotations

import bisect
import concurrent.futures as cf
import difflib
import multiprocessing
import os
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
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
    return Path(os.path.relpath(real, os.path.realpath(base))).as_posix()  # both with links resolved


def is_notebook(path: str) -> bool:
    return path.endswith(".ipynb")


Rescan = Callable[[str, str], Sequence[Finding]]  # (path, text) -> what scan reports on that text

_ROUNDS = 4  # rounds of fixing one file in memory (fixes skipped for an overlap get the next)


def rewrite_text(text: str, path: str, findings: Sequence[Finding], target: Target, *, unsafe: bool,
                 label: str | None = None, rescan: Rescan | None = None) -> TextResult:
    """Rewrite decoded text of a Python file or notebook (`path` picks which; the diff names
    `label`, by default `path`). With `rescan`, fixes skipped because they overlap an applied one
    are planned again on the rewritten text, until none is left (or `_ROUNDS`): one run does what
    running `rewrite` again would (`@torch.compile(mode="max-autotune")` gets both its fixes)."""
    label = path if label is None else label
    if is_notebook(path):
        return _rewrite_notebook(text, path, label, findings, target, unsafe, rescan)
    from neuron_migrate.rewrite.apply import apply_fixes_to_source

    result = apply_fixes_to_source(text, findings, target, unsafe=unsafe)
    if result.error:
        return TextResult(text, "", result.applied, result.skipped, result.error)
    new_text, applied, skipped = result.new_source, list(result.applied), list(result.skipped)
    if rescan is not None:
        new_text = _more_rounds(text, new_text, path, applied, skipped, target, unsafe, rescan)
    return TextResult(new_text, _diff(text, new_text, label), tuple(applied), tuple(skipped))


def _rewrite_notebook(text: str, path: str, label: str, findings: Sequence[Finding], target: Target, unsafe: bool,
                      rescan: Rescan | None) -> TextResult:
    """A notebook's cells, fixed in rounds as a file's text is (`_more_rounds`): a waiting finding
    takes the outcome of a fix of its code applied in its cell in a later round."""
    from neuron_migrate.rewrite.apply import OVERLAPS
    from neuron_migrate.rewrite.notebook import rewrite_notebook

    nb = rewrite_notebook(text, findings, target, unsafe=unsafe)
    applied, skipped = list(nb.applied), list(nb.skipped)
    changes = {c.index: c for c in nb.changes}
    current = nb.new_text
    for _ in range(_ROUNDS - 1):
        waiting = [s for s in skipped if s.reason.startswith(OVERLAPS)]
        if rescan is None or not waiting:
            break
        try:
            again = rewrite_notebook(current, rescan(path, current), target, unsafe=unsafe)
        except Exception:  # noqa: BLE001 - a failed extra round must not cost the rounds already done
            break
        if not again.applied:
            break
        pending: dict[tuple[int | None, str], list[SkippedFix]] = defaultdict(list)
        for s in waiting:
            pending[s.finding.cell, s.finding.code].append(s)
        for found in again.applied:
            old = pending[found.cell, found.code].pop(0) if pending[found.cell, found.code] else None
            if old is not None:
                skipped.remove(old)
            applied.append(found if old is None else old.finding)
        for c in again.changes:
            changes[c.index] = replace(c, old=changes[c.index].old) if c.index in changes else c
        current = again.new_text
    diff = "".join(_diff(c.old, c.new, f"{label}:{cell_label(c.index)[:-1]}") for _, c in sorted(changes.items()))
    return TextResult(current, diff, tuple(applied), tuple(skipped))


def _more_rounds(original: str, text: str, path: str, applied: list[Finding], skipped: list[SkippedFix],
                 target: Target, unsafe: bool, rescan: Rescan) -> str:
    """Fix `text` (rewritten from `original`) again while a fix skipped for an overlap waits.

    `applied` and `skipped` are about `original`'s findings and are updated in place: a waiting
    finding whose code is fixed (or skipped for a new reason) on the lines it moved to takes that
    outcome; a fix applied to no waiting finding (code a fix wrote) is added as it is."""
    from neuron_migrate.rewrite.apply import OVERLAPS, apply_fixes_to_source

    moved = _LineMap(original, text)
    waiting = {id(s.finding): (s, moved(s.finding.span.line, s.finding.span.line + 1))
               for s in skipped if s.reason.startswith(OVERLAPS)}
    for _ in range(_ROUNDS - 1):
        if not waiting:
            break
        try:
            findings = rescan(path, text)
        except Exception:  # noqa: BLE001 - a failed extra round must not cost the rounds already done
            break
        result = apply_fixes_to_source(text, findings, target, unsafe=unsafe)
        if result.error or not result.applied:
            break
        index: dict[tuple[str, int], list[int]] = defaultdict(list)
        for key, (s, (first, stop)) in waiting.items():
            for line in range(first, stop):
                index[s.finding.code, line].append(key)
        for found in result.applied:
            old = _take(waiting, index, found)
            if old is not None:
                skipped.remove(old)
            applied.append(found if old is None else old.finding)
        for again in result.skipped:
            old = _take(waiting, index, again.finding)
            if old is not None and not again.reason.startswith(OVERLAPS):
                skipped[skipped.index(old)] = SkippedFix(old.finding, again.reason)
            elif old is not None:
                waiting[id(old.finding)] = (old, (again.finding.span.line, again.finding.span.line + 1))
        moved = _LineMap(text, result.new_source)
        waiting = {k: (s, moved(*lines)) for k, (s, lines) in waiting.items()}
        text = result.new_source
    return text


def _take(waiting: dict[int, tuple[SkippedFix, tuple[int, int]]], index: dict[tuple[str, int], list[int]],
          found: Finding) -> SkippedFix | None:
    """The waiting skip `found` (a finding of the rewritten text) stands for: same code, on the
    lines the skipped one moved to. It stops waiting."""
    keys = [k for k in index.get((found.code, found.span.line), ()) if k in waiting]
    return waiting.pop(keys[0])[0] if keys else None


class _LineMap:
    """Where lines of `old` went in `new` (1-based line numbers; a range maps to a range)."""

    def __init__(self, old: str, new: str) -> None:
        from neuron_migrate.rewrite.apply import line_starts

        def lines(text: str) -> list[str]:
            starts = line_starts(text)
            return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]

        self._ops = [op for op in difflib.SequenceMatcher(a=lines(old), b=lines(new), autojunk=False).get_opcodes()
                     if op[0] != "insert"]
        self._starts = [op[1] for op in self._ops]

    def __call__(self, start: int, stop: int) -> tuple[int, int]:
        """The lines of `new`, [first, stop), that lines [start, stop) of `old` became."""
        lo_line, hi_line = start - 1, stop - 1  # 0-based
        first, last = -1, -1
        i = max(bisect.bisect_right(self._starts, lo_line) - 1, 0)
        while i < len(self._ops) and self._ops[i][1] < hi_line:
            tag, i1, i2, j1, j2 = self._ops[i]
            lo, hi = max(i1, lo_line), min(i2, hi_line)
            if lo < hi:
                a, b = (j1 + lo - i1, j1 + hi - i1) if tag == "equal" or i2 - i1 == j2 - j1 else (j1, j2)
                first = a if first < 0 else min(first, a)
                last = max(last, b)
            i += 1
        return (first + 1, last + 1) if 0 <= first < last else (start, start)


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
    rescan: Rescan | None  # scans rewritten text for further rounds (see rewrite_text)


def _plan_file(work: _Work) -> FileOutcome | _Pending:
    from neuron_migrate.rewrite import files

    root, rel, findings, target, unsafe = work.root, work.rel, work.findings, work.target, work.unsafe
    try:
        real = files.resolve_inside(root / rel, root)
        original = real.read_bytes()
        decoded = files.decode_json(original) if is_notebook(rel) else files.decode_python(original)
        result = rewrite_text(decoded.text, rel, findings, target, unsafe=unsafe,
                              label=patch_label(real, root, work.patch_root), rescan=work.rescan)
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
    rescan: Rescan | None = None,
) -> tuple[FileOutcome, ...]:
    """Apply the fixes of `findings` (paths relative to `root`); only files with an applicable fix.
    `rescan` (picklable: it may run in worker processes) lets a file take further rounds of fixes.
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
    work = [_Work(root, rel, by_path[rel], target, unsafe, patch_root, rescan) for rel in fixable
            if primary[os.path.realpath(root / rel)] == rel]
    planned: list[FileOutcome | _Pending] = _plan_all(work, jobs, progress)
    for real, rels in by_real.items():
        reason = f"the same file as {primary[real]}, rewritten under that path"
        planned += [FileOutcome(rel, FileStatus.UNCHANGED, reason, skipped=tuple(
            SkippedFix(f, reason) for f in by_path[rel] if applicable_fix(f, target, unsafe=unsafe)))
            for rel in rels if rel != primary[real]]
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
