"""Small syntax questions fixers ask about the parsed file: a node's parent, call arguments in
source order, and whether an expression needs parentheses where it stands."""

from __future__ import annotations

import ast
import bisect
from collections import OrderedDict

# Per statement asked about (the last few, held so that their ids stay theirs): child id -> parent.
# A file's sites often share one huge statement (a module-level table with thousands of device
# strings); walking it once per site was most of a cold scan of the torch tree.
_PARENTS: OrderedDict[int, tuple[ast.AST, dict[int, ast.AST]]] = OrderedDict()
_KEEP = 16


def parent_of(root: ast.AST, node: ast.AST) -> ast.AST | None:
    """The node holding `node` inside `root`; None when it is not under `root`."""
    key = id(root)
    hit = _PARENTS.get(key)
    if hit is None or hit[0] is not root:
        hit = (root, _parents(root))
        _PARENTS[key] = hit
        if len(_PARENTS) > _KEEP:
            _PARENTS.popitem(last=False)
    else:
        _PARENTS.move_to_end(key)
    return hit[1].get(id(node))


# Fields that hold no node, or only the shared context and operator singletons (no one's parent).
NO_CHILD = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "name", "module", "level", "kind", "type_comment",
                      "conversion", "is_async", "asname", "rest", "kwd_attrs", "simple", "tag"})
# ... and import aliases and type-ignore comments: nothing a rule, the walk or a guard reads.
LEAVES = NO_CHILD | {"names", "type_ignores"}


class ChildFields(dict[type, tuple[str, ...]]):
    """Per node class, its fields that may hold child nodes, less `leaves`; computed on first
    lookup, so `table[cls]` in a hot loop costs one dict hit and no call."""

    def __init__(self, leaves: frozenset[str]) -> None:
        super().__init__()
        self.leaves = leaves

    def __missing__(self, cls: type) -> tuple[str, ...]:
        fields = self[cls] = tuple(f for f in cls._fields if f not in self.leaves)  # type: ignore[attr-defined]
        return fields


_FIELDS = ChildFields(NO_CHILD)


def walk(root: ast.AST) -> list[ast.AST]:
    """Every node under `root` (itself first) in `ast.walk`'s order, less the shared context and
    operator singletons: a list built without a generator per node (`ast.walk` is most of the
    time of a file-wide search on a large tree)."""
    out = [root]
    fields = _FIELDS
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        for f in fields[node.__class__]:
            v = getattr(node, f, None)
            if v.__class__ is list:
                out += [child for child in v if isinstance(child, ast.AST)]
            elif isinstance(v, ast.AST):
                out.append(v)
    return out


def has_parameters(fn: ast.AST) -> bool:
    """Whether a function (or lambda) takes any parameter."""
    args = fn.args  # type: ignore[attr-defined]
    return bool(args.posonlyargs or args.args or args.kwonlyargs or args.vararg or args.kwarg)


def _parents(root: ast.AST) -> dict[int, ast.AST]:
    """Child id -> parent for every node under `root`, without a generator per node."""
    out: dict[int, ast.AST] = {}
    todo = [root]
    while todo:
        node = todo.pop()
        for f in _FIELDS[node.__class__]:
            v = getattr(node, f, None)
            if v.__class__ is list:
                for child in v:
                    if isinstance(child, ast.AST):
                        out[id(child)] = node
                        todo.append(child)
            elif isinstance(v, ast.AST):
                out[id(v)] = node
                todo.append(v)
    return out


Function = ast.FunctionDef | ast.AsyncFunctionDef

# Calls that decide whether a test runs (`@pytest.mark.skipif(...)`, `@unittest.skipIf(...)`,
# `@unittest.skipUnless(...)`): their condition decides that and nothing else.
SKIPS = frozenset({"skipif", "skipIf", "skipUnless"})


def functions(root: ast.AST) -> list[Function]:
    """Every function (not a lambda) under `root`, by where it starts; only statements are
    searched (a function is one), as in `block_of`."""
    out: list[Function] = []
    todo = [root]
    while todo:
        node = todo.pop()
        if node.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef):
            out.append(node)  # type: ignore[arg-type]
        for f in _BLOCKS:
            block = getattr(node, f, None)
            if block.__class__ is list:
                todo += block
        for f in _HOLDERS:
            todo += getattr(node, f, None) or ()
    out.sort(key=lambda fn: (fn.lineno, fn.col_offset))
    return out


