"""Where a condition's value goes (`torch.cuda.is_available()`, `torch.cuda.device_count()`: rules
with `condition: true`).

Rewriting a condition sends the code it decides into its CUDA path on Trainium. The guard rule
(`guards`) keeps that safe for the code this file shows; a value that leaves the file decides
code nobody here can see: passed to a function defined elsewhere, kept in a module-level name
or an attribute another module can import or read, or returned from a function another module
can call. The fix of such a condition needs a fact it cannot see, so it is unsafe. A file that
runs as a program (`if __name__ == "__main__":`, or work done at module level) is not imported,
so its names and functions are followed inside it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cached_property

from neuron_migrate.scan.fixes.syntax import SKIPS, bound_method, defaulted, dotted, parameter, parent_of, walk

# Calls that only show a value (as text): it decides nothing there.
_SHOWN = frozenset({"print", "str", "repr", "format"})
# ... or that decide with it whether a test runs, and nothing else (`SKIPS`).
# Calls that convert a value: it goes where their result goes (MONAI's `"n_devices":
# int(torch.cuda.device_count())` in a settings dict that another module launches with).
_CONVERTED = frozenset({"bool", "int", "float"})
_LOGGED = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log", "write"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (*_FUNCTIONS, ast.Lambda, ast.ClassDef)
_DEPTH = 8


class Flow:
    """The file's functions, calls and name uses, indexed on first need: most conditions are an
    `if`'s test and need none of it."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.program = _runs_as_program(tree)
        # The names looked up file-wide (functions, their callers, readers of a name or attribute),
        # by their last part: where the tree lacks some functions (`scan.regions`), the answer
        # holds only if none of them is written in those.
        self.looked_up: set[str] = set()

    @cached_property
    def _index(self) -> tuple[dict[str, list[ast.AST]], dict[str, list[ast.Call]], dict[str, list[ast.AST]]]:
        """(functions by name, calls by the name called, reads by name or attribute chain)."""
        functions: dict[str, list[ast.AST]] = defaultdict(list)
        calls: dict[str, list[ast.Call]] = defaultdict(list)
        loads: dict[str, list[ast.AST]] = defaultdict(list)
        for node in walk(self.tree):
            cls = node.__class__
            if cls in _FUNCTIONS:
                functions[node.name].append(node)  # type: ignore[attr-defined]
            elif cls is ast.Call:
                name = _callee(node)  # type: ignore[arg-type]
                if name is not None:
                    calls[name].append(node)  # type: ignore[arg-type]
            elif (cls is ast.Name or cls is ast.Attribute) and node.ctx.__class__ is ast.Load:  # type: ignore[attr-defined]
                key = dotted(node)
                if key is not None:
                    loads[key].append(node)
        return functions, calls, loads

    def _lookup(self, table: int, key: str) -> list[ast.AST]:
        self.looked_up.add(key.rpartition(".")[2])
        return self._index[table].get(key, [])  # type: ignore[return-value]

    def leaves_file(self, value: ast.AST) -> bool:
        """Whether the value of `value` can reach code outside this file."""
        return self._leaves(value, 0, set())

    def _leaves(self, node: ast.AST, depth: int, seen: set[int]) -> bool:
        if depth > _DEPTH:
            return True
        if id(node) in seen:  # already being followed
            return False
        seen.add(id(node))
        while True:
            parent = self._parent(node)
            cls = parent.__class__
            if cls is ast.BoolOp or cls is ast.Compare or (cls is ast.UnaryOp and parent.op.__class__ is ast.Not):  # type: ignore[union-attr]
                node = parent  # type: ignore[assignment]
                continue
            if cls is ast.IfExp:
                if parent.test is node:  # type: ignore[union-attr]
                    return False  # a ternary decides here
                node = parent  # type: ignore[assignment]
                continue
            break
        if cls in (ast.If, ast.While, ast.Assert) and parent.test is node:  # type: ignore[union-attr]
            return False
        if cls is ast.comprehension and any(c is node for c in parent.ifs):  # type: ignore[union-attr]
            return False
        if cls is ast.Expr or cls is ast.FormattedValue:
            return False  # dropped, or shown in an f-string
        if cls is ast.Call and parent.func is not node:  # type: ignore[union-attr]
            return self._passed(parent, node, depth, seen)  # type: ignore[arg-type]
        if cls is ast.keyword:
            return self._passed(self._parent(parent), parent, depth, seen)  # type: ignore[arg-type]
        if cls is ast.Assign:
            return any(self._stored(t, depth, seen) for t in parent.targets)  # type: ignore[union-attr]
        if cls is ast.AnnAssign or cls is ast.NamedExpr:
            if self._stored(parent.target, depth, seen):  # type: ignore[union-attr]
                return True
            return cls is ast.NamedExpr and self._leaves(parent, depth + 1, seen)  # type: ignore[arg-type]
        if cls is ast.Return:
            return self._returned(parent, depth, seen)  # type: ignore[arg-type]
        if cls is ast.arguments:  # a parameter's default: followed where the function reads it
            fn = self._parent(parent)
            param = defaulted(parent, node)  # type: ignore[arg-type]
            return param is None or any(self._leaves(u, depth + 1, seen) for u in self._uses_in(fn, param))
        return True  # kept in a container, indexed, called: followed no further

    def _passed(self, call: ast.Call, arg: ast.AST, depth: int, seen: set[int]) -> bool:
        func = call.func
        if func.__class__ is ast.Name and (func.id in _SHOWN or func.id in SKIPS):  # type: ignore[attr-defined]
            return False
        if func.__class__ is ast.Name and func.id in _CONVERTED:  # type: ignore[attr-defined]
            return self._leaves(call, depth + 1, seen)
        if func.__class__ is ast.Attribute and (func.attr in _LOGGED or func.attr in SKIPS):  # type: ignore[attr-defined]
            return False
        name = _callee(call)
        defs = self._lookup(0, name) if name else []
        if not defs:
            return True  # a function of another module
        for fn in defs:
            param = parameter(fn, call, arg, self._in_class(fn))
            if param is None or any(self._leaves(u, depth + 1, seen) for u in self._uses_in(fn, param)):
                return True
        return False

    def _stored(self, target: ast.AST, depth: int, seen: set[int]) -> bool:
        key = dotted(target)
        if key is None:
            return True
        scope = self._scope_of(target)
        # a module's or a class's name, or an attribute: whoever holds the module or object reads it
        if scope is None or scope.__class__ is ast.ClassDef or "." in key:
            if not self.program:
                return True
            uses = self._lookup(2, key)
        else:
            uses = self._uses_in(scope, key)
        return any(self._leaves(u, depth + 1, seen) for u in uses)

    def _returned(self, ret: ast.Return, depth: int, seen: set[int]) -> bool:
        fn = self._scope_of(ret)
        if fn is None or fn.__class__ not in _FUNCTIONS:
            return True
        name: str = fn.name  # type: ignore[attr-defined]
        if not self.program and not name.startswith("_"):
            return True  # another module may call it
        return any(self._leaves(c, depth + 1, seen) for c in self._lookup(1, name))

    def _parent(self, node: ast.AST) -> ast.AST | None:
        return parent_of(self.tree, node)

    def _scope_of(self, node: ast.AST) -> ast.AST | None:
        """The function, lambda or class around `node`; None at module level."""
        parent = self._parent(node)
        while parent is not None and parent.__class__ not in _SCOPES:
            parent = self._parent(parent)
        return parent

    def _in_class(self, fn: ast.AST) -> bool:
        return bound_method(fn, self._parent(fn))

    def _uses_in(self, scope: ast.AST, key: str) -> list[ast.AST]:
        return [n for n in self._lookup(2, key) if self._within(n, scope)]

    def _within(self, node: ast.AST, scope: ast.AST) -> bool:
        parent = self._parent(node)
        while parent is not None:
            if parent is scope:
                return True
            parent = self._parent(parent)
        return False


