"""Facts about the scanned project that a finding may need (a rule's `project:` key), checked once
per scan after every file's findings are known (cached or not), so a changed build file changes
the result without invalidating any file's cache entry.

`cuda-build`: the project holding the file builds CUDA sources. The project is the nearest
directory, from the file's own up to the scan root, holding a build file (setup.py,
pyproject.toml, setup.cfg, CMakeLists.txt); its build compiles CUDA when one of them names
`CUDAExtension`, a `.cu` source, or CMake's CUDA language or toolkit. A finding for an import
of a compiled module (`from pkg import _C`) is kept only for a relative import or one of the
project's own packages (a directory or module beside the build file, or under its `src/`), so
`torch._C` and other installed packages' `_C` stay silent.

`kernel-module`: the import (`from .ops import fused_add`, the finding's symbol) loads a module of
the project in which a rule of `match.project_modules` reports, i.e. one that defines Triton
kernels or loads a CUDA extension (`scan.matchers.project_modules` finds the imports; the scan
tells which files are such modules, once every file's findings are known, cached or not).

`foreign`: the file is not inside the package the finding's library is (its symbol's first name):
gsplat's own `from gsplat.utils import log_transform` is the library's internal structure, not a
use of a CUDA-only library; its CUDA sites are reported where they are. A file beside the package
(its tests, examples, a training script) uses the library. Where no build file holds the file (an
unpacked wheel), a top-level package of that name around it (`unsloth/__init__.py`, not diffusers'
`quantizers/bitsandbytes/`) decides. The CUDA-word net (`match.tokens`) is decided after the fact:
on a line where such a finding stays, the specific rule describes the line and the net's finding
goes (`net_rows`); where it goes, the net's stays (`from mmcv.ops import get_compiling_cuda_version`
inside mmcv).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from neuron_migrate.findings import Finding
from neuron_migrate.ruleset.model import RulePack
from neuron_migrate.scan.matchers.project_modules import targets

__all__ = ["BUILD_FILES", "ProjectFacts", "conditional_codes", "cuda_net", "keep_findings", "keep_rows", "net_rows"]

BUILD_FILES = ("setup.py", "pyproject.toml", "setup.cfg", "CMakeLists.txt")
_MAX_BUILD_BYTES = 2 * 1024 * 1024
_PACKAGE_ITSELF = re.compile(r"from \.+ import ")
_CUDA_BUILD = re.compile(
    rb"CUDAExtension|\.cu['\"]|\*\.cu\b|enable_language\s*\(\s*CUDA|LANGUAGES[^)\n]*\bCUDA\b"
    rb"|find_package\s*\(\s*CUDA(?:Toolkit)?\b"
)


def conditional_codes(pack: RulePack) -> dict[str, str]:
    """Rule code -> the project fact its findings need, for the rules that have one."""
    return {code: rule.project for code, rule in pack.rules.items() if rule.project}


class ProjectFacts:
    """The facts of the projects under one scan root, each build directory read at most once."""

    def __init__(self, root: str, kernel_modules: Callable[[], set[str]] = set) -> None:
        """`kernel_modules`: the files (relative to the root) that are kernel modules, asked once
        when a `kernel-module` finding is first checked."""
        self.root = os.path.abspath(root)
        self._project: dict[str, str | None] = {}  # directory -> its project's build directory
        self._cuda: dict[str, bool] = {}  # build directory -> whether it builds CUDA
        self._find_kernels = kernel_modules
        self._kernels: set[str] | None = None
        self._kernel_names: frozenset[str] = frozenset()  # their module (or package) names
        self._foreign: dict[tuple[str, str], bool] = {}  # (directory, top-level name) -> `foreign`
        self._own: dict[tuple[str, str], bool] = {}  # (build directory, top-level name) -> its own package
        self._packages: dict[str, bool] = {}  # directory -> whether it is a package (`is_package`)

    def is_package(self, directory: str) -> bool:
        """Whether `directory` (relative to the root) holds an `__init__.py`."""
        hit = self._packages.get(directory)
        if hit is None:
            hit = self._packages[directory] = os.path.isfile(os.path.join(self.root, directory, "__init__.py"))
        return hit

    def holds(self, fact: str, rel: str, symbol: str) -> bool:
        """Whether `fact` holds for the finding with `symbol` in the file at `rel` (relative to the root)."""
        if fact == "kernel-module":
            if self._kernels is None:
                self._kernels = self._find_kernels()
                self._kernel_names = frozenset(_module_name(k) for k in self._kernels)
            # Most imports name no kernel module: only those that may are resolved (`from . import x`
            # loads its package's `__init__.py`, whose name it does not spell).
            if not _PACKAGE_ITSELF.match(symbol) and not any(n in symbol for n in self._kernel_names):
                return False
            return any(t != rel and t in self._kernels for t in targets(rel, symbol, self.is_package))
        if fact == "foreign":
            key = (os.path.dirname(rel), symbol.partition(".")[0])
            hit = self._foreign.get(key)
            if hit is None:
                hit = self._foreign[key] = self._outside(*key)
            return hit
        if fact != "cuda-build":
            return False
        build = self._project_dir(os.path.dirname(os.path.join(self.root, rel)))
        if build is None or not self._builds_cuda(build):
            return False
        if symbol.startswith("."):
            return True
        key = (build, symbol.partition(".")[0])
        own = self._own.get(key)
        if own is None:  # every `from torch._C import ...` of the project asks the same
            own = self._own[key] = _own_package(*key)
        return own

    def _outside(self, directory: str, top: str) -> bool:
        """Whether files of `directory` (relative to the root) lie outside the package `top` of
        their project (beside its build file, or under its `src/`)."""
        path = os.path.join(self.root, directory) if directory else self.root
        build = self._project_dir(path)
        if build is None:  # an unpacked wheel, a vendored copy: inside a top-level package `top`
            parts = directory.replace(os.sep, "/").split("/") if directory else []
            return not any(part == top and os.path.isfile(os.path.join(self.root, *parts[:i + 1], "__init__.py"))
                           and not os.path.isfile(os.path.join(self.root, *parts[:i], "__init__.py"))
                           for i, part in enumerate(parts))
        inside = os.path.relpath(path, build).replace(os.sep, "/") + "/"
        return not (inside.startswith(top + "/") or inside.startswith(f"src/{top}/"))

    def _project_dir(self, directory: str) -> str | None:
        seen: list[str] = []
        found: str | None = None
        d = directory
        while True:
            if d in self._project:
                found = self._project[d]
                break
            seen.append(d)
            if any(os.path.isfile(os.path.join(d, name)) for name in BUILD_FILES):
                found = d
                break
            parent = os.path.dirname(d)
            if d == self.root or parent == d or not d.startswith(self.root):
                break
            d = parent
        for s in seen:
            self._project[s] = found
        return found

    def _builds_cuda(self, build: str) -> bool:
        hit = self._cuda.get(build)
        if hit is None:
            hit = self._cuda[build] = any(_CUDA_BUILD.search(_head(os.path.join(build, n))) for n in BUILD_FILES)
        return hit


def _module_name(rel: str) -> str:
    """`pkg/ops.py` -> "ops"; `pkg/sub/__init__.py` -> "sub"."""
    parts = rel.removesuffix(".py").split("/")
    return parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]


def _head(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(_MAX_BUILD_BYTES)
    except OSError:  # absent or unreadable: it builds nothing we can see
        return b""


def _own_package(build: str, top: str) -> bool:
    if not top:
        return False
    if any(os.path.isdir(os.path.join(base, top)) or os.path.isfile(os.path.join(base, top + ".py"))
           for base in (build, os.path.join(build, "src"))):
        return True
    # A package the build maps to another directory (Pointcept's `package_dir={"pointops":
    # "functions"}`) or whose extension it names (`CUDAExtension(name="pointops._C")`).
    declares = re.compile(rb"""package_dir\s*=\s*\{[^}]*["']%s["']\s*:|["']%s\._C["']""" % ((re.escape(top.encode()),) * 2))
    return declares.search(_head(os.path.join(build, "setup.py"))) is not None


