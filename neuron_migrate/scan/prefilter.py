"""A cheap textual gate in front of the parser, derived from the rule pack.

Every matcher needs some literal text in the file: a dotted name's components appear either in the
reference or in the import that binds its alias (`import torch.cuda as tc` spells `cuda`); a
method, attribute, keyword or env-var name appears as written; a device type inside its string.
For each pattern we collect the tokens that *must* appear when it matches, then pick a small set
that covers every pattern (greedy set cover, preferring tokens shared by many patterns). A file
containing none of them cannot produce a finding and is not parsed. A pattern with no required
text (`call: "*"` matched by position) opens the gate: every file is parsed.
"""

from __future__ import annotations

import re
from collections import Counter

from neuron_migrate.ruleset.model import ArgumentPattern, Match, RulePack

_WILDCARD = re.compile(r"[*?]|\[[^\]]*\]")


class Prefilter:
    __slots__ = ("tokens", "_encoded")

    def __init__(self, tokens: tuple[str, ...] | None) -> None:
        self.tokens = tokens  # None: the gate is open
        self._encoded = tuple(t.encode() for t in tokens) if tokens is not None else None

    def may_match(self, data: bytes) -> bool:
        encoded = self._encoded
        return encoded is None or any(token in data for token in encoded)

    def may_match_text(self, text: str) -> bool:
        return self.tokens is None or any(token in text for token in self.tokens)


_BUILT: dict[str, Prefilter] = {}


def build_prefilter(pack: RulePack) -> Prefilter:
    """The gate for a pack (memoised by digest: workers and repeated scans build it once)."""
    if pack.digest and pack.digest in _BUILT:
        return _BUILT[pack.digest]
    gate = _build(pack)
    if pack.digest:
        _BUILT[pack.digest] = gate
    return gate


def _build(pack: RulePack) -> Prefilter:
    matches = [rule.match for rule in pack.rules.values()]
    dotted = [p for m in matches for p in (*m.qualified_names, *m.imports)]
    dotted += [c for m in matches for a in m.arguments for c in a.call if c[:1] not in (".", "*")]
    roots = Counter(p.split(".", 1)[0] for p in dotted if "." in p)
    # A root that most patterns share (`torch`) filters nothing; a library's own root does.
    common = frozenset(r for r, n in roots.items() if n * 4 > len(dotted))
    required = [tokens for m in matches for tokens in _required(m, common)]
    if any(not tokens for tokens in required):
        return Prefilter(None)
    return Prefilter(_choose(required))


def _required(m: Match, common_roots: frozenset[str]) -> list[frozenset[str]]:
    """One set per pattern: tokens that all appear in any file where that pattern matches."""
    out = [_dotted(p, common_roots) for p in (*m.qualified_names, *m.imports)]
    out += [_literal(p) for p in (*m.device_strings, *m.methods, *m.attributes, *m.env_vars)]
    out += [tokens for arg in m.arguments for tokens in _argument(arg, common_roots)]
    return out


def _argument(arg: ArgumentPattern, common_roots: frozenset[str]) -> list[frozenset[str]]:
    """One set per (callee, value): the callee's name; the keyword when the argument can only be
    given by keyword; a string value, which is written in the file (at the call, or where the
    analyser found it: a parameter default, a module constant, an argparse default)."""
    keyword = {arg.keyword} if arg.keyword and arg.position is None and not arg.missing else set()
    values = [{v} if isinstance(v, str) and v else set() for v in arg.values] or [set()]
    if arg.missing:
        values = [set()]
    out = []
    for call in arg.call:
        callee = _literal(call[1:]) if call.startswith(".") else _dotted(call, common_roots)
        out += [frozenset(callee | keyword | value) for value in values]
    return out


def _rarity(token: str) -> int:
    """How unlikely a token is in ordinary code: longer, and not a plain lowercase word."""
    return len(token) + (4 if not (token.isalpha() and token.islower()) else 0)


def _choose(required: list[frozenset[str]]) -> tuple[str, ...]:
    """Per pattern, its rarest token, unless a token already chosen covers it. Patterns with
    fewer options go first, so a token many patterns must contain (`cuda`) is shared."""
    chosen: set[str] = set()
    for tokens in sorted(set(required), key=lambda ts: (len(ts), sorted(ts))):
        if not any(c in t for c in chosen for t in tokens):
            chosen.add(max(tokens, key=lambda t: (_rarity(t), t)))
    # A token that contains another chosen token adds nothing to an any-of test. Shorter tokens
    # first: they are the likelier to occur, so a file that has one stops sooner.
    kept = (t for t in chosen if not any(o != t and o in t for o in chosen))
    return tuple(sorted(kept, key=lambda t: (len(t), t)))


def _literal(pattern: str) -> frozenset[str]:
    """The longest literal run of a glob (the whole string when it has no wildcard)."""
    runs = [r for r in _WILDCARD.split(pattern) if r]
    return frozenset({max(runs, key=len)}) if runs else frozenset()


def _dotted(pattern: str, common_roots: frozenset[str]) -> frozenset[str]:
    """Literal parts of a dotted-name glob. Every part is written somewhere in a file that uses
    the name (in the reference, or in the import that binds its alias); a common root is left
    out while other parts are literal."""
    parts = [p for p in pattern.split(".") if p]
    tokens = frozenset(t for part in parts for t in _literal(part))
    rest = frozenset(t for part in parts[1:] for t in _literal(part))
    return rest if parts and parts[0] in common_roots and rest else tokens
