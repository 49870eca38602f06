"""`match.qualified_names`: globs over the alias-resolved dotted names of Name/Attribute chains.

A chain `torch.cuda.memory.empty_cache` is examined once, at its outermost node. Every prefix
that resolves (`torch.cuda`, `torch.cuda.memory`, ...) is a candidate; the most specific pattern
wins (exact beats glob, longer literal part beats shorter), and among prefixes matched by that
pattern the longest one is reported, so one reference gives one finding. A pattern written `!glob`
is an exception: a name it matches is none of that rule's (`mmcv.ops.*` but `!mmcv.ops.point_sample`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from neuron_migrate.ruleset.model import Rule
from neuron_migrate.scan.matchers.globs import compile_glob, is_glob, literal_prefix, specificity

Best = tuple[int, str, tuple[Rule, ...]]  # (index of the matched prefix, its name, rules)


class QualifiedNameTable:
    __slots__ = ("exact", "globs", "roots", "_by_root", "_cache", "_excepted")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.exact: dict[str, list[Rule]] = {}
        globs: dict[str, list[Rule]] = {}
        self._excepted: dict[str, list[re.Pattern[str]]] = {}  # by rule code
        for rule in rules:
            for pattern in rule.match.qualified_names:
                if pattern.startswith("!"):
                    self._excepted.setdefault(rule.code, []).append(compile_glob(pattern[1:]))
                    continue
                (globs if is_glob(pattern) else self.exact).setdefault(pattern, []).append(rule)
        # (literal prefix, regex, pattern, rules), most specific first
        self.globs = [
            (literal_prefix(p), compile_glob(p), p, tuple(r))
            for p, r in sorted(globs.items(), key=lambda kv: specificity(kv[0]), reverse=True)
        ]
        self.roots = frozenset(p.split(".")[0] for p in [*self.exact, *globs])
        # The globs a name under each root can match, in the same order: a literal prefix holding
        # a dot names its root (`torch.cuda.*` matches only under `torch`); one without may match
        # under any. A chain is tried against a handful of globs instead of all of them.
        anywhere = [g for g in self.globs if "." not in g[0]]
        self._by_root: dict[str, list[tuple[str, re.Pattern[str], str, tuple[Rule, ...]]]] = {
            root: [g for g in self.globs if "." not in g[0] or g[0].partition(".")[0] == root]
            for root in {g[0].partition(".")[0] for g in self.globs if "." in g[0]}}
        self._by_root[""] = anywhere
        self._cache: dict[tuple[str, int], Best | None] = {}

    def best(self, root: str, attrs: Sequence[str]) -> Best | None:
        """The winning (prefix index, name, rules) for a chain `root.attrs[0].attrs[1]...`; prefix 0
        is the root alone (dotted when an alias stands for a module path). None when no pattern
        matches any prefix."""
        full = root + "." + ".".join(attrs) if attrs else root
        key = (full, len(attrs))
        try:
            return self._cache[key]
        except KeyError:
            pass
        names = [root]
        for attr in attrs:
            names.append(names[-1] + "." + attr)
        best: Best | None = None
        score = (-1, -1, -1)
        globs = self._by_root.get(root.partition(".")[0]) or self._by_root[""]
        for i in range(len(names) - 1, -1, -1):
            name = names[i]
            rules = self.exact.get(name)
            if rules is not None:
                s = (1, len(name), i)
                if s > score:
                    score, best = s, (i, name, tuple(rules))
                continue
            for lit, regex, _pattern, grules in globs:
                if name.startswith(lit) and regex.match(name):
                    if self._excepted:
                        grules = tuple(r for r in grules if not self.excepts(r, name))
                        if not grules:
                            continue
                    s = (0, len(lit), i)
                    if s > score:
                        score, best = s, (i, name, grules)
                    break  # globs are sorted: the first hit is the most specific for this name
        self._cache[key] = best
        return best

    def excepts(self, rule: Rule, name: str) -> bool:
        """Whether one of the rule's `!glob` exceptions names `name` (`mmcv.ops.point_sample`)."""
        return any(rx.match(name) for rx in self._excepted.get(rule.code, ()))
