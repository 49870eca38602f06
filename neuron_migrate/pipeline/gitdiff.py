"""`--diff-against REV` / `--changed-only`: which lines changed since a git revision.

Changed lines come from `git diff --unified=0 REV` (the working tree, staged or not, against REV);
untracked files (not ignored) count as wholly changed. A notebook counts as changed as a whole
when its file changed at all, because its findings' lines are relative to a cell while git's are
lines of the JSON file.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from neuron_migrate.errors import NeuronMigrateError

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_C_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"'}


@dataclass(frozen=True, slots=True)
class ChangedLines:
    toplevel: Path  # the repository's top directory (resolved)
    lines: dict[str, frozenset[int] | None]  # repo-relative POSIX path -> added lines; None: whole file

    def covers(self, path: Path, line: int, *, whole_file: bool = False) -> bool:
        """Whether `line` of `path` (absolute) changed; `whole_file`: whether anything in it did."""
        try:
            rel = path.resolve().relative_to(self.toplevel).as_posix()
        except ValueError:  # outside the repository: git knows nothing about it
            return False
        if rel not in self.lines:
            return False
        changed = self.lines[rel]
        return changed is None or (whole_file and bool(changed)) or line in changed


def _git(args: list[str], cwd: Path) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise NeuronMigrateError("--diff-against needs git, and git is not installed") from None
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed"
        raise NeuronMigrateError(f"git {' '.join(args)}: {message}")
    return proc.stdout.decode("utf-8", "surrogateescape")


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual path names ("a\\tb", octal UTF-8 bytes)."""
    if not (path.startswith('"') and path.endswith('"')):
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567":
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out += _C_ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += ch.encode()
        i += 1
    return out.decode("utf-8", "surrogateescape")


def parse_diff(text: str) -> dict[str, frozenset[int]]:
    """Added/modified line numbers per new-side path of a `git diff --unified=0` output."""
    files: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in text.splitlines():
        if line.startswith("+++ "):
            target = line[4:].rstrip("\t")
            if target == "/dev/null":  # deleted file: nothing on the new side
                current = None
                continue
            target = _unquote(target)
            current = files.setdefault(target.removeprefix("b/"), set())
        elif current is not None and (m := _HUNK.match(line)):
            start, count = int(m.group(1)), int(m.group(2) or 1)
            current.update(range(start, start + count))
    return {path: frozenset(lines) for path, lines in files.items()}


def changed_lines(start: Path, rev: str) -> ChangedLines:
    """Lines changed since `rev` in the repository holding `start` (a file or directory)."""
    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    try:
        top = _git(["rev-parse", "--show-toplevel"], here).strip()
    except NeuronMigrateError:
        raise NeuronMigrateError(
            f"--diff-against/--changed-only need a git repository, and {start} is not inside one"
        ) from None
    toplevel = Path(top).resolve()
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], toplevel)
    except NeuronMigrateError:
        raise NeuronMigrateError(f"--diff-against: unknown git revision {rev!r}") from None
    diff = _git(["-c", "core.quotepath=off", "diff", "--unified=0", "--no-color", "--no-ext-diff",
                 "-M", rev, "--"], toplevel)
    lines: dict[str, frozenset[int] | None] = dict(parse_diff(diff))
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], toplevel)
    for path in filter(None, untracked.split("\0")):
        lines[path] = None
    return ChangedLines(toplevel, lines)
