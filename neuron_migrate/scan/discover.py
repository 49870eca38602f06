"""Which files a scan reads: walk the given paths, honour .gitignore files and excludes, stay inside
the root, and list every candidate once, in a deterministic order, with its `stat`.

Candidates are `.py`, `.pyi` and `.ipynb` files plus files matched by the pack's `match.files`
globs (`*.cu`) and, when the pack reads them, dependency files (`requirements.txt`,
`pyproject.toml`, ...: `scan.matchers.requirements`), YAML configuration files
(`scan.matchers.configs`) and shell scripts (`scan.matchers.shell`); a file without a suffix is
Python or a shell script when its `#!` line says so. A path given explicitly is always scanned
(unless an `exclude` glob names it), whatever its suffix or .gitignore says: a YAML file as a
configuration file, a `.txt` or `.in` file as requirements, a script by its `#!` line, anything
else as Python.
Directory symlinks are not followed (their targets inside the root are walked directly, as git
does); one that points at its own ancestor is a loop and is reported once (NM003). File symlinks
are followed when their target is inside the root. Version-control, virtual-environment, cache
and build-output directories are not walked (`DEFAULT_EXCLUDED_DIRS`), except a `build` or
`dist` that is a Python package.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat as stat_mod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from neuron_migrate.errors import NeuronMigrateError
from neuron_migrate.scan.diagnostics import UNREADABLE, Diagnosis
from neuron_migrate.scan.matchers.configs import CONFIG_NAMES, is_config_file
from neuron_migrate.scan.matchers.requirements import DEPENDENCY_NAMES, is_dependency_file
from neuron_migrate.scan.matchers.shell import SHELL_NAMES, is_shell_script

if TYPE_CHECKING:
    import pathspec

PYTHON_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIX = ".ipynb"
DEFAULT_EXCLUDED_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "node_modules", "build", "dist", ".tox",
    ".nox", ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints",
    ".neuron-migrate-cache",
})
# Names of build outputs that are also names of source packages (`mmengine/dist`, the
# distributed-training helpers): such a directory is scanned when it is a package.
OUTPUT_DIRS = frozenset({"build", "dist"})
# A `#!` line that runs a POSIX shell or Python (`#!/bin/bash`, `#!/usr/bin/env python3`).
_SHEBANG = re.compile(rb"#![ \t]*(?:/usr)?(?:/local)?/bin/(?:env[ \t]+)?(?:((?:ba|da|z)?sh)|python[0-9.]*)\b")


@dataclass(frozen=True, slots=True)
class Candidate:
    rel: str  # POSIX path relative to the root: the Finding path and the cache key
    path: str  # where to read it (the link itself for a followed symlink)
    kind: str  # "python", "notebook", or "other" (only file-level rules apply)
    file_level: bool  # matched by a rule's `match.files` glob
    mtime_ns: int
    size: int
    mode: int
    ctime_ns: int = 0  # with the inode, what a restored mtime cannot fake (scan.cache)
    inode: int = 0


@dataclass(slots=True)
class Discovery:
    root: str
    files: list[Candidate] = field(default_factory=list)
    problems: list[tuple[str, Diagnosis]] = field(default_factory=list)  # (rel path, NM003)
    scopes: list[str] = field(default_factory=list)  # the given paths, relative ("" = the root)


def choose_root(paths: Sequence[Path], root: Path | None = None) -> str:
    """The directory finding paths are relative to.

    An explicit `root` wins; a single directory is its own root; otherwise the current directory
    when it holds every path (so `scan a.py b/c.py` reports them as given), else their common
    ancestor.
    """
    if not paths:
        raise NeuronMigrateError("no paths to scan")
    absolute = [os.path.abspath(p) for p in paths]
    for given, ab in zip(paths, absolute, strict=True):
        if not os.path.lexists(ab):
            raise NeuronMigrateError(f"{given}: no such file or directory")
    if root is not None:
        top = os.path.abspath(root)
        outside = [str(g) for g, ab in zip(paths, absolute, strict=True) if not _is_within(ab, top)]
        if outside:
            raise NeuronMigrateError(f"{outside[0]}: not inside the scan root {top}")
        return top
    if len(absolute) == 1 and os.path.isdir(absolute[0]):
        return absolute[0]
    cwd = os.getcwd()
    if all(_is_within(ab, cwd) for ab in absolute):
        return cwd
    return os.path.commonpath([ab if os.path.isdir(ab) else os.path.dirname(ab) for ab in absolute])


def discover(paths: Sequence[Path], *, root: str, file_globs: Sequence[str] = (),
             include: Sequence[str] = (), exclude: Sequence[str] = (),
             respect_gitignore: bool = True, dependencies: bool = False, configs: bool = False,
             scripts: bool = False) -> Discovery:
    """`dependencies`, `configs`, `scripts`: list the dependency files (`scan.matchers.requirements`),
    the YAML configuration files (`scan.matchers.configs`) and the shell scripts
    (`scan.matchers.shell`) too."""
    walker = _Walker(root, file_globs, include, exclude, respect_gitignore, dependencies, configs, scripts)
    for given in paths:
        ab = os.path.abspath(given)
        rel = _rel(ab, root)
        walker.result.scopes.append(rel)
        if os.path.isdir(ab):
            walker.walk_given_dir(ab, rel)
        else:
            walker.add_given_file(ab, rel)
    found = walker.result
    found.files.sort(key=lambda c: c.rel)
    found.problems.sort(key=lambda p: p[0])
    return found


class _Walker:
    def __init__(self, root: str, file_globs: Sequence[str], include: Sequence[str],
                 exclude: Sequence[str], respect_gitignore: bool, dependencies: bool = False,
                 configs: bool = False, scripts: bool = False) -> None:
        self.root_real = os.path.realpath(root)
        self.dependencies = dependencies
        self.configs = configs
        self.scripts = scripts
        self.result = Discovery(root)
        self.seen: set[str] = set()
        self.reported_loops: set[str] = set()
        # Globs without a slash match the file name, others the path relative to the root.
        self.name_glob = _compile_globs([g for g in file_globs if "/" not in g])
        self.path_glob = _compile_globs([g for g in file_globs if "/" in g])
        self.candidate_name = _glob_pattern(["*.py", "*.pyi", "*" + NOTEBOOK_SUFFIX, *(DEPENDENCY_NAMES if dependencies else ()),
                                            *(CONFIG_NAMES if configs else ()), *(SHELL_NAMES if scripts else ()),
                                            *(g for g in file_globs if "/" not in g)])
        self.include = _spec(include) if include else None
        self.exclude = _spec(exclude) if exclude else None
        self.respect_gitignore = respect_gitignore

    # -- given paths ------------------------------------------------------------------------
    def add_given_file(self, path: str, rel: str) -> None:
        if self.exclude is not None and self.exclude.match_file(rel):
            return
        name = os.path.basename(path)
        # Named explicitly: a YAML file is read as a configuration file wherever it is (a CI
        # workflow too), a shell script by its `#!` line; anything else as Python whatever its suffix.
        kind = _kind(name) or self._data_kind(rel)
        if kind is None and self.configs and name.lower().endswith((".yml", ".yaml")):
            kind = "config"
        if kind is None and self.dependencies and name.lower().endswith((".txt", ".in")):
            kind = "dependencies"  # pip's format (an egg-info `requires.txt`, `deps.in`), never Python
        if kind is None and self.scripts and _script_kind(path) == "shell":
            kind = "shell"
        self._add(path, rel, kind or "python", self._file_level(name, rel), given=True)

    def walk_given_dir(self, path: str, rel: str) -> None:
        ignores = self._ancestor_ignores(path) if self.respect_gitignore else []
        if any(ignore.verdict(path, True) for ignore in ignores):
            ignores = []  # asked for explicitly: an ignored tree is scanned, by its own rules only
        real = os.path.realpath(path)
        self._walk(path, real, rel, ignores, {real, *_parents(real)})

    # -- the walk ---------------------------------------------------------------------------
    def _walk(self, directory: str, real_dir: str, rel_dir: str, ignores: list[_Ignore],
              ancestors: set[str]) -> None:
        """`real_dir` is `directory` with links resolved; `ancestors` are the real paths above it."""
        try:
            with os.scandir(directory) as it:
                entries = list(it)  # unsorted: discover() sorts the result once
        except OSError as exc:
            self.result.problems.append((_printable(rel_dir or "."), _os_problem(exc)))
            return
        if self.respect_gitignore and any(e.name == ".gitignore" for e in entries):
            own = _Ignore.load(os.path.join(directory, ".gitignore"), directory)
            if own is not None:
                ignores = [*ignores, own]
        candidate = self.candidate_name.match
        prefix = rel_dir + "/" if rel_dir else ""
        # Any `.txt` or `.in` file of a `requirements/` directory is a requirements file.
        listed = self.dependencies and os.path.basename(directory) == "requirements"
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()  # follows links
                is_link = entry.is_symlink()
            except OSError:
                is_dir, is_link = False, True
            if is_dir:
                if (name in DEFAULT_EXCLUDED_DIRS or name.endswith(".egg-info")) and not (
                        name in OUTPUT_DIRS and os.path.isfile(os.path.join(entry.path, "__init__.py"))):
                    continue
                rel = prefix + name
                if self._ignored(entry.path, rel, ignores, is_dir=True):
                    continue
                if is_link:
                    self._directory_link(entry.path, rel, ancestors)
                    continue
                real = os.path.join(real_dir, name)
                self._walk(entry.path, real, rel, ignores, ancestors | {real})
                continue
            # A script without a suffix (`bin/launch`) is Python or a shell script by its `#!` line.
            script = _script_kind(entry.path) if "." not in name and not is_link else None
            if script == "shell" and not self.scripts:
                script = None
            if candidate(name) is None and self.path_glob is None and not listed and script is None:
                continue  # cheap name test first: most files in a tree are not candidates
            rel = prefix + name
            kind = _kind(name) or self._data_kind(rel) or script
            file_level = self._file_level(name, rel)
            if kind is None and not file_level:
                continue
            if (ignores or self.exclude is not None) and self._ignored(entry.path, rel, ignores, is_dir=False):
                continue
            if self.include is not None and not self.include.match_file(rel):
                continue
            if is_link and not _is_within(os.path.realpath(entry.path), self.root_real):
                continue  # never read outside the root
            self._add(entry.path, rel, kind or "other", file_level)

    def _directory_link(self, path: str, rel: str, ancestors: set[str]) -> None:
        target = os.path.realpath(path)
        if target in ancestors and rel not in self.reported_loops:
            self.reported_loops.add(rel)
            shown = _printable(rel)
            self.result.problems.append(
                (shown, Diagnosis(UNREADABLE, f"symlink loop: {shown} -> {_printable(os.readlink(path))}")))

    def _add(self, path: str, rel: str, kind: str, file_level: bool, *, given: bool = False) -> None:
        if rel in self.seen:  # the same file reached twice (a path given twice, or nested paths)
            return
        self.seen.add(rel)
        try:
            st = os.stat(path)
        except OSError as exc:
            self.result.problems.append((_printable(rel), _os_problem(exc)))
            return
        if not stat_mod.S_ISREG(st.st_mode):  # fifo, socket, device: never read
            if given:  # named on the command line: say why it was not scanned
                self.result.problems.append(
                    (_printable(rel), Diagnosis(UNREADABLE, f"not a regular file ({_file_type(st.st_mode)})")))
            return
        self.result.files.append(
            Candidate(_printable(rel), path, kind, file_level, st.st_mtime_ns, st.st_size, st.st_mode,
                      st.st_ctime_ns, st.st_ino))

    def _ignored(self, path: str, rel: str, ignores: list[_Ignore], *, is_dir: bool) -> bool:
        if self.exclude is not None and self.exclude.match_file(rel + "/" if is_dir else rel):
            return True
        for ignore in reversed(ignores):  # the deepest .gitignore with an opinion decides
            verdict = ignore.verdict(path, is_dir)
            if verdict is not None:
                return verdict
        return False

    def _data_kind(self, rel: str) -> str | None:
        """The kind of a file that is not Python: a dependency file, a shell script or a YAML
        configuration file (None: none of them, or one the pack does not read)."""
        if self.dependencies and is_dependency_file(rel):
            return "dependencies"
        if self.scripts and is_shell_script(rel):
            return "shell"
        return "config" if self.configs and is_config_file(rel) else None

    def _file_level(self, name: str, rel: str) -> bool:
        return bool((self.name_glob is not None and self.name_glob.match(name))
                    or (self.path_glob is not None and self.path_glob.match(rel)))

    def _ancestor_ignores(self, directory: str) -> list[_Ignore]:
        """.gitignore files above a walked directory, up to the top of its git work tree."""
        chain: list[str] = []
        probe = directory
        while True:
            if os.path.exists(os.path.join(probe, ".git")):
                break
            parent = os.path.dirname(probe)
            if parent == probe:
                return []  # not in a git work tree: only .gitignore files inside the walk apply
            chain.append(parent)
            probe = parent
        ignores: list[_Ignore] = []
        top = probe
        info = _Ignore.load(os.path.join(top, ".git", "info", "exclude"), top)
        if info is not None:
            ignores.append(info)
        for d in reversed(chain):
            loaded = _Ignore.load(os.path.join(d, ".gitignore"), d)
            if loaded is not None:
                ignores.append(loaded)
        return ignores


@dataclass(frozen=True, slots=True)
class _Ignore:
    base: str  # the directory holding the .gitignore
    spec: pathspec.GitIgnoreSpec

    @classmethod
    def load(cls, file: str, base: str) -> _Ignore | None:
        try:
            with open(file, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return None
        spec = _spec(lines)
        return cls(base, spec) if spec.patterns else None

    def verdict(self, path: str, is_dir: bool) -> bool | None:
        rel = path[len(self.base) + 1:].replace(os.sep, "/")
        return self.spec.check_file(rel + "/" if is_dir else rel).include


def _spec(lines: Sequence[str]) -> pathspec.GitIgnoreSpec:
    """Lines of a .gitignore (or globs already validated by the config): a line that is no valid
    pattern (`[z-a]`) matches nothing, as in git."""
    import pathspec  # imported when a tree has .gitignore files or globs: it costs ~50 ms

    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (re.error, ValueError, TypeError):
        valid = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except (re.error, ValueError, TypeError):
                continue
            valid.append(line)
        return pathspec.GitIgnoreSpec.from_lines(valid)


def _file_type(mode: int) -> str:
    if stat_mod.S_ISFIFO(mode):
        return "a FIFO"
    if stat_mod.S_ISCHR(mode):
        return "a character device"
    if stat_mod.S_ISBLK(mode):
        return "a block device"
    if stat_mod.S_ISSOCK(mode):
        return "a socket"
    return "a directory" if stat_mod.S_ISDIR(mode) else "a special file"


def _glob_pattern(globs: Sequence[str]) -> re.Pattern[str]:
    return re.compile("|".join(fnmatch.translate(g.lstrip("/")) for g in sorted(set(globs))))


def _compile_globs(globs: Sequence[str]) -> re.Pattern[str] | None:
    return _glob_pattern(globs) if globs else None


def _script_kind(path: str) -> str | None:
    """"shell" or "python" for a file whose `#!` line runs a POSIX shell or Python, else None."""
    try:
        with open(path, "rb") as f:
            head = f.read(128)
    except OSError:
        return None
    m = _SHEBANG.match(head)
    return None if m is None else "shell" if m.group(1) else "python"


def _kind(name: str) -> str | None:
    if name.endswith(PYTHON_SUFFIXES):
        return "python"
    if name.endswith(NOTEBOOK_SUFFIX):
        return "notebook"
    return None


def _os_problem(exc: OSError) -> Diagnosis:
    if exc.errno == errno.ELOOP:
        return Diagnosis(UNREADABLE, "symlink loop")
    if exc.errno == errno.ENOENT:
        return Diagnosis(UNREADABLE, "broken symlink")
    if isinstance(exc, PermissionError):
        return Diagnosis(UNREADABLE, "permission denied")
    return Diagnosis(UNREADABLE, (exc.strerror or type(exc).__name__).lower())


def _rel(path: str, root: str) -> str:
    rel = os.path.relpath(path, root)
    return "" if rel == "." else rel.replace(os.sep, "/")


def _printable(rel: str) -> str:
    """`rel` as valid Unicode: a file name that is not UTF-8 (its bytes became lone surrogates)
    shows them as `\\xff` escapes, so reports, fingerprints and stdout can encode it."""
    try:
        rel.encode("utf-8")
        return rel
    except UnicodeEncodeError:
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _is_within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _parents(path: str) -> list[str]:
    out: list[str] = []
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return out
        out.append(parent)
        path = parent
