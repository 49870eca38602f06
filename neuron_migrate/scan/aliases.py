"""Which module or object each imported name stands for, so `th.cuda`, `tc.synchronize` and a
bare `autocast` resolve to `torch.cuda...` qualified names.

The table is flow-insensitive, like ruff's first pass: an import anywhere in the file binds its
name for the whole file. Relative imports unbind the names they introduce (their target is another
file of the same project, never a library the rules know). `from m import *` is remembered so a
free name can still resolve, but only to a name a rule spells out exactly.
"""

from __future__ import annotations

import ast


class AliasTable:
    __slots__ = ("names", "specs", "stars", "implicit", "implicit_seen")

    def __init__(self, implicit_roots: frozenset[str]) -> None:
        self.names: dict[str, str] = {}  # local name -> qualified name it stands for
        # local name -> the import it came from, as rewrite's `remove_imports` spells it ("m", "m.x");
        # only for bindings that are not the plain `import m` of a top-level module.
        self.specs: dict[str, str] = {}
        self.stars: list[str] = []  # modules of `from m import *`
        # Names that resolve to themselves while nothing binds them: `torch` in a notebook cell
        # whose import lives in another cell, or in a rule example that omits the import.
        self.implicit = implicit_roots
        self.implicit_seen: set[str] = set()  # implicit roots the file actually reads

    def add(self, node: ast.Import | ast.ImportFrom, *, keep: bool = False) -> None:
        """`keep`: the import may not run (in an `if` or `try` body, an `except ImportError:`
        handler, an `else:` branch): a name an import already bound keeps that binding, the one
        that runs where the first import works or the condition is false (`from torch.amp import
        GradScaler` before `from torch.cuda.amp import GradScaler`; `from torch.cuda import
        synchronize` before `if is_npu(): from torch.npu import synchronize`)."""
        if isinstance(node, ast.Import):
            for alias in node.names:
                if keep and (alias.asname or alias.name.partition(".")[0]) in self.names:
                    continue
                if alias.asname:
                    self.names[alias.asname] = alias.name
                    self.specs[alias.asname] = alias.name
                else:  # `import a.b.c` binds `a`
                    root = alias.name.partition(".")[0]
                    self.names[root] = root
                    self.specs.pop(root, None)
            return
        module = node.module or ""
        for alias in node.names:
            local = alias.asname or alias.name
            if keep and local in self.names:
                continue
            if alias.name == "*":
                if not node.level and module not in self.stars:
                    self.stars.append(module)
            elif node.level:  # the project's own module: never a library name
                self.names.pop(local, None)
                self.specs.pop(local, None)
            else:
                self.names[local] = f"{module}.{alias.name}"
                self.specs[local] = f"{module}.{alias.name}"

    def bind(self, name: str, qualified: str) -> None:
        """`name` stands for the module or object `qualified`, as after `import m as name`: it
        was assigned what an import call returned (`trt = importlib.import_module("tensorrt")`)."""
        self.names[name] = qualified
        self.specs[name] = qualified

    def root(self, name: str) -> str | None:
        """The qualified name a bare name stands for, or None."""
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
