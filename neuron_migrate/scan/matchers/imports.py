"""`match.imports`: module globs for `import m`, `import m.sub` and `from m import x`.

A pattern names a module and everything under it: `apex` matches `import apex.amp`;
`from m import x` is checked both as `m` and as `m.x` (so `from torch.cuda import amp` matches
`torch.cuda.amp`)."""

from __future__ import annotations

from collections.abc import Sequence

from neuron_migrate.ruleset.model import Rule
from neuron_migrate.scan.matchers.globs import compile_glob, most_specific, required_token


class ImportTable:
    __slots__ = ("patterns", "_cache")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.patterns = [(p, compile_glob(p), rule) for rule in rules for p in rule.match.imports]
        self._cache: dict[str, tuple[Rule, ...]] = {}

    def tokens(self) -> set[str]:
        return {required_token(p) for p, _, _ in self.patterns}

    def match(self, module: str) -> tuple[Rule, ...]:
        """The rules whose most specific pattern matches `module` or one of its parent packages."""
        hit = self._cache.get(module)
        if hit is None:
            parts = module.split(".")
            prefixes = [".".join(parts[: i + 1]) for i in range(len(parts))]
            hit = most_specific((p, rule) for p, regex, rule in self.patterns if any(regex.match(m) for m in prefixes))
            self._cache[module] = hit
        return hit
