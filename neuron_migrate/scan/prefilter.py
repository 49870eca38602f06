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

from neuron_migrate.ruleset.model import ArgumentPattern, RulePack

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
    required = [tokens for rule in pack.rules.values() for tokens in _required(rule.match)]
    if any(not tokens for tokens in required):
        return Prefilter(None)
    return Prefilter(_cover(required))


def _required(m) -> list[frozenset[str]]:  # noqa: ANN001 - ruleset.model.Match
    """One set per pattern: tokens that all appear in any file where that pattern matches."""
    out = [_dotted(p, skip_root=True) for p in m.qualified_names]
    out += [_dotted(p, skip_root=False) for p in m.imports]
    out += [_literal(p) for p in (*m.device_strings, *m.methods, *m.attributes, *m.env_vars)]
    out += [tokens for arg in m.arguments for tokens in _argument(arg)]
    return out


def _argument(arg: ArgumentPattern) -> list[frozenset[str]]:
    """One set per (callee, value): the callee's name; the keyword when the argument can only be
    given by keyword; a string value, which is written in the file (at the call, or where the
    analyser found it: a parameter default, a module constant, an argparse default)."""
    keyword = {arg.keyword} if arg.keyword and arg.position is None and not arg.missing else set()
    values = [{v} if isinstance(v, str) and v else set() for v in arg.values] or [set()]
    if arg.missing:
        values = [set()]
    out = []
    for call in arg.call:
        callee = _literal(call[1:]) if call.startswith(".") else _dotted(call, skip_root=True)
        out += [frozenset(callee | keyword | value) for value in values]
    return out


def _cover(required: list[frozenset[str]]) -> tuple[str, ...]:
    """A small token set such that every pattern has a required token containing one of them."""
    patterns = sorted(set(required), key=sorted)
    candidates = sorted({t for tokens in patterns for t in tokens})
    covers = {c: {i for i, tokens in enumerate(patterns) if any(c in t for t in tokens)} for c in candidates}
    uncovered = set(range(len(patterns)))
    chosen: list[str] = []
    while uncovered:
        def gain(token: str) -> tuple[bool, int, int, str]:
            n = len(covers[token] & uncovered)
            # Very short tokens ("amp") occur in too many words to filter anything.
            return (n > 0 and len(token) >= 4, n, len(token), token)

        best = max(candidates, key=gain)
        chosen.append(best)
        uncovered -= covers[best]
    # A token that contains another chosen token adds nothing to an any-of test. Shorter tokens
    # first: they are the likelier to occur, so a file that has one stops sooner.
    kept = (t for t in chosen if not any(o != t and o in t for o in chosen))
    return tuple(sorted(kept, key=lambda t: (len(t), t)))


def _literal(pattern: str) -> frozenset[str]:
    """The longest literal run of a glob (the whole string when it has no wildcard)."""
    runs = [r for r in _WILDCARD.split(pattern) if r]
    return frozenset({max(runs, key=len)}) if runs else frozenset()


def _dotted(pattern: str, *, skip_root: bool) -> frozenset[str]:
    """Literal parts of a dotted-name glob. With `skip_root`, the first part is used only if
    nothing else is literal: `from . import cuda` inside a package names `torch.cuda` without
    spelling `torch`, and `import torch as th` aliases it."""
    parts = [p for p in pattern.split(".") if p]
    rest = parts[1:] if skip_root else parts
    tokens = frozenset(t for part in rest for t in _literal(part))
    return tokens or frozenset(t for part in parts[:1] for t in _literal(part))
