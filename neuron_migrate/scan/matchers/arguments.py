"""`match.arguments`: one argument of a call, by callee and keyword/position, with its literal
value in `values`, outside `not_values`, present at all, or `missing`.

A value is a literal (string, number, bool, None, negative number) or a name whose value is
known: a parameter default of an enclosing function, a module-level constant, or an argparse
option default (`args.backend` after `add_argument("--backend", default="nccl")`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from neuron_migrate.ruleset.model import ArgumentPattern, Rule
from neuron_migrate.scan.matchers.globs import compile_glob, is_glob

UNKNOWN: Any = object()  # a value that is not a known literal

Candidate = tuple[Rule, ArgumentPattern]


class ArgumentTable:
    __slots__ = ("by_name", "by_qualified", "globs", "any_by_keyword", "any_positional", "_glob_cache", "_excluded")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.by_name: dict[str, list[Candidate]] = {}  # ".name" callees
        self.by_qualified: dict[str, list[Candidate]] = {}
        self.globs: list[tuple[Any, list[Candidate]]] = []
        self.any_by_keyword: dict[str, list[Candidate]] = {}  # "*" callees, found by keyword
        self.any_positional: list[Candidate] = []  # "*" callees without a keyword
        glob_map: dict[str, list[Candidate]] = {}
        # Per pattern, the callees it does not apply to (`!*Tokenizer*.from_pretrained`: a
        # tokenizer places nothing on a device), by their qualified names.
        self._excluded: dict[int, list[Any]] = {}
        for rule in rules:
            for pat in rule.match.arguments:
                excluded = [compile_glob(c[1:]) for c in pat.call if c.startswith("!")]
                if excluded:
                    self._excluded[id(pat)] = excluded
                for callee in pat.call:
                    cand = (rule, pat)
                    if callee.startswith("!"):
                        continue
                    if callee == "*":
                        if pat.keyword:
                            self.any_by_keyword.setdefault(pat.keyword, []).append(cand)
                        else:
                            self.any_positional.append(cand)
                    elif callee.startswith("."):
                        self.by_name.setdefault(callee[1:], []).append(cand)
                    elif is_glob(callee):
                        glob_map.setdefault(callee, []).append(cand)
                    else:
                        self.by_qualified.setdefault(callee, []).append(cand)
        self.globs = [(compile_glob(g), c) for g, c in glob_map.items()]
        self._glob_cache: dict[str, list[Candidate]] = {}

    def __bool__(self) -> bool:
        return bool(self.by_name or self.by_qualified or self.globs or self.any_by_keyword or self.any_positional)

    def candidates(self, method: str | None, qualified: str | None, keywords: list[ast.keyword]) -> list[Candidate]:
        """The patterns a call may match: by the method it calls (`x.cuda(...)`; None for a call
        of a name), its qualified name, its keywords."""
        found: list[Candidate] = []
        if method is not None:
            c = self.by_name.get(method)
            if c:
                found.extend(c)
        if qualified is not None:
            named = self.of_callee(qualified)
            if named:
                found.extend(named)
        if self.any_by_keyword:
            for kw in keywords:
                c = self.any_by_keyword.get(kw.arg)  # type: ignore[arg-type]
                if c:
                    found.extend(c)
        if self.any_positional:
            found.extend(self.any_positional)
        if self._excluded and qualified is not None:
            found = [c for c in found if not self._excludes(c[1], qualified)]
        return found

    def _excludes(self, pat: ArgumentPattern, qualified: str) -> bool:
        return any(g.match(qualified) for g in self._excluded.get(id(pat), ()))


    def of_callee(self, qualified: str) -> Sequence[Candidate]:
        """The patterns whose callee is `qualified` by name or glob (not those of any callee)."""
        exact = self.by_qualified.get(qualified, ())
        if not self.globs:
            return exact
        hit = self._glob_cache.get(qualified)
        if hit is None:
            hit = self._glob_cache[qualified] = [c for regex, cs in self.globs if regex.match(qualified) for c in cs]
        return [*exact, *hit] if hit else exact


def find_argument(call: ast.Call, pat: ArgumentPattern) -> ast.AST | None:
    """The keyword (an `ast.keyword`) or positional expression the pattern designates, if present."""
    if pat.keyword is not None:
        for kw in call.keywords:
            if kw.arg == pat.keyword:
                return kw
    if pat.position is not None and pat.position < len(call.args):
        # Positions after a `*args` are unknown.
        if not any(a.__class__ is ast.Starred for a in call.args[: pat.position + 1]):
            return call.args[pat.position]
    return None


def may_be_present(call: ast.Call, pat: ArgumentPattern) -> bool:
    """Whether `**kwargs` or `*args` could be supplying the argument the pattern calls missing."""
    if any(kw.arg is None for kw in call.keywords):
        return True
    return pat.position is not None and any(a.__class__ is ast.Starred for a in call.args)


def holds_suffix(node: ast.AST, suffixes: tuple[str, ...]) -> bool:
    """Whether a string with one of `suffixes` is written anywhere in the argument's expression."""
    return any(n.__class__ is ast.Constant and isinstance(n.value, str) and n.value.endswith(suffixes)  # type: ignore[attr-defined]
               for n in ast.walk(node))


