"""The scan cache (ruff-style): one file per scan root, raw results per file, verified hits.

Layout: `<cache_dir>/scan-<hash of root>.marshal` holding `(FORMAT, key, {rel: entry})`, where
`key` covers the tool version, the Python version, the rule-pack digest, the size limit, the row
layouts (`scan.rows`, derived from the Finding and Fix fields) and the scan code itself (so an
edited analyser in a development checkout never serves stale results), and
`entry = (mtime_ns, ctime_ns, size, mode, inode, digest, checked_ns, finding rows, directive rows)`.
Findings are stored before selection, suppression and baseline, so none of those options
invalidates it.

A hit must be the same content, not only the same `stat`: `cp -p`, `rsync -a` and `tar` restore
a same-size edit's mtime. They cannot restore the ctime, which the kernel sets on every change, so
an entry is served on `stat` alone (no reading) only when mtime, ctime, size, mode and inode all
match and the ctime is older than the moment the entry was checked by more than `RACY_NS` (git's
"racily clean" rule: a change within the same clock tick as the scan would keep the ctime). Any
other candidate is read and its BLAKE2 digest compared with the entry's; a match is a hit (and
the entry is refreshed), anything else a miss.

The file is data from disk, never trusted: it is read only if it is a regular file owned by this
user and writable by nobody else (another user's cache in a shared directory is ignored with a
warning), every entry is checked for shape and types before it is served (a malformed one is a
miss), and `rewrite` never takes fix edits from it (`scan_paths(cached_fixes=False)` re-analyses
those files). marshal is used because it loads plain tuples several times faster than pickle or
JSON (measured: 20k findings with fixes, 65 ms vs 100 ms pickle vs 1.1 s JSON); it only builds
plain values, and the key pins the Python version it depends on.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from neuron_migrate import __version__
from neuron_migrate.scan.rows import FINDING_FIELDS, FIX_FIELDS

FORMAT = 2
CACHE_DIR_NAME = ".neuron-migrate-cache"
ENV_CACHE_DIR = "NEURON_MIGRATE_CACHE_DIR"
# A file changed less than this before its entry was checked may change again with the same ctime.
RACY_NS = 2_000_000_000
MAX_CACHE_BYTES = 1 << 30  # a bigger file is not a cache we wrote

Entry = tuple[Any, ...]  # (mtime_ns, ctime_ns, size, mode, inode, digest, checked_ns, rows, directive rows)
ROWS, DIRECTIVES = 7, 8


def default_cache_dir(root: str) -> Path:
    env = os.environ.get(ENV_CACHE_DIR)
    return Path(env) if env else Path(root) / CACHE_DIR_NAME


def cache_key(pack_digest: str, max_file_size: int, project: tuple[str, ...] = (),
              extensions: tuple[str, ...] = ()) -> str:
    """`project` and `extensions`: facts about the project that a file's raw findings depend on
    (its top-level package names: which imports are its own, `scan.matchers.project_modules`;
    the compiled modules its build declares, `scan.matchers.extensions`)."""
    parts = (__version__, sys.implementation.cache_tag or "", sys.version, pack_digest,
             str(max_file_size), ",".join(FINDING_FIELDS), ",".join(FIX_FIELDS), _code_stamp(), ",".join(project),
             ",".join(extensions))
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def digest(data: bytes) -> bytes:
    """The content digest an entry is verified with (BLAKE2b-128: ~1 GB/s, not a security hash's
    job here: whoever can change the source can change its findings)."""
    return hashlib.blake2b(data, digest_size=16).digest()


def file_digest(path: str, size: int) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(size + 1)
    except OSError:
        return None
    return digest(data) if len(data) == size else None


class ScanCache:
    def __init__(self, root: str, cache_dir: Path, key: str) -> None:
        self.dir = cache_dir
        self.file = cache_dir / f"scan-{hashlib.sha256(os.fsencode(root)).hexdigest()[:16]}.marshal"
        self.key = key
        self.entries: dict[str, Entry] = {}
        self.warnings: list[str] = []
        self.refreshed = False  # an entry was verified by content and re-stamped: save the cache

    def load(self) -> None:
        """Read the cache; a missing one is empty, a corrupt, foreign or unsafe one warns and is rebuilt."""
        try:
            data = self._read()
        except (FileNotFoundError, NotADirectoryError):
            return  # no cache yet (an unusable cache directory is reported when saving)
        except _Refused as exc:
            self.warnings.append(f"ignoring the scan cache {self.file}: {exc}")
            return
        except OSError as exc:
            self.warnings.append(f"cannot read the scan cache {self.file}: {exc.strerror}; rebuilding it")
            return
        try:
            fmt, key, entries = marshal.loads(data)
            if fmt != FORMAT or not isinstance(entries, dict):
                raise ValueError("unknown layout")
        except (ValueError, EOFError, TypeError) as exc:
            self.warnings.append(f"the scan cache {self.file} is corrupt ({exc}); rebuilding it")
            return
        if key == self.key:  # otherwise: another tool, Python or pack version: start afresh
            self.entries = entries

    def _read(self) -> bytes:
        """The cache file's bytes, if it is a regular file of ours that nobody else can write."""
        fd = os.open(self.file, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise _Refused("not a regular file")
            if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
                raise _Refused(f"it belongs to another user (uid {st.st_uid})")
            if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                raise _Refused("other users can write it")
            if st.st_size > MAX_CACHE_BYTES:
                raise _Refused("too large")
            with os.fdopen(fd, "rb", closefd=False) as fh:
                return fh.read()
        finally:
            os.close(fd)

    def lookup(self, rel: str, path: str, mtime_ns: int, ctime_ns: int, size: int, mode: int, inode: int,
               checked_ns: int) -> Entry | None:
        """The entry for `rel` if it describes the file's current content, else None (a miss).
        `checked_ns` is when the file's `stat` was taken (the start of the scan)."""
        entry = self.entries.get(rel)
        if entry is None or not valid_entry(entry):
            return None
        if (entry[0] == mtime_ns and entry[1] == ctime_ns and entry[2] == size and entry[3] == mode
                and entry[4] == inode and ctime_ns < entry[6] - RACY_NS):
            return entry
        if entry[2] != size or entry[5] is None or file_digest(path, size) != entry[5]:
            return None
        self.refreshed = True
        return (mtime_ns, ctime_ns, size, mode, inode, entry[5], checked_ns, entry[ROWS], entry[DIRECTIVES])

    def save(self, entries: dict[str, Entry]) -> None:
        """Replace the cache atomically (temp file + rename); failing to write only warns."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            _write_gitignore(self.dir / ".gitignore")
            fd, tmp = tempfile.mkstemp(prefix=self.file.name, suffix=".tmp", dir=self.dir)  # mode 0600
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(marshal.dumps((FORMAT, self.key, entries)))
                os.replace(tmp, self.file)
            except BaseException:
                os.unlink(tmp)
                raise
        except (OSError, ValueError) as exc:  # ValueError: an unmarshallable value in `details`
            self.warnings.append(f"cannot write the scan cache {self.file}: {exc}")
        else:
            self.entries = entries


class _Refused(Exception):
    """The cache file is not one this process may trust."""


def _write_gitignore(path: Path) -> None:
    """Create the cache directory's .gitignore, never following a link planted in its place."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("# created by neuron-migrate\n*\n")


# -- entry validation: every value served from the file has the type the rows hold ---------------

_SEVERITIES = frozenset({"error", "warning", "info"})
_FIX_CLASSES = frozenset({"safe", "unsafe", "manual", "none"})
_TARGETS = frozenset({"neuron", "accelerator"})


def _strs(x: Any) -> bool:
    if type(x) is not tuple:
        return False
    for s in x:
        if type(s) is not str:
            return False
    return True


def _span(x: Any) -> bool:
    return (type(x) is tuple and len(x) == 4 and type(x[0]) is int and type(x[1]) is int
            and type(x[2]) is int and type(x[3]) is int)


def _plain(x: Any, depth: int = 0) -> bool:
    """A JSON-like value (what `details` holds), bounded in depth."""
    kind = type(x)
    if x is None or kind is str or kind is int or kind is float or kind is bool:
        return True
    if depth > 20:
        return False
    if kind is list or kind is tuple:
        return all(_plain(v, depth + 1) for v in x)
    if kind is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in x.items())
    return False


