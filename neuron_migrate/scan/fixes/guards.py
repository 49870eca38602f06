"""The guard rule: a guard is rewritten together with everything it guards, or not at all.

A guard is a condition that decides which code runs: the test of an `if`/`while`/ternary, an
`assert`, an `if` with no else whose body leaves its block (`raise`, `return`) or whose test is a
negation (`if not torch.cuda.is_available():` readies what follows for the CPU): these guard the
rest of the block too; an operand of an `and`/`or` chain (it guards the later operands); or a
test's skip condition (`@pytest.mark.skipif`, `unittest.skipIf`/`skipUnless`, a `pytest.param`'s
marks: it guards the test). Rewriting
`torch.cuda.is_available()` to `torch.neuron.is_available()` sends the program into the guarded
code on Trainium, where it used to take its CPU path; if anything in there stays
CUDA-only, the program that worked now crashes. So a fix inside a guard's test is kept only when
every finding in what it guards is fixed as well; otherwise the guard and its block stay as they
are and the guard's finding becomes the one manual finding that says why. What it guards includes
the functions of the file it calls by name (`f(...)`, `self.f(...)`) and those they call: their
code runs when the guard lets it (`Guard.calls`); functions of other files are not seen. The
rule holds the other way too: a test that stays CUDA's (a CUDA finding in it with no fix, or a fix
the run does not apply) keeps what it guards as it is. One statement that uses the `torch.cuda` API
in several places is rewritten whole or not at all, as a guard is: renamed in part, one expression
mixes Neuron's counters with CUDA's device indexes.

A guard may be held in a variable: `use_cuda = torch.cuda.is_available()` then `if use_cuda:`,
or `args.cuda = not args.no_cuda and torch.cuda.is_available()` then `if args.cuda:`. When a test
uses a name as a truth value (or compares it with a number: `n_gpu > 1`), the values assigned to
that name (in the innermost scope around the test that binds it; an attribute chain anywhere in
the file) are part of the guard's test too (`Guard.feeds`). A name compared with a string (`device ==
"cuda"`) holds a device, not a condition: moving it does not send the program into CUDA-only code
as long as the comparison itself stays. But the moved device then skips the held comparison's
branches: when they do more than CUDA code (`dtype = torch.float16`; a conditional expression's
other value), the values the device gets stay with the comparison (`Guard.devices`).

`settle` applies the rule to the fixes scan computes (a finding with no fix for a target blocks
it); `blocked` applies it again at rewrite time to the fixes one run will actually apply (an
unsafe fix without `--unsafe-fixes`, or one skipped for an overlap, blocks it too).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cache, partial

from neuron_migrate.findings import Edit, Finding, FixClass, Severity, Span, Target
from neuron_migrate.scan.fixes.syntax import (
    LEAVES,
    SKIPS,
    ChildFields,
    bound_method,
    defaults,
    dotted,
    parameter,
    walk,
)
from neuron_migrate.scan.matchers.site import LineIndex

_BLOCKS = ("body", "orelse", "finalbody")


@dataclass(frozen=True, slots=True)
class Guard:
    tests: tuple[Span, ...]  # the condition(s) whose rewrite changes which path runs
    region: Span  # everything the guard decides, tests included
    # "if", "while", "ternary", "assert", "and" (an `and`/`or` chain), "skip" (a test's skip
    # decorator), "exit" (an `if` that guards the rest of its block); "statement" for the
    # `torch.cuda` calls of one statement, which `blocked` holds together (no test)
    kind: str
    message: Span | None = None  # what it says when it fails: an assert's message, an `if`'s lone raise's
    feeds: tuple[Span, ...] = ()  # values assigned to the names the test uses as conditions
    # The functions of this file that what it guards calls (`f(...)`, `self.f(...)`), also through
    # each other: their code runs when the guard lets it. Looked up only when asked: most guards
    # are decided by what they hold themselves.
    calls: Callable[[], tuple[Span, ...]] = tuple
    # The function around it and its tests' syntax: guards that test the same thing in one function
    # (two loops' `if chunk.device_type == "cuda" or ...`) stay or move together.
    condition: str = ""
    # A ternary's: the name or attribute chain its statement assigns it to (`self.map_location =
    # ... if ... else ...`), and those its values read; a held choice keeps the same test's
    # choice of a value it reads.
    sets: str = ""
    reads: frozenset[str] = frozenset()
    # An `if`'s: the values assigned to a device its test compares with a CUDA string (`device
    # == "cuda"` reads `def f(device="cuda")`), and the simple statements of its branches (not a
    # message). Renamed while the comparison is held, the device skips those statements: when
    # one of them is not CUDA code (`dtype = torch.float16`), the value stays with the comparison.
    devices: tuple[Span, ...] = ()
    effects: tuple[Span, ...] = ()


def _start(s: Span) -> tuple[int, int]:
    return (s.line, s.col)


def _end(s: Span) -> tuple[int, int]:
    return (s.end_line, s.end_col)


def inside(inner: Span, outer: Span) -> bool:
    return outer.contains(inner)


# A guard to build (when its test or feeds are near a finding), its tests, the nodes it guards.
_Found = tuple[Callable[[], Guard], list[ast.AST], list[ast.AST]]


def guards_in(tree: ast.AST, lines: LineIndex, near: Sequence[int] | None = None,
              decided: tuple[set[str], Sequence[int]] | None = None) -> list[Guard]:
    """Every guard of the tree, innermost (smallest region) first. With `near` (sorted line
    numbers: where the findings with a fix are), only the guards whose test or feeds span one of
    those lines, the only ones the scan-time rule can act on; building every guard of a large
    file cost more than the rest of its analysis. `decided`: (a set, sorted lines where fixed
    findings are); the set gets the attribute chains' last parts and the module's names whose
    values, or the tests choosing them, span one of those lines: a test of one feeds from there,
    wherever it is (`scan.parse` reads the functions left out that write one)."""
    out: list[Guard] = []
    chains: dict[str, list[ast.AST]] = {}  # `args.cuda = ...`: attribute chains, file-wide
    found: list[_Found] = []
    founds: dict[int, list[_Found]] = {}  # by scope
    # per scope: the names it binds, then those of the functions around it and the module's
    visible: dict[int, list[dict[str, list[ast.AST]]]] = {}
    scoped: list[tuple[ast.AST, list[_Found], list[dict[str, list[ast.AST]]]]] = []
    # by the name called (`f(x)`, `obj.f(x)`): each call with the names its scope binds
    calls: dict[str, list[tuple[ast.Call, dict[str, list[ast.AST]]]]] = {}
    functions: list[tuple[ast.AST, dict[str, list[ast.AST]], bool]] = []  # (def, its names, a method)
    classes: list[ast.AST] = []
    named = _named_marks(tree)
    targets: dict[int, str] = {}  # an assigned value -> the name or attribute chain it is assigned to
    for scope, nodes, parent in _scopes(tree):
        names: dict[str, list[ast.AST]] = {}
        outer = visible.get(id(parent), []) if parent is not None else []
        if parent is not None and parent.__class__ is ast.ClassDef:
            outer = outer[1:]  # a class body's names are not seen from its methods
        visible[id(scope)] = [names, *outer]
        found = founds[id(scope)] = []
        scoped.append((scope, found, visible[id(scope)]))
        if parent is not None and scope.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef):
            # `def use_gpu(): return torch.cuda.is_available()`: a condition where `use_gpu()` is
            # one; docling's `decide_device(...)`, a device where its result is compared
            returns = [n.value for n in nodes if n.__class__ is ast.Return and n.value is not None]  # type: ignore[attr-defined]
            visible[id(parent)][0].setdefault(f"{scope.name}()", []).extend(returns)  # type: ignore[attr-defined]
        if scope.__class__ is ast.ClassDef:  # `TrtCompiler(model)`: its methods run through the object
            classes.append(scope)
        args = getattr(scope, "args", None)
        if args is not None:  # a parameter shadows the module's name: it is not the module's value
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if a is not None:
                    names[a.arg] = []
            for name, default in defaults(args):  # a parameter's default is a value assigned to it
                names[name].append(default)
            if scope.__class__ is not ast.Lambda:
                functions.append((scope, names, bound_method(scope, parent)))
        skips = _skip_tests(scope.decorator_list, named) if parent is not None and scope.__class__ is not ast.Lambda else []  # type: ignore[attr-defined]
        if skips:  # evaluated where the function or class is defined, as its decorators are
            founds[id(parent)].append((partial(_skipped, scope, skips, named, lines), skips, [scope]))  # type: ignore[arg-type]
        marked = _pytestmark(scope, named) if scope.__class__ in (ast.Module, ast.ClassDef) else []
        if marked:  # `pytestmark = pytest.mark.skipif(...)`: every test of the module or class
            found.append((partial(_module_skipped, scope, marked, lines), marked, [scope]))
        for node in (scope, *nodes):  # the scope's own body may hold asserts
            cls = node.__class__
            if cls is ast.Call and node.func.__class__ in (ast.Name, ast.Attribute):  # type: ignore[attr-defined]
                func = node.func  # type: ignore[attr-defined]
                called = func.id if func.__class__ is ast.Name else func.attr
                calls.setdefault(called, []).append((node, names))  # type: ignore[arg-type]
                if called == "param":  # `pytest.param("cuda", marks=pytest.mark.skipif(...))`
                    marks = next((k.value for k in node.keywords if k.arg == "marks"), None)  # type: ignore[attr-defined]
                    tests = _skip_tests(marks.elts if marks.__class__ in (ast.List, ast.Tuple) else [marks], named)  # type: ignore[union-attr]
                    if tests:
                        found.append((partial(_marked, node, tests, lines), tests, [node]))
            if cls is ast.If or cls is ast.While or cls is ast.IfExp:
                found.append((partial(_conditional, node, lines, targets), [node.test], [node]))  # type: ignore[attr-defined]
                if cls is ast.If and (near is None or _spans_one_of(node.test, near)):  # type: ignore[attr-defined]
                    # allennlp's `if cuda.device_count() > 0: cuda_device = 0 else: cuda_device = -1`
                    # (only a test with a finding: every other test would feed every flag it sets)
                    _branch_values(node, names, chains)
            elif cls is ast.BoolOp:  # `a and b and c`, `not a or b`: b runs only as `a` lets it, c as both do
                operands = node.values  # type: ignore[attr-defined]
                for k in range(1, len(operands)):
                    found.append((partial(_and_chain, node, operands[:k], operands[k], lines), operands[:k], [operands[k]]))
            elif cls is ast.Assign or (cls is ast.AnnAssign and node.value is not None):  # type: ignore[attr-defined]
                for target in node.targets if cls is ast.Assign else [node.target]:  # type: ignore[attr-defined]
                    key = dotted(target)
                    if key is not None:
                        (chains if "." in key else names).setdefault(key, []).append(node.value)  # type: ignore[attr-defined]
                        targets[id(node.value)] = key  # type: ignore[attr-defined]
            blocks, holders = _layout(cls)
            for field in blocks:
                block = getattr(node, field, None)
                if block.__class__ is list:
                    _asserts(block, lines, found)
            if holders:
                for holder in getattr(node, holders):
                    _asserts(holder.body, lines, found)
    for fn, names, method in functions:  # `setup(torch.cuda.is_available())` feeds `if use_gpu:` in setup
        for call, caller in calls.get(fn.name, ()):  # type: ignore[attr-defined]
            for arg in (*call.args, *call.keywords):
                param = parameter(fn, call, arg, method)
                if param is not None:
                    value = arg.value if arg.__class__ is ast.keyword else arg  # type: ignore[attr-defined]
                    held = names[param]
                    held.append(value)
                    if value.__class__ is ast.Name:  # fairseq's `use_cuda = torch.cuda.is_available()` then
                        # `optimize_models(cfg, use_cuda, models)` (each value once: a recursive call
                        # passing its own parameter on would double the list at every call)
                        known = set(map(id, held))
                        held += [v for v in caller.get(value.id, ()) if id(v) not in known]
    if decided is not None:
        flags, fixed = decided
        for values_of in (chains, visible[id(tree)][0]):  # (a function's own names are read in it only)
            flags.update(key.rpartition(".")[2] for key, values in values_of.items()
                         if any(_spans_one_of(v, fixed) for v in values))
        # ... and the functions given one: a test of their parameter feeds from there (diffusers'
        # `_device_agnostic_dispatch(device, BACKEND_DEVICE_COUNT)` tests `device not in dispatch_table`)
        flags.update([called for called, sites in calls.items() for call, _ in sites
                      if any(v.__class__ is ast.Name and v.id in flags  # type: ignore[attr-defined]
                             for v in (*call.args, *(k.value for k in call.keywords)))])
    defs: dict[str, list[ast.AST]] = {}
    for fn in (*(fn for fn, _, _ in functions), *classes):
        defs.setdefault(fn.name, []).append(fn)  # type: ignore[attr-defined]
    for scope, found, scopes in scoped:  # every assignment is known: feed each guard its conditions' values
        for make, tests, guarded in found:
            feeds = _feeds(tests, scopes, chains)
            if near is not None and not any(_spans_one_of(n, near) for n in (*tests, *feeds)):
                continue
            guard = make()
            if guard.kind in _CONDITIONS:
                guard = replace(guard, condition=f"{id(scope)}:" + ";".join(ast.dump(t) for t in tests))
            if guard.kind == "if" or guard.kind == "ternary":
                devices = _feeds(tests, scopes, chains, _device_names)
                if devices:
                    # (a conditional's effects are its two values: nnsight's `device_map={"": 0} if
                    # device == "cuda" else {"": "cpu"}` loads on the CPU when `device` moves)
                    node = guarded[0]
                    effects = _effects(node) if guard.kind == "if" else (node.body, node.orelse)  # type: ignore[attr-defined]
                    guard = replace(guard, devices=tuple(lines.span(v) for v in devices),
                                    effects=tuple(lines.span(s) for s in effects))
            if feeds or defs:
                called = cache(partial(_callees, guarded, defs, lines)) if defs else tuple
                guard = replace(guard, feeds=tuple(lines.span(v) for v in feeds), calls=called)
            out.append(guard)
    out.sort(key=lambda g: (g.region.end_line - g.region.line, g.region.end_col - g.region.col))
    return out


# The guards whose tests are conditions (`Guard.condition`): not a skip mark, not a statement.
_CONDITIONS = frozenset({"if", "while", "ternary", "and", "exit"})
# Functions followed from one guard: deeper call chains than this are left to the person.
_MAX_CALLEES = 32


def _callees(guarded: list[ast.AST], defs: dict[str, list[ast.AST]], lines: LineIndex) -> tuple[Span, ...]:
    """The spans of the file's functions that `guarded` calls by name (`f(...)`, `self.f(...)`,
    `cls.f(...)`), and those they call in turn (pix2tex's `if torch.cuda.is_available():
    gpu_memory_check(model, args)`, whose body switches CUDA devices), or names as a value (RF-DETR's
    `measure = _measure_cuda if device == "cuda" else _wall_clock`); a class called is its whole
    body (MONAI's `if ... torch.cuda.is_available():` wraps a model in `TrtCompiler(model)`,
    whose methods build and run TensorRT engines)."""
    out: list[Span] = []
    seen: set[int] = set()
    todo = list(guarded)
    while todo and len(out) < _MAX_CALLEES:
        for node in walk(todo.pop()):
            cls = node.__class__
            if (cls is not ast.Name and cls is not ast.Attribute) or node.ctx.__class__ is not ast.Load:  # type: ignore[attr-defined]
                continue
            if cls is ast.Name:  # called, or picked to be called later (`f if ok else g`)
                name = node.id  # type: ignore[attr-defined]
            elif node.value.__class__ is ast.Name and node.value.id in ("self", "cls"):  # type: ignore[attr-defined]
                name = node.attr  # type: ignore[attr-defined]
            else:
                continue
            for fn in defs.get(name, ()):
                if id(fn) not in seen:
                    seen.add(id(fn))
                    out.append(lines.span(fn))
                    todo.append(fn)
    return tuple(out)


def _spans_one_of(node: ast.AST, near: Sequence[int]) -> bool:
    i = bisect.bisect_left(near, node.lineno)  # type: ignore[attr-defined]
    return i < len(near) and near[i] <= (node.end_lineno or node.lineno)  # type: ignore[attr-defined]


def _conditional(node: ast.AST, lines: LineIndex, targets: dict[int, str]) -> Guard:
    cls = node.__class__
    if cls is ast.IfExp:
        reads = frozenset(filter(None, (dotted(n) for branch in (node.body, node.orelse) for n in walk(branch)  # type: ignore[attr-defined]
                                        if n.__class__ in (ast.Name, ast.Attribute) and n.ctx.__class__ is ast.Load)))  # type: ignore[attr-defined]
        return Guard((lines.span(node.test),), lines.span(node), "ternary", sets=targets.get(id(node), ""),  # type: ignore[attr-defined]
                     reads=reads)
    message = _raised_message(node, lines) if cls is ast.If else None  # type: ignore[arg-type]
    return Guard((lines.span(node.test),), lines.span(node), "if" if cls is ast.If else "while", message)  # type: ignore[attr-defined]


def _and_chain(node: ast.AST, values: list[ast.AST], operand: ast.AST, lines: LineIndex) -> Guard:
    """The operands before `operand` guard it: the chain up to its end is their region."""
    whole, last = lines.span(node), lines.span(operand)
    return Guard(tuple(lines.span(v) for v in values), Span(whole.line, whole.col, last.end_line, last.end_col), "and")


def _named_marks(tree: ast.AST) -> dict[str, ast.AST]:
    """The module's skip marks bound to a name (`cuda_required = pytest.mark.skipif(...)`, then
    `@cuda_required`)."""
    out: dict[str, ast.AST] = {}
    for stmt in getattr(tree, "body", ()):
        if (stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Name
                and _skip_tests([stmt.value], {})):
            out[stmt.targets[0].id] = stmt.value
    return out


def _pytestmark(scope: ast.AST, named: dict[str, ast.AST]) -> list[ast.AST]:
    """The skip conditions a module's or class's `pytestmark = ...` (a mark or a list of them) applies."""
    for stmt in scope.body:  # type: ignore[attr-defined]
        if (stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Name
                and stmt.targets[0].id == "pytestmark"):
            value = stmt.value
            return _skip_tests(value.elts if value.__class__ in (ast.List, ast.Tuple) else [value], named)
    return []


def _module_skipped(scope: ast.AST, tests: list[ast.AST], lines: LineIndex) -> Guard:
    """`pytestmark`'s guard: the whole module (or class) it marks."""
    if scope.__class__ is ast.ClassDef:
        return Guard(tuple(lines.span(t) for t in tests), lines.span(scope), "skip")
    body = scope.body  # type: ignore[attr-defined]
    first, last = lines.span(body[0]), lines.span(body[-1])
    return Guard(tuple(lines.span(t) for t in tests), Span(first.line, first.col, last.end_line, last.end_col), "skip")


def _skip_tests(marks: Iterable[ast.AST | None], named: dict[str, ast.AST]) -> list[ast.AST]:
    """The conditions of the `pytest.mark.skipif(...)`, `unittest.skipIf(...)`, `skipUnless(...)`
    among `marks` (a function's decorators, a `pytest.param`'s marks), also of a mark `named`."""
    out: list[ast.AST] = []
    for dec in marks:
        if dec.__class__ is ast.Name:
            dec = named.get(dec.id)  # type: ignore[attr-defined]
        if dec.__class__ is ast.IfExp and any(_skips(n) for n in walk(dec) if n is not dec.test):  # type: ignore[attr-defined]
            out.append(dec.test)  # type: ignore[attr-defined]  # `marks=pytest.mark.skip(...) if not ok else []`
            continue
        if dec.__class__ is not ast.Call:
            continue
        func = dec.func
        name = func.attr if func.__class__ is ast.Attribute else func.id if func.__class__ is ast.Name else None
        if name in SKIPS:
            test = dec.args[0] if dec.args else next((k.value for k in dec.keywords if k.arg == "condition"), None)
            if test is not None:
                out.append(test)
    return out


def _skips(node: ast.AST) -> bool:
    """A skip mark (`pytest.mark.skip`, `skipif`, `unittest.skip...`), called or not."""
    name = node.attr if node.__class__ is ast.Attribute else None  # type: ignore[attr-defined]
    return name == "skip" or name in SKIPS


def _skipped(scope: ast.AST, tests: list[ast.AST], named: dict[str, ast.AST], lines: LineIndex) -> Guard:
    """A skip decorator's guard: its region runs from the first decorator to the end of the body,
    less the named marks at its head (`@cuda_required` is the test itself, stated elsewhere)."""
    decorators = scope.decorator_list  # type: ignore[attr-defined]
    head = next((d for d in decorators if d.__class__ is not ast.Name or d.id not in named), None)  # type: ignore[attr-defined]
    first = lines.span(head) if head is not None else _def_start(scope)
    end = lines.span(scope)
    return Guard(tuple(lines.span(t) for t in tests), Span(first.line, first.col, end.end_line, end.end_col), "skip")


def _def_start(scope: ast.AST) -> Span:
    """Where a decorated function's or class's `def`/`class` keyword stands (the node's own
    position; its decorators come before it)."""
    return Span(scope.lineno, scope.col_offset, scope.lineno, scope.col_offset)  # type: ignore[attr-defined]


def _marked(param: ast.AST, tests: list[ast.AST], lines: LineIndex) -> Guard:
    """A `pytest.param` skipped by its marks: its values are used only when the test runs."""
    return Guard(tuple(lines.span(t) for t in tests), lines.span(param), "skip")


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _scopes(tree: ast.AST) -> Iterator[tuple[ast.AST, list[ast.AST], ast.AST | None]]:
    """(scope, the nodes that belong to it, the scope around it): the module, then each function,
    lambda and class (after the scope around it), whose own nodes are not its parent's (a
    function's defaults and decorators are the parent's)."""
    todo: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while todo:
        scope, parent = todo.pop()
        own: list[ast.AST] = []
        stack = _children(scope, []) if scope is tree else _inner(scope)
        while stack:
            node = stack.pop()
            cls = node.__class__
            if cls in _SCOPES:
                todo.append((node, scope))
                stack += _outer(node)
                continue
            kept = _READ.get(cls)
            if kept is None:
                kept = _READ[cls] = cls in _GUARDING or any(_layout(cls))
            if kept:
                own.append(node)
            _children(node, stack)
        yield scope, own, parent


# The nodes `guards_in` reads of a scope: guards, assignments, returns, calls (they feed a
# function's parameters) and statements with blocks (which may hold asserts); the others are only
# walked through.
_GUARDING = frozenset({ast.If, ast.While, ast.IfExp, ast.BoolOp, ast.Assign, ast.AnnAssign, ast.Return, ast.Call})
_READ: dict[type, bool] = {}


# Leaving out fields that hold nothing the guard rule reads (contexts, operators, import aliases)
# changes no scope's relevant nodes.
_FIELDS = ChildFields(LEAVES)


def _children(node: ast.AST, out: list[ast.AST]) -> list[ast.AST]:
    """`out` extended by the node's children in `ast.iter_child_nodes` order (less `LEAVES` and
    `_BARREN`): the walk's hot loop, without a generator per node."""
    for f in _FIELDS[node.__class__]:
        v = getattr(node, f, None)
        if v.__class__ is list:
            out += [x for x in v if isinstance(x, ast.AST) and x.__class__ not in _BARREN]
        elif isinstance(v, ast.AST) and v.__class__ not in _BARREN:
            out.append(v)
    return out


_BARREN = frozenset({ast.Name, ast.Constant})  # the commonest nodes, and none holds another the rule reads


_LAYOUT: dict[type, tuple[tuple[str, ...], str | None]] = {}


def _layout(cls: type) -> tuple[tuple[str, ...], str | None]:
    """A node class's statement blocks (`_BLOCKS` it has) and the field of its handlers or cases."""
    layout = _LAYOUT.get(cls)
    if layout is None:
        fields = cls._fields  # type: ignore[attr-defined]
        holders = "handlers" if "handlers" in fields else "cases" if "cases" in fields else None
        layout = _LAYOUT[cls] = (tuple(f for f in _BLOCKS if f in fields), holders)
    return layout


def _outer(node: ast.AST) -> list[ast.AST]:
    """The parts of a function, lambda or class evaluated in the enclosing scope."""
    out: list[ast.AST] = [*getattr(node, "decorator_list", ()), *getattr(node, "bases", ()),
                          *(k.value for k in getattr(node, "keywords", ()))]
    args = getattr(node, "args", None)
    if args is not None and args.__class__ is ast.arguments:
        out += [d for d in (*args.defaults, *args.kw_defaults) if d is not None]
    return out


def _inner(node: ast.AST) -> list[ast.AST]:
    body = node.body  # type: ignore[attr-defined]
    return [body] if body.__class__ is not list else list(body)


def _conditions(test: ast.AST, none_test: bool = False) -> Iterator[tuple[str, bool]]:
    """The names a test uses as conditions: as a truth value (`if use_cuda`, `not args.cuda`,
    `a and b`, `use_gpu()` for a function of no arguments) or compared with a number (`n_gpu > 1`)
    or None, never with a string or as an argument; each with whether it is only tested for None
    (`features is None`)."""
    cls = test.__class__
    if cls is ast.Name or cls is ast.Attribute:
        key = dotted(test)
        if key is not None:
            yield key, none_test
    elif cls is ast.Call and test.func.__class__ is ast.Name and not test.args and not test.keywords:  # type: ignore[attr-defined]
        yield f"{test.func.id}()", none_test  # type: ignore[attr-defined]
    elif cls is ast.UnaryOp and test.op.__class__ is ast.Not:  # type: ignore[attr-defined]
        yield from _conditions(test.operand)  # type: ignore[attr-defined]
    elif cls is ast.BoolOp:
        for v in test.values:  # type: ignore[attr-defined]
            yield from _conditions(v)
    elif cls is ast.Compare:
        operands = [test.left, *test.comparators]  # type: ignore[attr-defined]
        if all(o.__class__ is not ast.Constant or o.value.__class__ in (int, float, bool)  # type: ignore[attr-defined]
               or o.value is None for o in operands):  # type: ignore[attr-defined]
            nones = all(o.__class__ is not ast.Constant or o.value is None for o in operands) and any(  # type: ignore[attr-defined]
                o.__class__ is ast.Constant for o in operands)
            for o in operands:
                if o.__class__ is not ast.Constant:
                    yield from _conditions(o, nones)


def _branch_values(node: ast.AST, names: dict[str, list[ast.AST]], chains: dict[str, list[ast.AST]]) -> None:
    """An `if`'s test decides the value of each name its branches assign (a statement of the
    branch itself): a test of that name later reads the `if`'s test too."""
    for stmt in (*node.body, *node.orelse):  # type: ignore[attr-defined]
        if stmt.__class__ is ast.Assign or stmt.__class__ is ast.AnnAssign:
            for target in getattr(stmt, "targets", None) or [stmt.target]:  # type: ignore[attr-defined]
                key = dotted(target)
                if key is not None:
                    (chains if "." in key else names).setdefault(key, []).append(node.test)  # type: ignore[attr-defined]


# A device or backend string whose rename flips a comparison with it: `"cuda"`, `"cuda:0"`, `"nccl"`.
_CUDA_STRING = re.compile(r"cuda(:\d+)?|nccl")


def _cuda_string(node: ast.AST) -> bool:
    """`"cuda"`, or a tuple, list or set literal holding it (`device in ("cuda", "mps")`)."""
    if node.__class__ in (ast.Tuple, ast.List, ast.Set):
        return any(map(_cuda_string, node.elts))  # type: ignore[attr-defined]
    return node.__class__ is ast.Constant and node.value.__class__ is str and bool(  # type: ignore[attr-defined]
        _CUDA_STRING.fullmatch(node.value))  # type: ignore[attr-defined]


def _device_names(node: ast.AST) -> Iterator[tuple[str, bool]]:
    """The names holding a device that `node` compares with a CUDA string (`device == "cuda"`,
    `device.type in ("cuda", "mps")`, `str(device).startswith("cuda")`, in `and`/`or`/`not`), or
    that it is (a value `device = args.device` reads; `f()` for what `device = f(...)` returns)."""
    cls = node.__class__
    if cls is ast.Compare:
        operands = [node.left, *node.comparators]  # type: ignore[attr-defined]
        if any(map(_cuda_string, operands)):
            for o in operands:
                yield from _device_names(o)
        return
    if cls is ast.BoolOp:
        for v in node.values:  # type: ignore[attr-defined]
            yield from _device_names(v)
        return
    if cls is ast.UnaryOp and node.op.__class__ is ast.Not:  # type: ignore[attr-defined]
        yield from _device_names(node.operand)  # type: ignore[attr-defined]
        return
    if cls is ast.Call:
        func = node.func  # type: ignore[attr-defined]
        if func.__class__ is ast.Attribute and func.attr == "startswith" and any(map(_cuda_string, node.args)):  # type: ignore[attr-defined]
            yield from _device_names(func.value)
        elif func.__class__ is ast.Name and func.id == "str" and len(node.args) == 1:  # type: ignore[attr-defined]
            yield from _device_names(node.args[0])  # type: ignore[attr-defined]
        elif func.__class__ is ast.Name:  # what a function of the file returns (`decide_device(...)`)
            yield f"{func.id}()", False
        return
    if cls is ast.Attribute and node.attr == "type":  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    key = dotted(node)
    if key is not None:
        yield key, False


# Statements that only report: skipping them changes no result.
_REPORTS = frozenset({"print", "warn", "warning", "info", "debug", "log"})


def _effects(node: ast.AST) -> Iterator[ast.stmt]:
    """The simple statements of an `if`'s branches, but `pass` and those that only report."""
    for stmt in (s for top in (*node.body, *node.orelse) for s in walk(top)):  # type: ignore[attr-defined]
        if not isinstance(stmt, ast.stmt) or hasattr(stmt, "body") or stmt.__class__ is ast.Pass:
            continue
        if stmt.__class__ is ast.Expr:
            value = stmt.value  # type: ignore[attr-defined]
            if value.__class__ is ast.Constant or (value.__class__ is ast.Call and (
                    getattr(value.func, "attr", None) or getattr(value.func, "id", None)) in _REPORTS):
                continue
        yield stmt


def _feeds(tests: Iterable[ast.AST], scopes: Sequence[dict[str, list[ast.AST]]],
           chains: dict[str, list[ast.AST]],
           conditions: Callable[[ast.AST], Iterator[tuple[str, bool]]] = _conditions) -> list[ast.AST]:
    """The values assigned to the conditions of `tests` (a name in the innermost scope that binds
    it), and to the conditions of those values (`use_gpu = use_cuda and not args.cpu`); with
    `_device_names`, to the devices they compare instead."""
    out: list[ast.AST] = []
    seen: set[tuple[str, bool]] = set()
    fed: set[int] = set()  # (a value reached through several names is one feed: a parameter holds its callers')
    todo = list(tests)
    while todo:
        for key, none_test in conditions(todo.pop()):
            if (key, none_test) in seen:
                continue
            seen.add((key, none_test))
            values = chains.get(key, []) if "." in key else next((n[key] for n in scopes if key in n), [])
            if none_test:
                # Only a value a condition makes None or not (`GradScaler() if amp else None`, `amp and
                # make()`) feeds a None test: `features = features.cuda()` is never None either way.
                values = [v for v in values if v.__class__ in (ast.IfExp, ast.BoolOp)]
            for v in values:
                if id(v) not in fed:
                    fed.add(id(v))
                    out.append(v)
                    todo.append(v)
    return out


def _asserts(block: list[ast.stmt], lines: LineIndex,
             out: list[tuple[Callable[[], Guard], list[ast.AST], list[ast.AST]]]) -> None:
    """The guards of the rest of a block: an `assert`, and an `if` with no else whose body leaves
    the block (`if not torch.cuda.is_available(): raise ...`, `return`, `continue`, `break`) or
    whose test is a negation."""
    for i, stmt in enumerate(block):
        if stmt.__class__ is ast.Assert:
            out.append((partial(_assert, stmt, block, lines), [stmt.test], list(block[i:])))  # type: ignore[attr-defined]
        elif (stmt.__class__ is ast.If and not stmt.orelse and i + 1 < len(block)  # type: ignore[attr-defined]
              and (stmt.body[-1].__class__ in _EXITS or stmt.test.__class__ is ast.UnaryOp  # type: ignore[attr-defined]
                   and stmt.test.op.__class__ is ast.Not)):  # type: ignore[attr-defined]
            out.append((partial(_early_exit, stmt, block, lines), [stmt.test], list(block[i:])))  # type: ignore[attr-defined]


# Statements that leave a block: an `if` ending in one guards what follows it, as an assert does.
# So does an `if not ...:` with no else: its body readies what follows for the path without CUDA
# (alpaca_eval's `if not torch.cuda.is_available(): model_kwargs["load_in_8bit"] = False`).
_EXITS = (ast.Raise, ast.Return, ast.Continue, ast.Break)


def _early_exit(stmt: ast.stmt, block: list[ast.stmt], lines: LineIndex) -> Guard:
    """`if not torch.cuda.is_available(): raise NotImplementedError(...)` then CUDA-only code:
    the test decides whether the rest of the block runs (sevenn's D3 correction)."""
    own, last = lines.span(stmt), lines.span(block[-1])
    return Guard((lines.span(stmt.test),), Span(own.line, own.col, last.end_line, last.end_col), "exit")  # type: ignore[attr-defined]


def _assert(stmt: ast.stmt, block: list[ast.stmt], lines: LineIndex) -> Guard:
    test = lines.span(stmt.test)  # type: ignore[attr-defined]
    own, last = lines.span(stmt), lines.span(block[-1])
    message = _message(stmt.msg, lines)  # type: ignore[attr-defined]
    return Guard((test,), Span(own.line, own.col, last.end_line, last.end_col), "assert", message)


def _message(msg: ast.AST | None, lines: LineIndex) -> Span | None:
    """The span of a message that is one string or f-string on one line."""
    if msg is None or not (msg.__class__ is ast.JoinedStr or (msg.__class__ is ast.Constant and isinstance(msg.value, str))):  # type: ignore[attr-defined]
        return None
    span = lines.span(msg)
    return span if span.line == span.end_line else None


def _raised_message(node: ast.If, lines: LineIndex) -> Span | None:
    """`if not torch.cuda.is_available(): raise RuntimeError("CUDA is required")`: the message."""
    body = node.body
    if len(body) != 1 or body[0].__class__ is not ast.Raise:
        return None
    exc = body[0].exc  # type: ignore[attr-defined]
    if exc.__class__ is not ast.Call or not exc.args:  # type: ignore[union-attr]
        return None
    return _message(exc.args[0], lines)  # type: ignore[union-attr]


class _Index:
    """Findings sorted by start, for the ones inside a span without a scan of them all."""

    def __init__(self, findings: Sequence[Finding]) -> None:
        self.items = sorted(findings, key=lambda f: _start(f.span))
        self.keys = [_start(f.span) for f in self.items]

    def within(self, span: Span) -> list[Finding]:
        lo = bisect.bisect_left(self.keys, _start(span))
        hi = bisect.bisect_right(self.keys, _end(span))
        return [f for f in self.items[lo:hi] if inside(f.span, span)]


def _matters(f: Finding, target: Target) -> bool:
    """A finding that stays unfixed under a flipped guard breaks or changes the program. Hints (info
    findings with no fix for the target) do not; an info finding whose fix for the target the run
    does not apply does, e.g. `torch.backends.cudnn.benchmark = True` under
    `if device.startswith("cuda"):` (found by the behaviour property test: the flipped guard ran
    CUDA-only code that used to be skipped)."""
    fix = f.fix_for(target)
    return f.severity is not Severity.INFO or (fix is not None and bool(fix.edits))


def _rewrites(edit: Span, found: Span) -> bool:
    """Whether an edit rewrites all a finding is about: its text, or the token inside its quotes
    (`nccl` of `"nccl"`)."""
    return (inside(edit, found) and edit.line == edit.end_line == found.line == found.end_line
            and (found.end_col - found.col) - (edit.end_col - edit.col) <= 2)


def _with_edits(region: list[Finding], edits: list[tuple[Span, Finding]], span: Span) -> list[Finding]:
    """`region` and the findings (not in it) with an edit inside `span`."""
    ids = {id(f) for f in region}
    for at, f in edits:
        if id(f) not in ids and inside(at, span):
            ids.add(id(f))
            region.append(f)
    return region


def _region(index: _Index, guard: Guard) -> list[Finding]:
    """The findings the guard decides, those of its test where it stands elsewhere (a named skip
    mark, `cuda_required = pytest.mark.skipif(...)`), and those in the values that feed its test."""
    region = index.within(guard.region)
    apart = [t for t in guard.tests if not inside(t, guard.region)]
    if not guard.feeds and not apart:
        return region
    ids = {id(f) for f in region}
    for span in (*apart, *guard.feeds):
        for f in index.within(span):
            if id(f) not in ids:
                ids.add(id(f))
                region.append(f)
    return region


@dataclass(frozen=True, slots=True)
class Block:
    """One guard that must stay: the findings whose fix it withholds, and the finding that is why."""

    guard: Guard
    guard_findings: tuple[Finding, ...]
    withheld: tuple[Finding, ...]
    why: Finding
    # Held for another guard of the function: the line of its test, and whether that test reads
    # this one's value (else it is the same test)
    twin: int = 0
    reads: bool = False


def blocked(
    guards: Sequence[Guard], findings: Sequence[Finding], fixed: Callable[[Finding], bool], target: Target,
    net: Collection[str] = (),
) -> list[Block]:
    """Guards whose test holds a fixed finding while what they guard holds one that is not fixed.
    `fixed` says which findings get their fix; the withheld ones count as unfixed for the guards
    around them (a blocked inner guard blocks the outer one too: inner guards come first). A
    finding of the `net` codes (the CUDA-word net, which a specific finding on its line may yet
    replace after the scan) is cited as the reason only when no other is there."""
    index = _Index(findings)
    withheld: set[int] = set()
    out: list[Block] = []

    # A finding located elsewhere whose fix edits inside a guard (`init_process_group(backend=backend)`
    # renames the `"nccl"` of `backend = "nccl" if torch.cuda.is_available() else "gloo"`) is decided
    # by that guard too; and a finding that such an edit rewrites (that `"nccl"`'s own NM402, which
    # has no fix of its own) is fixed when the edit is.
    edits = _fix_edits(findings, fixed, target)
    on_line: dict[int, list[tuple[Span, Finding]]] = {}
    for at, g in edits:
        on_line.setdefault(at.line, []).append((at, g))

    def is_fixed(f: Finding) -> bool:
        if id(f) in withheld:
            return False
        # (a finding with a fix of its own is fixed by it only: `.cuda(torch.cuda.current_device())`,
        # located at its argument, is not fixed by the argument's rename)
        return fixed(f) or (not _has_fix(f, target) and any(
            g is not f and id(g) not in withheld and _rewrites(at, f.span) for at, g in on_line.get(f.span.line, ())))
    regions = [(g, _with_edits(_region(index, g), edits, g.region)) for g in guards]
    regions = [(g, r) for g, r in regions if r]
    statements = _shared_statements(findings)
    done: set[int] = set()
    held: dict[str, tuple[Finding, int]] = {}  # a blocked guard's condition -> (why, its test's line)
    # a held choice's condition -> (what it reads, why, its test's line)
    readers: dict[str, list[tuple[frozenset[str], Finding, int]]] = {}
    changed = True
    while changed:  # an outer guard may be blocked only by what an inner one withheld
        changed = False
        for key, group in list(statements.items()):
            why = next((f for f in group if not is_fixed(f) and _matters(f, target)), None)
            if why is None:
                continue
            del statements[key]
            taken = [f for f in group if is_fixed(f)]
            if taken:
                withheld.update(id(f) for f in taken)
                span = Span(group[0].span.line, group[0].span.col, group[-1].span.end_line, group[-1].span.end_col)
                out.append(Block(Guard((), span, "statement"), (), tuple(taken), why))
                changed = True
        for i, (guard, region) in enumerate(regions):
            if i in done:
                continue
            tests = [f for f in region if any(inside(f.span, t) for t in (*guard.tests, *guard.feeds))]
            # A test whose fix this run does not apply (unsafe, withheld) stays CUDA's: what it
            # guards stays with it (deepchem's `if torch.cuda.is_available(): device =
            # torch.device("cuda")`, the check unsafe: renamed alone, the string is in a branch
            # Trainium never takes and a CUDA host breaks in).
            waiting = next((f for f in tests if not is_fixed(f) and _has_fix(f, target)), None)
            if waiting is not None:
                taken = [f for f in region if is_fixed(f)]
                if taken:
                    withheld.update(id(f) for f in taken)
                    out.append(Block(guard, (), tuple(taken), waiting))
                    changed = True
                if guard.condition and guard.reads:
                    # the same test in the function choosing a value this one reads stays too (a
                    # TorchServe handler's `self.map_location = 'cuda' if torch.cuda.is_available()
                    # else 'cpu'`, read by its unsafe `map_location + ':' + gpu_id` choice)
                    readers.setdefault(guard.condition, []).append((guard.reads, waiting, guard.tests[0].line))
                    changed = True
                done.add(i)
                continue
            moving = [f for f in tests if is_fixed(f)]
            if not moving:
                continue
            test_ids = {id(f) for f in tests}
            reasons = [f for f in region if id(f) not in test_ids and _matters(f, target)
                       and (not is_fixed(f) or _keeps_cuda(f, target)) and not f.details.get("variable")]
            if not reasons:  # what runs in the functions it calls
                reasons = [f for span in guard.calls() for f in index.within(span)
                           if id(f) not in test_ids and _matters(f, target) and not is_fixed(f)
                           and not f.details.get("variable")]
            twin, by_reader = 0, False
            if not reasons and guard.condition in held:  # the same test, held elsewhere in the function
                reasons, twin = [held[guard.condition][0]], held[guard.condition][1]
            if not reasons and guard.devices:
                # docling's `decide_device()` still returns `"cuda:0"` (held, or no fix): renamed,
                # `if device.startswith("cuda"):` no longer takes that device's branch
                reasons = [f for span in guard.devices for f in index.within(span)
                           if not is_fixed(f) and _kept_string(f, net)][:1]
            if not reasons and guard.sets:
                reader = next(((why, line) for reads, why, line in readers.get(guard.condition, ()) if guard.sets in reads), None)
                if reader is not None:
                    reasons, twin, by_reader = [reader[0]], reader[1], True
            if not reasons:
                continue
            why = min(reasons, key=lambda f: f.code in net)  # the first, a specific one if any
            taken = [f for f in region if is_fixed(f)]
            if guard.devices and any(not index.within(e) for e in guard.effects):
                fed = [f for span in guard.devices for f in index.within(span) if is_fixed(f) and id(f) not in test_ids]
                moving += fed
                taken += fed
            withheld.update(id(f) for f in taken)
            out.append(Block(guard, tuple(moving), tuple(taken), why, twin, by_reader))
            if guard.condition:
                held.setdefault(guard.condition, (why, guard.tests[0].line))
            done.add(i)
            changed = True
    return out


def _kept_string(f: Finding, net: Collection[str]) -> bool:
    """A device string that stays CUDA's: a device finding, or a quoted CUDA word of the net."""
    return f.category == "device" or (f.code in net and f.symbol[:1] in _QUOTES)


def _shared_statements(findings: Sequence[Finding]) -> dict[tuple[int | None, int], list[Finding]]:
    """The `torch.cuda` API findings that share a statement, where there are several: renamed in
    part, one expression mixes the devices (`torch.neuron.max_memory_allocated(i) for i in
    range(torch.cuda.device_count())`, `torch.neuron.set_device(rank % torch.cuda.device_count())`)."""
    groups: dict[tuple[int | None, int], list[Finding]] = {}
    for f in findings:
        if f.symbol.startswith(_CUDA_API):
            groups.setdefault((f.cell, f.statement_line), []).append(f)
    # ... with the findings whose text holds one of them (espnet's `f"cuda:{torch.cuda.current_device()}"`,
    # renamed alone, names a `neuron` device by a CUDA index), and the statement's device choices
    # respelled in place (poutyne's `[f"cuda:{i}" for i in range(torch.cuda.device_count())]`)
    for f in findings:
        group = groups.get((f.cell, f.statement_line))
        if group is not None and all(f is not g for g in group) and (
                (f.category == "device" and _renamed_in_place(f))
                or any(f.span.contains(g.span) and f.span != g.span for g in group)):
            group.append(f)
    return {key: sorted(group, key=lambda f: _start(f.span)) for key, group in groups.items() if len(group) > 1}


_CUDA_API = "torch.cuda."


def _renamed_in_place(f: Finding) -> bool:
    """A device choice whose fix respells it, not a device type listed as data that gains a
    `neuron` entry beside it (`{"cuda": torch.cuda.empty_cache}` keeps its CUDA entry and what it
    maps to)."""
    return any(inside(e.span, f.span) and e.span != Span(f.span.end_line, f.span.end_col, f.span.end_line, f.span.end_col)
               for fix in f.fixes for e in fix.edits)


def held_note(block: Block, unsafe: bool = False) -> str:
    """Why a finding whose fix the block withholds stays, said on that finding (`unsafe`: see
    `withheld_note`)."""
    if block.guard.kind == "statement":
        why = block.why
        return f"its statement also uses `{why.symbol}` ({why.code}, {_where(why)}){_left_out(unsafe)}"
    return f"it is guarded by the condition at line {block.guard.tests[0].line}, which stays as it is"


def withheld_note(block: Block, *, unsafe: bool = False) -> str:
    """Why a run of fixes leaves out one the block withholds, said on it (`rewrite`'s skipped
    fixes); `unsafe`: the finding that is why has an unsafe fix, which a run of safe fixes leaves out."""
    if block.guard.kind == "statement":
        return held_note(block, unsafe)
    stays = "moves only with --unsafe-fixes" if unsafe else "stays"
    return f"the guard at line {block.guard.tests[0].line} {stays}: {reason(block, unsafe=unsafe)}"


def _left_out(unsafe: bool) -> str:
    """How a note ends that names the finding holding a fix back."""
    return ", whose fix is unsafe" if unsafe else ", which is not rewritten"


def _stuck(guards: Sequence[Guard], findings: Sequence[Finding], fixed: Callable[[Finding], bool], target: Target,
           holds: Callable[[Finding], bool]) -> list[tuple[Guard, list[Finding]]]:
    """Guards whose test holds a CUDA finding and no fixed one (`holds`: whether a finding keeps
    its test CUDA's; see `settle`), with the fixed findings of what they guard: the test stays
    CUDA's, so they stay too (RF-DETR's `torch.device("cuda" if backend == "nccl" else "cpu")`:
    renamed alone, the `neuron` branch is never taken on Trainium, and a CUDA host takes it)."""
    index = _Index(findings)
    # (a finding located elsewhere whose fix edits inside the region stays too: compressed-tensors'
    # `init_process_group(backend=backend)` renames the `"nccl"` of `if accel_type == "cuda":`)
    edits = _fix_edits(findings, fixed, target)
    out = []
    # What an inner guard keeps stays for the guards around it (innermost first): sparseml's `if
    # name != "cuda" or not torch.cuda.is_available(): raise`, whose `or` keeps the check, then
    # keeps the rest of the block (`count = torch.cuda.device_count()`).
    kept: set[int] = set()
    for guard in guards:
        # (with the values that feed its test: bentoml's `gpus = os.getenv("CUDA_VISIBLE_DEVICES", "")`
        # stays, so `torch.device("cuda" if gpus not in ("", "-1") else "cpu")` does too)
        region = _with_edits(_region(index, guard), edits, guard.region)
        tests = [f for f in region if any(inside(f.span, t) for t in (*guard.tests, *guard.feeds))]
        # (a test that moves in part is `blocked`'s: what it guards decides)
        if not any(fixed(f) and id(f) not in kept for f in tests) and any(
                (holds(f) or id(f) in kept) and _matters(f, target) for f in tests):
            taken = [f for f in region if fixed(f) and id(f) not in kept]
            if taken:
                kept.update(map(id, taken))
                out.append((guard, taken))
    return out


def _keeps_cuda(f: Finding, target: Target) -> bool:
    """A device string whose fix only adds beside it (a `"neuron"` entry after a listed `"cuda"`):
    the CUDA value stays, and under a guard that moves, Trainium now reaches it (optimum-quanto's
    `if torch.cuda.is_available(): devices += ["cuda"]` made every test run a `cuda` case)."""
    fix = f.fix_for(target)
    return (f.category == "device" and fix is not None and bool(fix.edits)
            and all(e.span.line == e.span.end_line and e.span.col == e.span.end_col for e in fix.edits))


def _fix_edits(findings: Sequence[Finding], fixed: Callable[[Finding], bool], target: Target) -> list[tuple[Span, Finding]]:
    """Each edit the fixed findings make, with its finding."""
    return [(e.span, f) for f in findings if fixed(f) for e in getattr(f.fix_for(target), "edits", ())]


def _has_fix(f: Finding, target: Target) -> bool:
    fix = f.fix_for(target)
    return fix is not None and bool(fix.edits)


def _where(f: Finding) -> str:
    return f"line {f.span.line}"


def reason(block: Block, fed: bool = False, unsafe: bool = False) -> str:
    """Why the guard stays; `fed`: said of a finding in a value the test reads (an assignment,
    a call's argument), not in the test itself; `unsafe`: see `withheld_note`."""
    why = block.why
    what = f"`{why.symbol}`" if why.symbol else why.code
    # (a CUDA word the report leaves out, another finding being on its line, is cited by its line only)
    said = f"{what} ({_where(why) if why.details.get('unreported') else f'{why.code}, {_where(why)}'}){_left_out(unsafe)}"
    if block.twin:
        return (f"the check at line {block.twin}, which reads the value it picks, stays ({said})" if block.reads
                else f"the same check at line {block.twin} stays ({said})")
    if any(inside(why.span, t) for t in (*block.guard.tests, *block.guard.feeds)):
        return f"its test depends on {said}"
    if any(inside(why.span, t) for t in block.guard.devices):
        return f"the device its test compares may be {said}"
    if fed:
        return f"it feeds the test at line {block.guard.tests[0].line}, and that test guards {said}"
    return f"it guards {said}"


def settle(findings: Sequence[Finding], tree: ast.AST, lines: LineIndex, targets: Iterable[Target],
           net: frozenset[str] = frozenset(), hazards: frozenset[str] = frozenset(),
           decided: set[str] | None = None) -> list[Finding]:
    """Scan-time guard rule: drop each target's fixes inside a guard that cannot move whole, and
    make the guard's finding say why; then make unsafe each safe fix that moves only with an unsafe
    one (`_safe_alone`). `net`: see `blocked`; `hazards`: codes that are not about CUDA, the dtype
    hazards, which never hold a guard's test to CUDA; `decided`: see `guards_in`. A finding left
    with no fix at all becomes manual."""
    fixed_lines = {n for f in findings if f.fixes for n in range(f.span.line, f.span.end_line + 1)}

    def holds(f: Finding) -> bool:
        """Whether the finding keeps a test it is in CUDA's: not a dtype hazard, and of the
        CUDA-word net only a string (`"cuda" in example`), not a name (`if use_cuda:` moves)."""
        return f.code not in hazards and (f.code not in net or f.symbol[:1] in _QUOTES)

    staying = {f.span.line for f in findings if not f.fixes and holds(f)}
    guards = guards_in(tree, lines, sorted(fixed_lines | staying), None if decided is None else (decided, sorted(fixed_lines)))
    if not guards and not _shared_statements(findings):
        return list(findings)
    dropped: dict[int, set[Target]] = {}
    notes: dict[int, list[str]] = {}
    targets = tuple(targets)
    findings = _share_removals(findings, guards, targets)
    for target in targets:

        def fixed(f: Finding, target: Target = target) -> bool:
            fix = f.fix_for(target)
            return fix is not None and bool(fix.edits) and fix.applicability in (FixClass.SAFE, FixClass.UNSAFE)

        for block in blocked(guards, findings, fixed, target, net):
            for f in block.withheld:
                dropped.setdefault(id(f), set()).add(target)
            for f in block.guard_findings:
                text = reason(block, fed=not any(inside(f.span, t) for t in block.guard.tests))
                if text not in notes.setdefault(id(f), []):
                    notes[id(f)].append(text)
            for f in block.withheld:
                if f not in block.guard_findings:
                    note = held_note(block)
                    if note not in notes.setdefault(id(f), []):
                        notes[id(f)].append(note)
        for guard, taken in _stuck(guards, findings, fixed, target, holds):
            note = f"it is guarded by the condition at line {guard.tests[0].line}, which stays CUDA's"
            for f in taken:
                dropped.setdefault(id(f), set()).add(target)
                if note not in notes.setdefault(id(f), []):
                    notes[id(f)].append(note)
    words = _retell_messages(findings, guards, lines)
    if not dropped and not words:
        return _safe_alone(findings, guards, targets, net)
    out: list[Finding] = []
    for f in findings:
        key = id(f)
        lost = dropped.get(key)
        if key in words:
            f = replace(f, fixes=tuple(
                x if x.target in (lost or ()) else
                replace(x, edits=x.edits + tuple(replace(e, replacement=_SAYS[x.target]) for e in words[key]))
                for x in f.fixes))
        if not lost:
            out.append(f)
            continue
        fixes = tuple(x for x in f.fixes if x.target not in lost)
        cls = f.fix_class if fixes else FixClass.MANUAL
        only = f" for the {' and '.join(sorted(t.value for t in lost))} target" if fixes else ""
        message = f"{f.message}; left as is{only} because {' and '.join(notes[key])}"
        out.append(replace(f, fixes=fixes, fix_class=cls, message=message))
    return _safe_alone(out, guards, targets, net)


def _safe_alone(findings: Sequence[Finding], guards: Sequence[Guard], targets: Sequence[Target],
                net: frozenset[str]) -> list[Finding]:
    """`findings` with each safe fix that moves only with an unsafe one made unsafe too: a
    `rewrite` of safe fixes alone holds it back with its guard or statement (`rewrite.apply`), so
    only `--unsafe-fixes` applies it, and the scan's count of safe fixes is what `rewrite --apply`
    changes (linear-operator's `if torch.cuda.is_available(): torch.cuda.manual_seed_all(...)`,
    the check's fix unsafe)."""
    why: dict[int, dict[Target, str]] = {}
    for target in targets:

        def safe(f: Finding, target: Target = target) -> bool:
            fix = f.fix_for(target)
            return fix is not None and bool(fix.edits) and fix.applicability is FixClass.SAFE

        for block in blocked(guards, findings, safe, target, net):
            fix = block.why.fix_for(target)
            said = withheld_note(block, unsafe=fix is not None and fix.applicability is FixClass.UNSAFE)
            for f in block.withheld:
                why.setdefault(id(f), {}).setdefault(target, said)
    if not why:
        return list(findings)
    out: list[Finding] = []
    for f in findings:
        unsafe = why.get(id(f))
        if unsafe is None:
            out.append(f)
            continue
        fixes = tuple(replace(x, applicability=FixClass.UNSAFE, title=f"{x.title} (unsafe: {unsafe[x.target]})")
                      if x.target in unsafe and x.applicability is FixClass.SAFE else x for x in f.fixes)
        cls = FixClass.UNSAFE if f.fix_class is FixClass.SAFE and all(
            x.applicability is FixClass.UNSAFE for x in fixes) else f.fix_class
        out.append(replace(f, fixes=fixes, fix_class=cls))
    return out


_QUOTES = frozenset("\"'")
_CUDA_WORD = re.compile(r"\bCUDA\b")
_SAYS = {Target.NEURON: "Neuron", Target.ACCELERATOR: "an accelerator"}


def _retell_messages(findings: Sequence[Finding], guards: Sequence[Guard], lines: LineIndex) -> dict[int, tuple[Edit, ...]]:
    """`assert torch.cuda.is_available(), "CUDA is required"`, `if not torch.cuda.is_available():
    raise RuntimeError(f"CUDA is required ({why})")`: when the guard moves, its message stops
    saying CUDA (the word in the string's text only, never inside an f-string's `{...}`). Per
    finding of the guard's test (the first one carries them), the word's edits:
    `Edit.replacement` is filled in per target."""
    out: dict[int, tuple[Edit, ...]] = {}
    index = _Index(findings)
    for guard in guards:
        if guard.message is None:
            continue
        m_span = guard.message
        text = _outside_braces(lines.line(m_span.line)[m_span.col : m_span.end_col])
        words = [Edit(Span(m_span.line, m_span.col + m.start(), m_span.line, m_span.col + m.end()), "")
                 for m in _CUDA_WORD.finditer(text)]
        carrier = next((f for f in index.within(guard.tests[0]) if f.fixes), None)
        if words and carrier is not None:
            out[id(carrier)] = tuple(words)
    return out


def _outside_braces(text: str) -> str:
    """An f-string's source with its replacement fields blanked (`{{` and `}}` are text)."""
    if "{" not in text:
        return text
    out = list(text)
    depth = i = 0
    while i < len(text):
        c = text[i]
        if depth == 0 and c in "{}" and text[i + 1 : i + 2] == c:
            i += 2
            continue
        if c == "{":
            depth += 1
        if depth:
            out[i] = " "
        if c == "}" and depth:
            depth -= 1
        i += 1
    return "".join(out)


def _share_removals(findings: Sequence[Finding], guards: Sequence[Guard], targets: Sequence[Target]) -> list[Finding]:
    """When a fix removes a whole guarded statement (its block emptied, `compute._emptied_guard`),
    the findings in the guard's test take that same edit (applied once) instead of an edit inside
    the removed text, which would only be skipped as an overlap."""
    out = list(findings)
    position = {id(f): i for i, f in enumerate(out)}
    index = _Index(out)
    for guard in guards:
        if guard.kind != "if":
            continue
        region = index.within(guard.region)
        for target in targets:
            covering = next(
                (x for f in region if (x := f.fix_for(target)) is not None
                 and any(_start(e.span) <= _start(guard.region) and _end(guard.region) <= _end(e.span) for e in x.edits)),
                None,
            )
            if covering is None:
                continue
            for f in region:
                if not any(inside(f.span, t) for t in guard.tests):
                    continue
                current = out[position[id(f)]]
                own = current.fix_for(target)
                if own is None or own.edits == covering.edits:
                    continue
                # The removal needs what it removes to go: it is as safe as the fix that removes it.
                shared = replace(own, edits=covering.edits, add_imports=(), applicability=covering.applicability)
                out[position[id(f)]] = replace(current, fixes=tuple(shared if x is own else x for x in current.fixes))
    return out