def innermost(found: list[Function], starts: list[tuple[int, int]], node: ast.AST) -> Function | None:
    """The innermost of `found` (`functions`, with their `starts`) whose span holds `node`."""
    pos = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
    i = bisect.bisect_right(starts, pos) - 1
    while i >= 0:
        fn = found[i]
        if pos <= (fn.end_lineno or fn.lineno, fn.end_col_offset or 0):
            return fn
        if fn.col_offset == 0:  # a module-level function that ended before: none earlier holds it
            return None
        i -= 1
    return None


def if_holding(root: ast.AST, block: list[ast.stmt]) -> ast.If | None:
    """The `if` whose body or else block is `block` (through the parent map, built once per tree)."""
    parent = parent_of(root, block[0]) if block else None
    if parent.__class__ is ast.If and (parent.body is block or parent.orelse is block):  # type: ignore[union-attr]
        return parent  # type: ignore[return-value]
    return None


_BLOCKS = ("body", "orelse", "finalbody")
_HOLDERS = ("handlers", "cases")  # except handlers and match cases: each has a body


def block_of(root: ast.AST, stmt: ast.stmt) -> list[ast.stmt] | None:
    """The statement list (a body, an else, a handler's body...) that holds `stmt`. Only statements
    are searched: expressions hold no statement, and a large file has ten times more of them."""
    todo = [root]
    while todo:
        node = todo.pop()
        for f in _BLOCKS:
            block = getattr(node, f, None)
            if block.__class__ is list:
                if any(s is stmt for s in block):
                    return block
                todo += block
        for f in _HOLDERS:
            todo += getattr(node, f, None) or ()
    return None


def call_of(root: ast.AST, func: ast.AST) -> ast.Call | None:
    """The call whose callee is `func`, if `func` is called."""
    parent = parent_of(root, func)
    return parent if isinstance(parent, ast.Call) and parent.func is func else None


def ordered_arguments(call: ast.Call) -> list[ast.AST]:
    args: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    return sorted(args, key=lambda a: (a.lineno, a.col_offset))


# Parents under which a comparison can stand without parentheses.
_LOOSE = (ast.If, ast.While, ast.Assert, ast.Return, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr,
          ast.BoolOp, ast.Call, ast.keyword, ast.comprehension, ast.NamedExpr, ast.List, ast.Tuple, ast.Set,
          ast.Dict, ast.IfExp)


def comparison_needs_parens(root: ast.AST, node: ast.AST) -> bool:
    """Whether replacing `node` by `a == b` needs parentheses to keep the meaning."""
    parent = parent_of(root, node)
    if parent is None:
        return True
    if isinstance(parent, ast.UnaryOp):
        return not isinstance(parent.op, ast.Not)
    if isinstance(parent, ast.Call):
        return parent.func is node
    return not isinstance(parent, _LOOSE)


def dotted(node: ast.AST) -> str | None:
    """`use_cuda`, `args.cuda`, `self.use_gpu`: a name or an attribute chain on a name."""
    parts: list[str] = []
    while node.__class__ is ast.Attribute:
        parts.append(node.attr)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if node.__class__ is not ast.Name:
        return None
    parts.append(node.id)  # type: ignore[attr-defined]
    return ".".join(reversed(parts))


def parameter(fn: ast.AST, call: ast.Call, arg: ast.AST, method: bool) -> str | None:
    """The parameter of `fn` that `arg` of `call` binds; None when it cannot be told (`*args`)."""
    args: ast.arguments = fn.args  # type: ignore[attr-defined]
    if arg.__class__ is ast.keyword:
        name = arg.arg  # type: ignore[attr-defined]
        known = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        return name if name in known else None  # type: ignore[no-any-return]
    i = next(i for i, a in enumerate(call.args) if a is arg)
    if any(a.__class__ is ast.Starred for a in call.args[: i + 1]):
        return None
    positional = [*args.posonlyargs, *args.args]
    if method and call.func.__class__ is ast.Attribute:
        i += 1  # `obj.f(x)`: x binds the parameter after `self`
    return positional[i].arg if i < len(positional) else None


def bound_method(fn: ast.AST, parent: ast.AST | None) -> bool:
    """A function defined in a class body and not a staticmethod: `obj.f(x)` binds x after `self`."""
    return parent.__class__ is ast.ClassDef and not any(
        d.__class__ is ast.Name and d.id == "staticmethod" for d in fn.decorator_list)  # type: ignore[attr-defined]


def defaults(args: ast.arguments) -> list[tuple[str, ast.expr]]:
    """(parameter, its default) for each parameter that has one."""
    positional = [*args.posonlyargs, *args.args]
    out = [(a.arg, d) for a, d in zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True)]
    return out + [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]


def defaulted(args: ast.arguments, value: ast.AST) -> str | None:
    """The parameter whose default is `value`."""
    return next((name for name, d in defaults(args) if d is value), None)
