"""Whether a fix can see the facts it relies on: that a name still is the import it was matched
through, and that a `.cuda()` receiver is a tensor or module. Where it cannot, the fix is unsafe.

A module-level name bound more than once (an optional import in `try`/`except ImportError` with
a fallback, `torch = None`, a later `def autocast`) may stand for something else when the
matched line runs, so rewriting it as the import changes what the program does.
"""

from __future__ import annotations

import ast
from collections import Counter

from neuron_migrate.scan.aliases import AliasTable

# Tensor/Module methods that return a tensor or module again.
_CHAINED = frozenset({"to", "float", "half", "bfloat16", "double", "contiguous", "detach", "clone", "view",
                      "reshape", "train", "eval", "requires_grad_", "pin_memory", "cpu", "cuda"})


def module_bindings(tree: ast.Module) -> Counter[str]:
    """How many statements bind each name at module level (nested blocks included, function and
    class bodies not)."""
    counts: Counter[str] = Counter()
    plain: set[str] = set()  # names bound by `import a`, `import a.b`: all the same package `a`
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        cls = node.__class__
        if cls in (ast.Import, ast.ImportFrom):
            for alias in node.names:  # type: ignore[attr-defined]
                name = (alias.asname or alias.name).partition(".")[0]
                if cls is ast.Import and alias.asname is None:
                    if name in plain:
                        continue  # `import torch` then `import torch.distributed`: `torch` is still torch
                    plain.add(name)
                counts[name] += 1
        elif cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            counts[node.name] += 1  # type: ignore[attr-defined]
            continue
        elif cls in (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith,
                     ast.NamedExpr):
            for target in _targets(node):
                for name in ast.walk(target):  # `torch.x = 1` stores into torch, it does not rebind it
                    if name.__class__ is ast.Name and name.ctx.__class__ is ast.Store:  # type: ignore[attr-defined]
                        counts[name.id] += 1  # type: ignore[attr-defined]
        elif cls is ast.ExceptHandler and node.name:  # type: ignore[attr-defined]
            counts[node.name] += 1  # type: ignore[attr-defined]
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                counts[child.name] += 1
                continue
            if isinstance(child, ast.Lambda):
                continue
            if isinstance(child, (ast.stmt, ast.ExceptHandler, ast.match_case)):
                todo.append(child)
    return counts


def _targets(node: ast.AST) -> list[ast.AST]:
    cls = node.__class__
    if cls is ast.Assign:
        return list(node.targets)  # type: ignore[attr-defined]
    if cls in (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr):
        return [node.target]  # type: ignore[attr-defined]
    if cls in (ast.With, ast.AsyncWith):
        return [i.optional_vars for i in node.items if i.optional_vars is not None]  # type: ignore[attr-defined]
    return []


def leftmost_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def evidently_torch(node: ast.AST, aliases: AliasTable) -> bool:
    """`node` is plainly a tensor or module: a call of something from torch (`torch.ones(2)`,
    `nn.Linear(4, 4)`), or a tensor method returning one on such a value (`torch.ones(2).float()`)."""
    if node.__class__ is not ast.Call:
        return False
    func = node.func  # type: ignore[attr-defined]
    if func.__class__ is ast.Attribute and func.attr in _CHAINED and func.value.__class__ is ast.Call:
        return evidently_torch(func.value, aliases)
    name = leftmost_name(func)
    root = aliases.root(name) if name is not None else None
    return root is not None and (root == "torch" or root.startswith("torch."))
