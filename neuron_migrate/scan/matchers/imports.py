"""`match.imports`: module globs for `import m`, `import m.sub` and `from m import x`.

A pattern names a module and everything under it: `apex` matches `import apex.amp`;
`from m import x` is checked both as `m` and as `m.x` (so `from torch.cuda import amp` matches
`torch.cuda.amp`). A pattern that starts with `!` takes a module and everything under it out of
its rule (`!colossalai.kernel.jit`: TorchScript functions inside a package of CUDA kernels)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from neuron_migrate.ruleset.model import Rule
from neuron_migrate.scan.matchers.globs import compile_glob, is_glob, most_specific


class ImportTable:
    __slots__ = ("patterns", "_by_root", "_any_root", "_cache", "_exceptions")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.patterns = [(p, compile_glob(p), rule) for rule in rules for p in rule.match.imports if not p.startswith("!")]
        self._exceptions = {rule.code: [compile_glob(p[1:]) for p in rule.match.imports if p.startswith("!")]
                            for rule in rules}
        # Patterns by their literal top-level package, so `import os.path` costs one dict lookup.
        self._by_root: dict[str, list[tuple[str, re.Pattern[str], Rule]]] = {}
        self._any_root: list[tuple[str, re.Pattern[str], Rule]] = []
        for entry in self.patterns:
            root = entry[0].split(".")[0]
            if is_glob(root):
                self._any_root.append(entry)
            else:
                self._by_root.setdefault(root, []).append(entry)
        self._cache: dict[str, tuple[Rule, ...]] = {}

    def match(self, module: str) -> tuple[Rule, ...]:
        """The rules whose most specific pattern matches `module` or one of its parent packages."""
        hit = self._cache.get(module)
        if hit is None:
            parts = module.split(".")
            candidates = self._by_root.get(parts[0], []) + self._any_root
            if candidates:
                prefixes = [".".join(parts[: i + 1]) for i in range(len(parts))]
                hit = most_specific((p, rule) for p, regex, rule in candidates if any(regex.match(m) for m in prefixes)
                                    and not any(x.match(m) for x in self._exceptions[rule.code] for m in prefixes))
            else:
                hit = ()
            self._cache[module] = hit
        return hit