def decided_here(stmt: ast.AST, node: ast.AST) -> bool:
    """`node` (or its call) is the test of the `if`, `while` or `assert` it stands in, alone or
    under `and`/`or`/`not` and comparisons: the value decides that statement and goes nowhere else
    (`Flow.leaves_file` comes to the same answer by walking up from it, without the file's other
    functions: the only answer a partially parsed file can give)."""
    if stmt.__class__ not in (ast.If, ast.While, ast.Assert):
        return False
    todo = [stmt.test]  # type: ignore[attr-defined]
    while todo:
        expr = todo.pop()
        if expr is node:
            return True
        cls = expr.__class__
        if cls is ast.BoolOp:
            todo += expr.values  # type: ignore[attr-defined]
        elif cls is ast.Compare:
            todo.append(expr.left)  # type: ignore[attr-defined]
            todo += expr.comparators  # type: ignore[attr-defined]
        elif cls is ast.UnaryOp and expr.op.__class__ is ast.Not:  # type: ignore[attr-defined]
            todo.append(expr.operand)  # type: ignore[attr-defined]
        elif cls is ast.Call and expr.func is node:  # type: ignore[attr-defined]
            return True
    return False


def _callee(call: ast.Call) -> str | None:
    func = call.func
    if func.__class__ is ast.Name:
        return func.id  # type: ignore[attr-defined, no-any-return]
    if func.__class__ is ast.Attribute:
        return func.attr  # type: ignore[attr-defined, no-any-return]
    return None


def _runs_as_program(tree: ast.Module) -> bool:
    """`if __name__ == "__main__":`, or work done at module level (a call, a loop, a `with`)."""
    for stmt in tree.body:
        cls = stmt.__class__
        if cls in (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith):
            return True
        if cls is ast.Expr and stmt.value.__class__ is not ast.Constant:  # type: ignore[attr-defined]
            return True
        if cls is ast.If and "__main__" in ast.dump(stmt.test):  # type: ignore[attr-defined]
            return True
    return False
