"""`match.files`: files that are themselves the finding (`*.cu`, `*.cuh`), by path glob.

A pattern without a slash matches the file name in any directory; one with a slash matches the
whole (POSIX, root-relative) path."""

from __future__ import annotations

from collections.abc import Sequence

from neuron_migrate.ruleset.model import Rule
from neuron_migrate.scan.matchers.globs import compile_glob


class FileTable:
    __slots__ = ("patterns",)

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.patterns = [(p, compile_glob(p), "/" in p, rule) for rule in rules for p in rule.match.files]

    def match(self, path: str) -> list[tuple[str, Rule]]:
        posix = path.replace("\\", "/")
        name = posix.rsplit("/", 1)[-1]
        seen: set[str] = set()
        out: list[tuple[str, Rule]] = []
        for p, regex, whole, rule in self.patterns:
            if rule.code not in seen and regex.match(posix if whole else name):
                seen.add(rule.code)
                out.append((p, rule))
        return out