# The field order the validators below unpack (tests/scan/test_engine.py: the same as scan.rows').
FINDING_ROW = ("code", "severity", "fix_class", "category", "span", "message", "source_line", "symbol",
               "fixes", "cell", "statement_line", "details", "fingerprint")
FIX_ROW = ("target", "applicability", "title", "edits", "add_imports", "remove_imports")


def _fix_row(r: Any) -> bool:
    if not (type(r) is tuple and len(r) == 6 and type(r[0]) is str and r[0] in _TARGETS
            and type(r[1]) is str and r[1] in _FIX_CLASSES and type(r[2]) is str and type(r[3]) is tuple
            and _strs(r[4]) and _strs(r[5])):
        return False
    for e in r[3]:
        if not (type(e) is tuple and len(e) == 2 and _span(e[0]) and type(e[1]) is str):
            return False
    return True


def valid_finding_row(r: Any) -> bool:
    """The shape `scan.rows.finding_to_row` writes (FINDING_ROW). Written out flat: a warm scan of
    a large tree checks tens of thousands of rows."""
    if type(r) is not tuple or len(r) != 13:
        return False
    code, severity, fix_class, category, span, message, source_line, symbol, fixes, cell, statement, details, fp = r
    if not (type(code) is str and type(severity) is str and severity in _SEVERITIES and type(fix_class) is str
            and fix_class in _FIX_CLASSES and type(category) is str and type(message) is str
            and type(source_line) is str and type(symbol) is str and type(fp) is str and _span(span)
            and (cell is None or type(cell) is int) and (statement is None or type(statement) is int)
            and type(fixes) is tuple):
        return False
    for fix in fixes:
        if not _fix_row(fix):
            return False
    return details is None or (type(details) is dict and _plain(details))


