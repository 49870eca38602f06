"""`match.extensions`: imports of a compiled module that the scanned project's own build script
declares with one of the rule's builders (`CUDAExtension(name="fused_dense_lib", ...)`, or a
`CppExtension` with `.cu` sources, which `BuildExtension` compiles with nvcc all the same): the
import names no CUDA word (`import fused_dense_lib as fused_dense_cuda`), yet every call through
it runs the CUDA kernels the build compiled.

The declared names are read once per scan from the build scripts among the scanned files
(`setup.py`, `setup_*.py`, at any depth: a repository often builds each extension from its own
`csrc/<ext>/setup.py`) and are part of the cache key, so a changed declaration re-reads every
file. A name is a string literal (`name=` or the first argument; an f-string without fields
too) or a module-level name assigned one; anything computed (`f"{pkg}._C"`) is not read. A
function of the script that calls a builder declares through its calls too (`make_cuda_ext(name="nms_ext", module="pkg.ops")`:
`pkg.ops.nms_ext`). `_C` modules are NM724's (`match.imports`),
so they are left out here. Like `scan.matchers.project_modules`, the imports are found in the text
of every Python file (an importer needs no CUDA word), so a line of a string that reads as such an
import statement counts too.
"""

from __future__ import annotations

import ast
import posixpath
import re
import warnings
from collections.abc import Collection, Iterable, Mapping

from neuron_migrate.findings import Finding, Span
from neuron_migrate.ruleset.model import Rule
from neuron_migrate.scan.matchers.project_modules import import_statements, parsed

__all__ = ["build_script", "declared_extensions", "extension_findings"]

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def build_script(rel: str) -> bool:
    """Whether the file at `rel` is a build script the declarations are read from."""
    name = posixpath.basename(rel)
    return name == "setup.py" or (name.startswith("setup_") and name.endswith(".py"))


