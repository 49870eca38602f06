"""Which module or object each imported name stands for, so `th.cuda`, `tc.synchronize` and a
bare `autocast` resolve to `torch.cuda...` qualified names.

The table is flow-insensitive, like ruff's first pass: an import anywhere in the file binds its
name for the whole file. Relative imports unbind the names they introduce (their target is another
file of the same project, never a library the rules know). `from m import *` is remembered so a
free name can still resolve, but only to a name a rule spells out exactly.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

# Other vendors' device modules: an import of one runs only on a host with that device.
_VENDOR_MODULES = frozenset({"torch_npu", "torch_mlu", "torch_musa", "intel_extension_for_pytorch", "habana_frameworks"})
_VENDOR_DEVICES = frozenset({"npu", "mlu", "musa", "xpu", "hpu", "sdaa", "mps"})  # `torch.npu...`


class AliasTable:
    __slots__ = ("names", "specs", "stars", "implicit", "implicit_seen", "cuda", "within", "module")

    def __init__(self, implicit_roots: frozenset[str], cuda: Callable[[str], bool] | None = None) -> None:
        """`cuda`: whether a qualified name is CUDA's (a rule's library, a CUDA word); see `add`."""
        self.names: dict[str, str] = {}  # local name -> qualified name it stands for
        # local name -> the import it came from, as rewrite's `remove_imports` spells it ("m", "m.x");
        # only for bindings that are not the plain `import m` of a top-level module.
        self.specs: dict[str, str] = {}
        self.stars: list[str] = []  # modules of `from m import *`
        # Names that resolve to themselves while nothing binds them: `torch` in a notebook cell
        # whose import lives in another cell, or in a rule example that omits the import.
        self.implicit = implicit_roots
        self.implicit_seen: set[str] = set()  # implicit roots the file actually reads
        self.cuda = cuda
        # name -> (first line, last line, qualified): where a conditional import's binding holds
        # although it did not replace the file-wide one (inside its `if` or `try` body).
        self.within: dict[str, list[tuple[int, int, str]]] = {}
        # The module's own bindings (`names` before any function's imports are read), once known:
        # a function's `import torch` binds nothing in the others.
        self.module: dict[str, str] | None = None

    def add(self, node: ast.Import | ast.ImportFrom, *, keep: bool = False,
            block: tuple[int, int] | None = None) -> None:
        """`keep`: the import is a fallback (in an `except ImportError:` handler, an `else:`
        branch): a name an import already bound keeps that binding, the one that runs where the
        first import works (`from torch.amp import GradScaler` before `from torch.cuda.amp import
        GradScaler`). `block`: the lines of the `if` or `try` body the import sits in, which may
        not run: it replaces a binding only with a CUDA one (`from torch.nn import LayerNorm`,
        then `try: from apex.normalization import FusedLayerNorm as LayerNorm`); else the binding
        above holds file-wide (`from torch.cuda import synchronize`, then `if npu: from torch.npu
        import synchronize`) and this one from the import to the end of its block."""
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.partition(".")[0]
                if keep and local in self.names and not self._after_vendor(local, alias.name if alias.asname else local):
                    continue
                if block is not None and not self._replaces(local, alias.name if alias.asname else local, node, block):
                    continue
                if alias.asname:
                    self.names[alias.asname] = alias.name
                    self.specs[alias.asname] = alias.name
                else:  # `import a.b.c` binds `a`
                    self.names[local] = local
                    self.specs.pop(local, None)
            return
        module = node.module or ""
        for alias in node.names:
            local = alias.asname or alias.name
            if keep and local in self.names and not self._after_vendor(local, f"{module}.{alias.name}"):
                continue
            if alias.name == "*":
                if not node.level and module not in self.stars:
                    self.stars.append(module)
            elif node.level:  # the project's own module: never a library name
                self.names.pop(local, None)
                self.specs.pop(local, None)
            elif block is None or self._replaces(local, f"{module}.{alias.name}", node, block):
                self.names[local] = f"{module}.{alias.name}"
                self.specs[local] = f"{module}.{alias.name}"

    def _after_vendor(self, name: str, qualified: str) -> bool:
        """Whether a fallback import of `qualified` replaces `name`'s binding all the same: a CUDA
        one after another vendor's (`if npu: from torch.npu.amp import GradScaler ... else: from
        torch.cuda.amp import GradScaler`), which a host without that device skips too."""
        root, _, rest = self.names[name].partition(".")
        return (self.cuda is not None and self.cuda(qualified)
                and (root in _VENDOR_MODULES or (root == "torch" and rest.partition(".")[0] in _VENDOR_DEVICES)))

    def _replaces(self, name: str, qualified: str, node: ast.stmt, block: tuple[int, int]) -> bool:
        """Whether a conditional import of `qualified` as `name` replaces the binding above (see
        `add`); where it does not, it holds inside its block."""
        old = self.names.get(name)
        if old is None or old == qualified or (self.cuda is not None and self.cuda(qualified) and not self.cuda(old)):
            return True
        spans = self.within.setdefault(name, [])
        if (node.lineno, block[1], qualified) not in spans:
            spans.append((node.lineno, block[1], qualified))
        return False

    def bind(self, name: str, qualified: str) -> None:
        """`name` stands for the module or object `qualified`, as after `import m as name`: it
        was assigned what an import call returned (`trt = importlib.import_module("tensorrt")`)."""
        self.names[name] = qualified
        self.specs[name] = qualified

    def root(self, name: str, line: int | None = None) -> str | None:
        """The qualified name a bare name stands for (at `line`, when given), or None."""
        if line is not None and name in self.within:
            for first, last, qualified in self.within[name]:
                if first <= line <= last:
                    return qualified
        q = self.names.get(name)
        if q is not None:
            return q
        if name in self.implicit:
            self.implicit_seen.add(name)
            return name
        return None

    def qualified(self, expr: ast.AST) -> str | None:
        """The qualified name of a Name/Attribute chain rooted in an import (`th.cuda.manual_seed`
        -> `torch.cuda.manual_seed`), else None. Scope-blind: the scan's walker shadows locals itself."""
        parts: list[str] = []
        while expr.__class__ is ast.Attribute:
            parts.append(expr.attr)  # type: ignore[attr-defined]
            expr = expr.value  # type: ignore[attr-defined]
        if expr.__class__ is not ast.Name:
            return None
        root = self.root(expr.id)  # type: ignore[attr-defined]
        return ".".join([root, *reversed(parts)]) if root is not None else None

    def is_import(self, name: str) -> bool:
        """Whether `name` is a module or object bound by an import (or an implicit module root)."""
        return name in self.names or name in self.implicit

    def spelling(self, qualified: str) -> tuple[str, bool]:
        """How to write `qualified` here: through the file's binding of its top-level module
        (`th.neuron.x` under `import torch as th`), else in full. The flag says whether the
        top-level module still has to be imported. From-imports and `import a.b as c` bindings are
        not reused: a fix usually makes them unused and rewrite then removes them."""
        top, dot, rest = qualified.partition(".")
        for local, target in self.names.items():
            if target == top:
                return local + dot + rest, False
        # A file that already uses `torch` without importing it (a notebook cell) keeps doing so.
        if top in self.implicit_seen:
            return qualified, False
        return qualified, True