def either_way(rule: Rule, pat: ArgumentPattern) -> bool:
    """Whether `rule` also matches the call with the argument `pat` calls missing present, whatever
    its value: then each call is a site (`DataParallel(model, **kwargs)`), what `**kwargs` holds or not."""
    return any(not p.missing and not p.values and not p.not_values and p.call == pat.call
               and p.keyword == pat.keyword and p.position == pat.position for p in rule.match.arguments)


def literal_value(node: ast.AST) -> Any:
    """The Python value of a literal node, or UNKNOWN."""
    cls = node.__class__
    if cls is ast.Constant:
        return node.value  # type: ignore[attr-defined]
    if (cls is ast.List or cls is ast.Tuple) and not node.elts:  # type: ignore[attr-defined]
        return ()
    if cls is ast.UnaryOp and node.op.__class__ is ast.USub:  # type: ignore[attr-defined]
        inner = node.operand  # type: ignore[attr-defined]
        if inner.__class__ is ast.Constant and inner.value.__class__ in (int, float):
            return -inner.value
    return UNKNOWN


class NamedValueTable:
    """The argument patterns with `named` globs: which a name holding the argument's value matches."""

    __slots__ = ("_patterns", "_cache")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self._patterns = [(compile_glob(g), rule, pat) for rule in rules for pat in rule.match.arguments
                          for g in pat.named]
        self._cache: dict[str, list[Candidate]] = {}

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def match(self, name: str) -> list[Candidate]:
        key = name.lower().lstrip("_")
        hit = self._cache.get(key)
        if hit is None:
            found = {(rule.code, id(pat)): (rule, pat) for rx, rule, pat in self._patterns if rx.match(key)}
            hit = self._cache[key] = list(found.values())
        return hit


def assigned_literals(value: ast.AST) -> list[ast.AST]:
    """The literals a name assigned `value` may hold: the value, each branch of a conditional,
    each element of a list or tuple of options (`[{"": 0}, "auto"]`)."""
    out: list[ast.AST] = []
    for branch in branches(value):
        if branch.__class__ in (ast.List, ast.Tuple):
            out += [b for e in branch.elts for b in branches(e)]  # type: ignore[attr-defined]
        else:
            out.append(branch)
    return out


def holds_value(pat: ArgumentPattern, literal: ast.AST) -> bool:
    """Whether `literal` is a value `pat` matches (for `in_dict`, one of its dict's values)."""
    if pat.in_dict:
        return any(value_matches(pat, v) for v in map(literal_value, dict_value_nodes(literal)) if v is not UNKNOWN)
    value = literal_value(literal)
    return value is not UNKNOWN and value_matches(pat, value)


def static_value(node: ast.AST) -> Any:
    """`literal_value`, or for a device-map-like dict of literals (`{"": 0}`, `dict(a=1)`) a
    hashable form of its items: what a variable may be remembered as; UNKNOWN otherwise."""
    value = literal_value(node)
    if value is not UNKNOWN or node.__class__ not in (ast.Dict, ast.Call):
        return value
    if node.__class__ is ast.Dict:
        keys = [literal_value(k) if k is not None else UNKNOWN for k in node.keys]  # type: ignore[attr-defined]
    else:
        keys = [kw.arg for kw in node.keywords] if dict_value_nodes(node) else [UNKNOWN]  # type: ignore[attr-defined, union-attr]
    values = [literal_value(v) for v in dict_value_nodes(node)]
    if not values or UNKNOWN in keys or UNKNOWN in values or len(values) != len(keys):
        return UNKNOWN
    return ("dict", tuple(zip(keys, values, strict=True)))


def same_value(a: Any, b: Any) -> bool:
    """YAML `true` must not equal source `1`: bools compare only with bools."""
    if (a.__class__ is bool) != (b.__class__ is bool):
        return False
    return a == b


def harmless(call: ast.Call, pat: ArgumentPattern) -> bool:
    """Whether one of the pattern's `unless` arguments has a value that makes the call harmless."""
    for u in pat.unless:
        arg = find_argument(call, u)
        if arg is not None and value_matches(u, literal_value(arg.value if arg.__class__ is ast.keyword else arg)):  # type: ignore[attr-defined]
            return True
    return False


def value_matches(pat: ArgumentPattern, value: Any) -> bool:
    if pat.values:
        return value is not UNKNOWN and any(same_value(v, value) for v in pat.values)
    if pat.not_values:
        return value is not UNKNOWN and not any(same_value(v, value) for v in pat.not_values)
    return True


def branches(node: ast.AST) -> list[ast.AST]:
    """The values a conditional expression may take (`a if p else b if q else c` -> a, b, c)."""
    if node.__class__ is ast.IfExp:
        return [*branches(node.body), *branches(node.orelse)]  # type: ignore[attr-defined]
    return [node]


def dict_value_nodes(node: ast.AST) -> list[ast.AST]:
    """The value expressions of a dict literal (`{"": 0}`) or `dict(k=v)` call; [] for anything else."""
    if node.__class__ is ast.Dict:
        return list(node.values)  # type: ignore[attr-defined]
    if node.__class__ is ast.Call and node.func.__class__ is ast.Name and node.func.id == "dict":  # type: ignore[attr-defined]
        return [kw.value for kw in node.keywords if kw.arg is not None]  # type: ignore[attr-defined]
    return []