def valid_directive_row(r: Any) -> bool:
    """The shape `scan.rows.directive_to_row` writes."""
    return (type(r) is tuple and len(r) == 4 and type(r[0]) is int and (r[1] is None or _strs(r[1]))
            and (r[2] is None or type(r[2]) is int) and (r[3] is None or type(r[3]) is str))


def valid_entry(entry: Any) -> bool:
    if not (type(entry) is tuple and len(entry) == 9 and type(entry[0]) is int and type(entry[1]) is int
            and type(entry[2]) is int and type(entry[3]) is int and type(entry[4]) is int
            and (entry[5] is None or type(entry[5]) is bytes) and type(entry[6]) is int
            and type(entry[ROWS]) is tuple and type(entry[DIRECTIVES]) is tuple):
        return False
    for row in entry[ROWS]:
        if not valid_finding_row(row):
            return False
    for row in entry[DIRECTIVES]:
        if not valid_directive_row(row):
            return False
    return True


def has_fixes(entry: Entry) -> bool:
    """Whether any finding of the entry carries a fix (edit text `rewrite` must not take from disk)."""
    return any(row[8] for row in entry[ROWS])


def _code_stamp() -> str:
    """Size and mtime of the modules that produce findings (cheap: a few dozen `stat` calls)."""
    package = Path(__file__).resolve().parent.parent
    stamps = []
    for sub in ("scan", "ruleset"):
        for path in sorted((package / sub).rglob("*.py")):
            st = path.stat()
            stamps.append(f"{path.relative_to(package)}:{st.st_mtime_ns}:{st.st_size}")
    st = (package / "findings.py").stat()
    stamps.append(f"findings.py:{st.st_mtime_ns}:{st.st_size}")
    return ";".join(stamps)