def declared_extensions(sources: Iterable[tuple[str, str]], builders: Collection[str],
                        packages: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The module names the build scripts' `sources` ((path, text) pairs) declare with a call of
    one of `builders` (by its last name: `CUDAExtension`, `cpp_extension.CUDAExtension`), sorted.
    A script below the root that builds in place also declares a module of its own directory
    (`ops/dcn/setup.py` declaring `deform_conv_cuda`: `ops.dcn.deform_conv_cuda`, which its
    package imports as `from .. import deform_conv_cuda`), spelled from its outermost package
    when `packages` knows it (a script's path -> its directory as a dotted module), so that the
    name does not depend on the directory the scan was started from. A script that does not
    parse declares nothing (the scan reports its syntax error)."""
    names: set[str] = set()
    for rel, source in sources:
        directory = (packages or {}).get(rel) or posixpath.dirname(rel).replace("/", ".")
        declared = _declared(source, builders)
        names |= declared
        if directory and _DOTTED.fullmatch(directory):
            names |= {f"{directory}.{name}" for name in declared if "." not in name}
    return tuple(sorted(names))


def _declared(source: str, builders: Collection[str]) -> set[str]:
    """The names one build script declares."""
    if not any(b in source for b in builders) and not (_CPP_BUILDER in source and ".cu" in source):
        return set()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names: set[str] = set()
    constants = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                 for t in node.targets if isinstance(t, ast.Name)}
    # A script's own function that uses a builder declares with its `name` (and `module`, the
    # OpenMMLab helper `make_cuda_ext(name="nms_ext", module="pkg.ops.nms", sources=[...])`,
    # which calls `CUDAExtension` or, without CUDA, `CppExtension` through a variable).
    wrappers = {fn.name: [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)] for fn in ast.walk(tree)
                if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
                and any(isinstance(n, ast.Name | ast.Attribute) and _callee(n) in builders for n in ast.walk(fn))}
    # A builder called through a name of the script's own (Deformable-DETR's `get_extensions`:
    # `extension = CUDAExtension` when CUDA is there, then `extension("MultiScaleDeformableAttention", ...)`).
    aliases = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and isinstance(node.value, ast.Name | ast.Attribute) and _callee(node.value) in builders
               for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = _callee(node.func)
        if callee in builders or callee in aliases or (callee == _CPP_BUILDER and _cuda_sources(node)):
            name = _name_argument(node, constants)
        elif callee in wrappers:
            name = _argument(node, "name", wrappers[callee], constants)
            module = _argument(node, "module", wrappers[callee], constants)
            if name is not None and module is not None and _DOTTED.fullmatch(module):
                name = f"{module}.{name}"
        else:
            continue
        if name is not None and _DOTTED.fullmatch(name) and name.rpartition(".")[2] != "_C":
            names.add(name)
    return names


# A C++ extension with CUDA sources: `BuildExtension` compiles its `.cu` files with nvcc (fairseq's
# `CppExtension("fairseq.libnat_cuda", sources=["edit_dist.cu", "binding.cpp"])`).
_CPP_BUILDER = "CppExtension"


def _cuda_sources(call: ast.Call) -> bool:
    """Whether the call's sources (second argument or `sources=`) list a `.cu`/`.cuh` file."""
    sources = next((k.value for k in call.keywords if k.arg == "sources"), call.args[1] if len(call.args) > 1 else None)
    return isinstance(sources, ast.List | ast.Tuple) and any(
        isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value.endswith((".cu", ".cuh")) for e in sources.elts)


def _callee(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _name_argument(call: ast.Call, constants: dict[str, str]) -> str | None:
    value = next((k.value for k in call.keywords if k.arg == "name"), call.args[0] if call.args else None)
    return _string(value, constants)


def _argument(call: ast.Call, param: str, params: list[str], constants: dict[str, str]) -> str | None:
    """The string passed for a wrapper's parameter `param`, by keyword or by position."""
    value = next((k.value for k in call.keywords if k.arg == param), None)
    if value is None and param in params and params.index(param) < len(call.args):
        value = call.args[params.index(param)]
    return _string(value, constants)


def _string(value: ast.expr | None, constants: dict[str, str]) -> str | None:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    if isinstance(value, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in value.values):
        return "".join(str(v.value) for v in value.values)  # type: ignore[attr-defined]  # nerfacc's f"nerfacc.csrc"
    if isinstance(value, ast.Name):
        return constants.get(value.id)
    return None


def extension_findings(text: str, rel: str, rules: Iterable[Rule], extensions: Collection[str]) -> list[Finding]:
    """One finding per rule per import statement in `text` (the file at `rel`) that loads one of
    the declared `extensions`."""
    lasts = {name.rpartition(".")[2] for name in extensions}
    if not any(last in text for last in lasts):
        return []
    sites = []
    for line, col, end, statement, first in import_statements(text, lambda m: any(n in m.group(0) for n in lasts)):
        node = parsed(statement)
        loaded = next((e for e in extensions for module in _loaded(node, rel) if _is(module, e, node)), None) \
            if node is not None else None
        if loaded is not None:
            sites.append((line, col, end, loaded, first))
    return [rule.finding(rel, Span(line, col, line, end), name, first, line)
            for rule in rules for line, col, end, name, first in sites]


def _loaded(node: ast.Import | ast.ImportFrom, rel: str) -> list[str]:
    """The dotted modules the statement may load: each module it names and each name it imports
    from one (a submodule); a relative one is spelled from the scan root's directories."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        parts = [p for p in posixpath.dirname(rel).split("/") if p]
        parts = parts[:max(len(parts) - (node.level - 1), 0)]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    names = [f"{base}.{a.name}" if base else a.name for a in node.names if a.name != "*"]
    # `from . import x` loads the package's `__init__.py`, never an extension; `from ._ext import f` does.
    return [base, *names] if node.module else names


def _is(module: str, extension: str, node: ast.Import | ast.ImportFrom) -> bool:
    """Whether `module` is the declared `extension`. A relative import is spelled from the scan
    root's directories, which may start above the package (then the declaration ends the module)
    or inside it (then the module ends the declaration); it reaches only a package-qualified
    declaration (`pkg._ext`), never a top-level module (`rotary`)."""
    if not (isinstance(node, ast.ImportFrom) and node.level):
        return module == extension
    return "." in extension and (module == extension or module.endswith("." + extension)
                                 or extension.endswith("." + module))
