"""`match.project_modules`: imports of the scanned project's own modules, kept (`scan.project`,
fact `kernel-module`) where the imported module is one in which a listed rule reports: a module
that defines Triton kernels or loads the project's CUDA extension, imported under an ordinary
name (`from .ops import fused_add`).

Every Python file is read for them, also one the prefilter lets through unparsed (an importer
needs no CUDA word of its own), so the imports are found in the text: a statement that starts a
line with `from .` (relative), or `from P` / `import P` where `P` is a directory the file sits in
(its own package) or one of the project's top-level packages and modules (`top_level`: a script at
the root importing `kernels.softmax`). Text in a string that looks like such a statement can be one
too; it is then reported only if it names a kernel module of the project.
"""

from __future__ import annotations

import ast
import functools
import os
import posixpath
import re
from collections.abc import Callable, Iterable

from neuron_migrate.findings import Finding, Span
from neuron_migrate.ruleset.model import Rule

_COMMENT = re.compile(r"#[^\n]*")  # inside a parenthesised name list (no strings in an import)
# From a line's start: an import statement up to the end of its logical line (a parenthesised
# name list may span lines; a backslash continuation is not followed).
_STATEMENT = re.compile(r"[ \t]*(?:from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)|import[ \t]+([^\n#;]*))")


def top_level(root: str) -> tuple[str, ...]:
    """The packages (directories with an `__init__.py`) and modules at the root of the project and
    of its `src/`: what a script at the root imports by its bare name."""
    names: set[str] = set()
    for base in (root, os.path.join(root, "src")):
        try:
            entries = list(os.scandir(base))
        except OSError:
            continue
        for e in entries:
            name = e.name.removesuffix(".py")
            if not name.isidentifier():
                continue
            try:
                if (e.name.endswith(".py") and e.is_file()) or (
                        e.is_dir() and os.path.isfile(os.path.join(e.path, "__init__.py"))):
                    names.add(name)
            except OSError:
                continue
    return tuple(sorted(names))


def import_sites(text: str, rel: str, top: Iterable[str] = ()) -> list[tuple[int, int, int, str, str]]:
    """(line, start column, end column, statement, the line's text) of each import of the
    project's own modules in `text`, the file at `rel` (`top`: the project's top-level names); the
    statement in one line, as it can be parsed alone."""
    packages = {p for p in posixpath.dirname(rel).split("/") if p.isidentifier()}.union(top)
    return import_statements(text, lambda m: _own(m, packages))


def import_statements(text: str, keep: Callable[[re.Match[str]], bool]) -> list[tuple[int, int, int, str, str]]:
    """`import_sites` of the import statements `keep` accepts (given `_STATEMENT`'s match: group 1
    the `from` module, 2 its names, 3 the `import` names). Every import statement has the word
    `import` on its first line: the text is searched for that word only."""
    out = []
    seen = -1
    i = text.find("import")
    while i >= 0:
        start = text.rfind("\n", 0, i) + 1
        if start != seen:
            seen = start
            m = _STATEMENT.match(text, start)
            if m is not None and m.end() > i and keep(m):
                statement = " ".join(_COMMENT.sub("", m.group(0)).split()).replace("( ", "(").replace(" )", ")")
                if parsed(statement) is not None:
                    nl = text.find("\n", start)
                    first = text[start:nl if nl >= 0 else len(text)]
                    col = len(first) - len(first.lstrip(" \t"))
                    out.append((text.count("\n", 0, start) + 1, col, len(first.rstrip()), statement, first))
        i = text.find("import", i + 6)
    return out


def _own(m: re.Match[str], packages: set[str]) -> bool:
    """Whether the statement `_STATEMENT` matched imports a relative module or one of `packages`."""
    module = m.group(1)
    if module is not None:
        return module.startswith(".") or module.partition(".")[0] in packages
    return any(name.split()[0].partition(".")[0] in packages for name in m.group(3).split(",") if name.split())


@functools.lru_cache(maxsize=4096)  # the same statements recur across a project's files; callers only read
def parsed(statement: str) -> ast.Import | ast.ImportFrom | None:
    try:
        node = ast.parse(statement).body[0]
    except (SyntaxError, ValueError, IndexError):
        return None
    return node if isinstance(node, (ast.Import, ast.ImportFrom)) else None


def targets(rel: str, statement: str, is_package: Callable[[str], bool] | None = None) -> list[str]:
    """The files of the project (relative to the scan root, like `rel`) the import may load: each
    module it names as a file or a package, and each imported name as a submodule. `is_package`:
    whether a directory (relative to the root) holds an `__init__.py`; without it, a top-level
    name is looked for at the root and in its `src/` only."""
    node = parsed(statement)
    if node is None:
        return []
    here = posixpath.dirname(rel)
    modules: list[tuple[str, list[str]]] = []  # (a module's path, names that may be its submodules)
    if isinstance(node, ast.ImportFrom):
        names = [a.name for a in node.names if a.name != "*"]
        dotted = node.module.split(".") if node.module else []
        if node.level:
            base = here
            for _ in range(node.level - 1):
                base = posixpath.dirname(base)
            modules.append((posixpath.join(base, *dotted), names))
        else:
            modules += [(posixpath.join(b, *dotted), names) for b in _bases(here, dotted[0], is_package)]
    else:
        for a in node.names:
            modules += [(posixpath.join(b, *a.name.split(".")), []) for b in _bases(here, a.name.partition(".")[0], is_package)]
    stems = [s for module, names in modules for s in (module, *(posixpath.join(module, n) for n in names))]
    return [f for s in stems for f in (f"{s}.py", f"{s}/__init__.py")]


def _bases(here: str, top: str, is_package: Callable[[str], bool] | None) -> list[str]:
    """Where package `top` may sit: the nearest of the file's directories named so, unless it is a
    subpackage (`import triton` in `pkg/kernel/triton/` is the library: a package's directory is on
    no import path); else a directory above the file that is no package (a script's own, a nested
    project's root), the project's root or its `src/`."""
    parts = here.split("/") if here else []
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] == top:
            parent = "/".join(parts[:i])
            if parent and is_package is not None and is_package(parent):
                continue
            return [parent]
    if is_package is None:
        return ["", "src"]
    above = ["/".join(parts[:i]) for i in range(len(parts), 0, -1)]
    return list(dict.fromkeys([*(d for d in above if not is_package(d)), "", "src"]))


def candidate_findings(text: str, rel: str, rules: Iterable[Rule], top: Iterable[str] = ()) -> list[Finding]:
    """One finding per rule per own-module import; `scan.project` keeps those naming a kernel module."""
    sites = import_sites(text, rel, top)
    if not sites:
        return []
    return [rule.finding(rel, Span(line, col, line, end), statement, first, line)
            for rule in rules for line, col, end, statement, first in sites]
