"""Disk side of rewriting: decode and re-encode exactly, atomic writes, symlink and git guards.

A file is rewritten only if its bytes survive decode + encode unchanged (so the encoding, BOM and
newlines we write back are the ones it had), through a temporary file in the same directory and
`os.replace`, keeping its mode and owner (in place through its inode when it has other hard
links or the owner cannot be kept; see `atomic_write`); read-only files are left alone unless
asked. Inside a git work tree a file is written only if git has it committed and unchanged
(modified, staged, untracked and ignored files are refused unless `--allow-dirty`); files outside
any git work tree are written.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import tempfile
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from neuron_migrate.errors import NeuronMigrateError

_BOM = b"\xef\xbb\xbf"
TEMP_SUFFIX = ".neuron-migrate.tmp"


class FileProblem(Exception):
    """This file cannot be rewritten safely; the message says why (the run goes on)."""


@dataclass(frozen=True, slots=True)
class DecodedSource:
    text: str
    encoding: str
    bom: bool

    def encode(self, text: str) -> bytes:
        try:
            body = text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise FileProblem(f"the rewritten text cannot be encoded as {self.encoding}") from exc
        return (_BOM if self.bom else b"") + body


def decode_python(data: bytes) -> DecodedSource:
    """Decode as Python does (BOM, PEP 263 cookie, default UTF-8), refusing lossy round trips."""
    # The cookie is looked for in the first two lines as Python counts them: a CR-only file's
    # lines end at `\r` (BytesIO.readline would hand over the whole file as one line).
    lines = iter(data.splitlines(keepends=True))
    try:
        encoding, _ = tokenize.detect_encoding(lambda: next(lines, b""))
    except SyntaxError as exc:
        raise FileProblem(f"unknown source encoding: {exc}") from exc
    bom = encoding == "utf-8-sig"
    if bom:
        encoding = "utf-8"
    body = data[len(_BOM) :] if bom else data
    try:
        text = body.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise FileProblem(f"cannot decode as {encoding}") from exc
    decoded = DecodedSource(text, encoding, bom)
    if decoded.encode(text) != data:
        raise FileProblem(f"{encoding} does not round-trip this file's bytes")
    return decoded


def decode_json(data: bytes) -> DecodedSource:
    """Notebooks are UTF-8 JSON (a BOM is tolerated and kept)."""
    bom = data.startswith(_BOM)
    try:
        text = data[len(_BOM) :].decode("utf-8") if bom else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem("the notebook is not UTF-8") from exc
    return DecodedSource(text, "utf-8", bom)


def resolve_inside(path: Path, root: Path) -> Path:
    """The real file to write: symlinks are followed only while they stay inside `root`."""
    real = path.resolve()
    root_real = root.resolve()
    if root_real.is_file():
        root_real = root_real.parent
    if real != root_real and root_real not in real.parents:
        raise FileProblem(f"it resolves to {real}, outside {root_real}; symlinks out of the root are not followed")
    if not real.is_file():
        raise FileProblem("not a regular file")
    return real


def read_only(path: Path) -> bool:
    """A file with no write bit at all (`chmod a-w`, which root could still write) or one this
    user may not write: `rewrite --apply` leaves it alone unless told (`--write-read-only`)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False  # the write says why
    return not stat.S_IMODE(mode) & 0o222 or not os.access(path, os.W_OK)


def atomic_write(path: Path, data: bytes, *, expected: bytes) -> None:
    """Write `data` to the regular file `path` if it still holds `expected`, keeping its mode,
    owner, group and inode links.

    Normally via a temporary sibling with the file's mode and owner and `os.replace`, so the
    file is never half-written. A file with other hard links, or whose owner or group the
    temporary file cannot take (another user's file), is written in place through its own inode
    instead (a rename would split the links or hand the file to us); its old bytes wait in a
    temporary sibling until the new ones are on disk, so an interrupted write loses nothing."""
    try:
        if path.read_bytes() != expected:
            raise FileProblem("the file changed while it was being rewritten")
        st = path.stat()
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    except OSError as exc:
        raise FileProblem(f"cannot write: {exc.strerror or exc}") from exc
    in_place = False
    try:
        with os.fdopen(fd, "wb") as handle:
            in_place = st.st_nlink > 1 or not _take_owner(handle.fileno(), st)
            handle.write(expected if in_place else data)
            handle.flush()
            os.fsync(handle.fileno())
        if in_place:
            with path.open("r+b") as target:
                target.write(data)
                target.truncate()
                target.flush()
                os.fsync(target.fileno())
            os.unlink(tmp)
        else:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            os.replace(tmp, path)
    except BaseException as exc:
        kept = ""
        if not in_place or _holds(path, expected):
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        else:
            kept = f"; its previous content is in {tmp}"
        if isinstance(exc, OSError):
            raise FileProblem(f"cannot write: {exc.strerror or exc}{kept}") from exc
        raise


def _holds(path: Path, data: bytes) -> bool:
    try:
        return path.read_bytes() == data
    except OSError:
        return False


def _take_owner(fd: int, st: os.stat_result) -> bool:
    """Give the temporary file `fd` the owner and group of the file it replaces; False if not allowed."""
    own = os.fstat(fd)
    if (own.st_uid, own.st_gid) == (st.st_uid, st.st_gid):
        return True
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
    except PermissionError:
        return False
    return True


# --- git guard --------------------------------------------------------------------------------


def git_top(path: Path) -> Path | None:
    """The git work tree holding `path` (a real path): the nearest directory above with `.git`."""
    for parent in path.parents:
        if (parent / ".git").exists():
            return parent
    return None


def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "--literal-pathspecs", *args], cwd=cwd, capture_output=True, check=False)
    except OSError as exc:
        raise NeuronMigrateError(
            f"{cwd} is inside a git work tree but git cannot run ({exc.strerror}); "
            "cannot tell whether files have uncommitted changes (use --allow-dirty to skip the check)"
        ) from exc


def uncommitted(paths: Iterable[Path]) -> dict[Path, str]:
    """Files among `paths` (real paths) that git does not have committed and unchanged, with why.

    `--ignored=traditional` with `--untracked-files=all` names each file inside an ignored
    directory (`--ignored=matching` names only the directory, which let those files through)."""
    by_top: dict[Path, list[Path]] = {}
    for path in paths:
        top = git_top(path)
        if top is not None:
            by_top.setdefault(top, []).append(path)
    dirty: dict[Path, str] = {}
    labels = {"?": "untracked", "!": "ignored by git, so not committed"}
    for top, files in by_top.items():
        for chunk in (files[i : i + 200] for i in range(0, len(files), 200)):
            rel = [os.path.relpath(p, top) for p in chunk]
            proc = _git(["status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=traditional", "--", *rel],
                        top)
            if proc.returncode != 0:
                message = proc.stderr.decode(errors="replace").strip()
                raise NeuronMigrateError(f"git status failed in {top}: {message}")
            wanted = set(chunk)
            fields = iter(proc.stdout.split(b"\0"))
            for entry in fields:
                if len(entry) < 4:
                    continue
                xy, name = entry[:2].decode(), entry[3:].decode(errors="surrogateescape")
                if "R" in xy or "C" in xy:
                    next(fields, None)  # a rename or copy is followed by its source path
                target = (top / name).resolve()
                if target in wanted:
                    dirty[target] = labels.get(xy[0], "has uncommitted changes")
    return dirty