def keep_rows(rows: Sequence[Any], rel: str, facts: ProjectFacts, needs: dict[str, str],
              code_at: int, symbol_at: int) -> Sequence[Any] | None:
    """`rows` less the findings whose project fact does not hold; None when nothing is dropped."""
    if not any(row[code_at] in needs for row in rows):
        return None
    kept = [row for row in rows
            if row[code_at] not in needs or facts.holds(needs[row[code_at]], rel, row[symbol_at])]
    return kept if len(kept) != len(rows) else None



def cuda_net(pack: RulePack) -> tuple[Callable[[str], bool], frozenset[str]]:
    """The CUDA-word net of a pack for `net_rows`: whether a text holds a CUDA word, and its codes."""
    from neuron_migrate.scan.matchers.tokens import TokenTable

    rules = [rule for rule in pack.rules.values() if rule.match.tokens]
    words = TokenTable(rules)
    return (lambda text: words.name(text) is not None), frozenset(rule.code for rule in rules)


def net_rows(rows: Sequence[Any], kept: Sequence[Any], needs: dict[str, str], net: Callable[[str], bool],
             net_codes: frozenset[str], at: tuple[int, int, int, int]) -> Sequence[Any]:
    """The `kept` rows (of `rows`, spans as tuples, line first; `at`: the indexes of code, symbol,
    span and cell) less the CUDA-word net's (`net_codes`) on a line where a finding with a project
    fact (`needs`: code -> fact) stayed, the specific rule describing the line; and on a line where a `foreign` finding
    went, when its library's own name is the only CUDA word in the net's symbol
    (`from flash_attn.bert_padding import pad_input` inside flash_attn; `net`: whether a text
    holds a CUDA word). The analysis reports the net beside the `foreign` rules, as the fact may
    drop the specific finding."""
    code_at, symbol_at, span_at, cell_at = at
    described = {(row[cell_at], row[span_at][0]) for row in kept if row[code_at] in needs}
    gone: dict[tuple[Any, int], str] = {}
    if len(kept) != len(rows):
        survivors = {id(row) for row in kept}
        for row in rows:
            if id(row) not in survivors and needs.get(row[code_at]) == "foreign":
                gone[(row[cell_at], row[span_at][0])] = row[symbol_at].partition(".")[0]

    def redundant(row: Any) -> bool:
        place = (row[cell_at], row[span_at][0])
        if place in described:
            return True
        top = gone.get(place)
        if top is None:
            return False
        symbol = row[symbol_at]
        return symbol == top or (symbol.startswith(top + ".") and not net(symbol[len(top) + 1:]))

    if not described and not gone:
        return kept
    return [row for row in kept if row[code_at] not in net_codes or not redundant(row)]


def keep_findings(findings: list[Finding], rel: str, facts: ProjectFacts, needs: dict[str, str],
                  net: Callable[[str], bool], net_codes: frozenset[str]) -> list[Finding]:
    """`findings` less those whose project fact does not hold, and the net's made redundant
    (`net_rows`)."""
    rows = [(f.code, f.symbol, (f.span.line,), f.cell, f) for f in findings]
    kept = [r for r in rows if r[0] not in needs or facts.holds(needs[r[0]], rel, r[1])]
    return [r[4] for r in net_rows(rows, kept, needs, net, net_codes, (0, 1, 2, 3))]
