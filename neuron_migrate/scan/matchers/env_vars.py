"""`match.env_vars`: environment-variable names read or set in code.

Access forms (the analyzer finds the name literal, this table says which rules it matches):
`os.environ["X"]` (also on any `env`-named mapping, e.g. a copy of the environment),
`os.environ.get/setdefault/pop("X")`, `os.getenv/putenv/unsetenv("X")`, `"X" in os.environ`,
`os.environ.update({"X": ...})` and `update(X=...)`, `dict(os.environ, X=...)`,
`monkeypatch.setenv/delenv("X")`, and the keys of a dict passed as `env=` or assigned to an
`env`-named variable (subprocess environments).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from neuron_migrate.ruleset.model import Rule
from neuron_migrate.scan.matchers.globs import compile_glob, most_specific

# Callee -> position of the variable name.
NAME_CALLS: dict[str, int] = {
    "os.getenv": 0,
    "os.putenv": 0,
    "os.unsetenv": 0,
    "os.environ.get": 0,
    "os.environ.setdefault": 0,
    "os.environ.pop": 0,
    "os.environ.__getitem__": 0,
    "os.environ.__setitem__": 0,
    "os.environ.__contains__": 0,
    "os.getenvb": 0,
}
NAME_METHODS = frozenset({"setenv", "delenv"})  # pytest's monkeypatch
ENVIRON = "os.environ"
_ENV_NAME = re.compile(r"env", re.IGNORECASE)


def env_like_name(name: str) -> bool:
    return bool(_ENV_NAME.search(name))


class EnvVarTable:
    __slots__ = ("patterns", "_cache")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.patterns = [(p, compile_glob(p), rule) for rule in rules for p in rule.match.env_vars]
        self._cache: dict[str, tuple[Rule, ...]] = {}

    def match(self, name: str) -> tuple[Rule, ...]:
        hit = self._cache.get(name)
        if hit is None:
            hit = self._cache[name] = most_specific((p, r) for p, regex, r in self.patterns if regex.match(name))
        return hit
