"""Glob helpers shared by the matchers: fnmatch patterns as compiled regexes, and how specific
a pattern is (so that, when several rules match one node, the most specific one wins)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")

_WILDCARDS = frozenset("*?[")


def is_glob(pattern: str) -> bool:
    return any(c in _WILDCARDS for c in pattern)


def compile_glob(pattern: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern))


def literal_prefix(pattern: str) -> str:
    """The part of a glob before its first wildcard."""
    for i, c in enumerate(pattern):
        if c in _WILDCARDS:
            return pattern[:i]
    return pattern


def specificity(pattern: str) -> tuple[int, int]:
    """Exact beats glob; then the longer literal part wins."""
    return (0 if is_glob(pattern) else 1, len(literal_prefix(pattern)))


def most_specific(hits: Iterable[tuple[str, T]]) -> tuple[T, ...]:
    """The items whose pattern is the most specific among the (pattern, item) hits."""
    hits = list(hits)
    if not hits:
        return ()
    top = max(specificity(p) for p, _ in hits)
    best = {id(item): item for p, item in hits if specificity(p) == top}  # rules are not hashable
    return tuple(best.values())
