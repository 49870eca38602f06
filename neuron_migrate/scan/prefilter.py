"""A cheap textual gate in front of the parser, derived from the rule pack.

Every matcher needs some literal text in the file: a dotted name's components appear either in the
reference or in the import that binds its alias (`import torch.cuda as tc` spells `cuda`); a
method, attribute, keyword or env-var name appears as written; a device type inside its string.
For each pattern we collect the tokens that *must* appear when it matches. A file passes the gate
when, for some pattern, every one of its tokens appears; a file that passes for no pattern cannot
produce a finding and is not parsed. A pattern with no required text (`call: "*"` matched by
position) opens the gate: every file is parsed.

A token that is a whole name or string (a literal dotted-name component, method, keyword, device
type, ...) must appear as a whole word: `long` for `.long()` is not found in `longer`, `cuda` for
`torch.cuda` not in `is_cuda`. A glob's literal run is bounded only at the ends it shares with the
pattern (`CUDA_` from `CUDA_*` must start a word). Like any text test, the gate is blind to text
spelled with escapes or split across implicitly concatenated string literals.

The test runs in two steps: a quick any-of substring test over a small set of tokens that covers
every pattern (greedy set cover, preferring tokens shared by many patterns) rejects most files
that cannot match; the files it passes are checked pattern by pattern.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import NamedTuple

from neuron_migrate.ruleset.model import ArgumentPattern, Match, RulePack
from neuron_migrate.scan.matchers.requirements import SETUP_DEPENDENCIES
from neuron_migrate.scan.matchers.tokens import CUDA_SOURCE, first_words_of, required_words

_WILDCARD = re.compile(r"[*?]|\[[^\]]*\]")
# Characters that continue a name. Non-ASCII bytes count as word boundaries: a non-ASCII
# identifier next to a token then passes the gate (too many files parsed, never too few).
_WORD_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
WORD_STR = frozenset(_WORD_CHARS)
WORD_BYTES = frozenset(_WORD_CHARS.encode())
SPACES = bytes(c if c in WORD_BYTES else 32 for c in range(256))  # bytes.translate: non-word -> " "


class Token(NamedTuple):
    """Text that must appear; `left`/`right`: no word character may precede/follow it."""

    text: str
    left: bool = False
    right: bool = False


def _token(text: str, left: bool, right: bool) -> Token:
    # A bound only means something next to a word character (`"max-autotune"` is bounded by its
    # quotes, `:` needs no bound).
    return Token(text, left and text[0] in WORD_STR, right and text[-1] in WORD_STR)


class Prefilter:
    __slots__ = ("tokens", "requirements", "_byte_tests", "_singles", "_filed", "_unfiled", "_whole")

    def __init__(self, tokens: tuple[str, ...] | None,
                 requirements: tuple[tuple[Token, ...], ...] = ()) -> None:
        self.tokens = tokens  # None: the gate is open
        # Per pattern, the tokens it needs (all of them); empty: only the any-of test applies.
        self.requirements = requirements
        # The any-of test: a word chosen in several case forms (`cuda`, `CUDA`, `Cuda`) is looked
        # for once in the lowered text, any other as spelled (`_C`; lowered, `_c` is in most
        # files). Sound because every requirement holds a token that contains one of `tokens`
        # as spelled.
        folds = Counter(t.lower() for t in tokens or ())
        exact = tuple(t.encode() for t in tokens or () if folds[t.lower()] == 1)
        folded = tuple(dict.fromkeys(t.lower().encode() for t in tokens or () if folds[t.lower()] > 1))
        self._byte_tests = (exact, folded)
        # The requirements in three kinds, each tested its cheapest way (most of the time goes to
        # the files that meet none, where every requirement is tested):
        # - one token with no word bound (a CUDA word of `match.tokens` in one case form): by its
        #   lowered form in the lowered text first, then as spelled;
        # - with a whole word among its tokens: filed under its longest, looked up in the file's
        #   words, the rest tested only for the words the file has;
        # - the others, token by token.
        self._singles: dict[bytes, list[bytes]] = {}
        self._filed: dict[bytes, list[tuple[Token, ...]]] = {}
        self._unfiled: list[tuple[Token, ...]] = []
        self._whole: set[Token] = set()  # the tokens that are whole words: looked up, not searched for
        for req in requirements:
            encoded = [Token(t.text.encode(), t.left, t.right) for t in req]  # type: ignore[arg-type]
            words = [t for t in encoded if _whole_word(t)]
            self._whole.update(words)
            if len(encoded) == 1 and not (encoded[0].left or encoded[0].right):
                text: bytes = encoded[0].text  # type: ignore[assignment]
                self._singles.setdefault(text.lower(), []).append(text)
            elif words:
                key = max(words, key=lambda t: (len(t.text), t.text))
                self._filed.setdefault(key.text, []).append(tuple(t for t in encoded if t != key))  # type: ignore[arg-type]
            else:
                self._unfiled.append(tuple(encoded))

    def may_match(self, data: bytes) -> bool:
        if self.tokens is None:
            return True
        exact, folded = self._byte_tests
        lowered = None
        if not any(token in data for token in exact):
            lowered = data.lower()
            if not any(token in lowered for token in folded):
                return False
        if not self.requirements:
            return True
        if self._singles:
            lowered = data.lower() if lowered is None else lowered
            if any(low in lowered and any(form in data for form in forms) for low, forms in self._singles.items()):
                return True
        words = set(data.translate(SPACES).split())
        seen: dict[Token, bool] = {}

        def present(token: Token) -> bool:
            found = seen.get(token)
            if found is None:
                found = seen[token] = token.text in words if token in self._whole else _present(data, token, WORD_BYTES)
            return found

        if any(all(present(t) for t in rest) for key in words.intersection(self._filed) for rest in self._filed[key]):
            return True
        return any(all(present(t) for t in req) for req in self._unfiled)

    def may_match_text(self, text: str) -> bool:
        """`may_match` for text: its UTF-8 bytes hold the same tokens with the same word bounds
        (every non-ASCII character becomes bytes that continue no name, as it continues none)."""
        return self.may_match(text.encode("utf-8", "surrogatepass"))


def _whole_word(token: Token) -> bool:
    return token.left and token.right and WORD_BYTES.issuperset(token.text)  # type: ignore[arg-type]


def _present(hay, token: Token, word) -> bool:  # type: ignore[no-untyped-def]
    """Whether `token.text` occurs in `hay` (str or bytes) with the required word bounds."""
    return next(occurrences(hay, token, word), None) is not None


def occurrences(hay, token: Token, word) -> Iterator[int]:  # type: ignore[no-untyped-def]
    """Offsets where `token.text` occurs in `hay` with its word bounds (`word`: the characters, or
    byte values, that continue a name)."""
    text, left, right = token
    n, end = len(text), len(hay)
    i = hay.find(text)
    while i >= 0:
        if (not left or i == 0 or hay[i - 1] not in word) and (not right or i + n == end or hay[i + n] not in word):
            yield i
        i = hay.find(text, i + 1)


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
    required = pattern_requirements(pack)
    if any(not tokens for tokens in required):
        return Prefilter(None)
    return Prefilter(_choose([frozenset(t.text for t in ts) for ts in required]), _minimal(required))


def pattern_requirements(pack: RulePack, *, in_code: bool = False) -> list[frozenset[Token]]:
    """Per pattern of every rule, the tokens that all appear in a file where it matches (an empty
    set: a pattern that needs no text). Unlike the gate's requirements, none is dropped for
    needing more than another: where in a file each token sits matters to `scan.regions`.

    `in_code`: the tokens that appear in the code where it matches, for `scan.regions`, which
    tests them per function: an import pattern's match is an import statement (the word
    `import` is there), a CUDA source file name ends its string (`.cu"`). The file gate keeps the
    looser set: which files are parsed at all decides which get a syntax-error finding."""
    return [tokens for tokens, _ in _pairs(pack, in_code)]


def _pairs(pack: RulePack, in_code: bool = False) -> list[tuple[frozenset[Token], frozenset[Token]]]:
    """Per pattern: (its required tokens, those of them that are an argument's string value)."""
    matches = [rule.match for rule in pack.rules.values()]
    # Distinct names: a callee list repeated by each argument pattern of a rule (Lightning's
    # eleven Trainer spellings) would outweigh the roots many rules share.
    dotted = list({p for m in matches for p in (*m.qualified_names, *m.imports) if not p.startswith("!")}
                  | {c for m in matches for a in m.arguments for c in a.call if c[:1] not in (".", "*", "!")})
    roots = Counter(p.split(".", 1)[0] for p in dotted if "." in p)
    # A root that most patterns share (`torch`) filters nothing; a library's own root does. (Kept
    # for the test of each function, it skipped a few more of them on torch, and cost more to
    # test than their parse: measured in instructions.)
    common = frozenset(r for r, n in roots.items() if n * 4 > len(dotted))
    return [pair for m in matches for pair in _required(m, common, in_code)]


def _minimal(required: list[frozenset[Token]]) -> tuple[tuple[Token, ...], ...]:
    """The distinct requirements, less any that needs everything another one needs and more.
    The likeliest met go first (a file that passes stops sooner): fewest and commonest tokens;
    within one, its rarest token first (a file that fails it stops sooner)."""
    distinct = sorted(set(required), key=lambda ts: (len(ts), sorted(ts)))
    kept: list[frozenset[Token]] = []
    # A weaker requirement's texts are all among the stronger one's: each kept requirement is
    # filed under one of its texts, and only those filed under a text of `ts` are compared.
    filed: dict[str, list[frozenset[Token]]] = {}
    for ts in distinct:
        texts = {t.text for t in ts}
        if not any(_weaker(k, ts) for text in texts for k in filed.get(text, ())):
            kept.append(ts)
            filed.setdefault(min(t.text for t in ts), []).append(ts)
    kept.sort(key=lambda ts: (len(ts), sum(_rarity(t.text) for t in ts), sorted(ts)))
    return tuple(tuple(sorted(ts, key=lambda t: (-_rarity(t.text), t))) for ts in kept)


def _weaker(k: frozenset[Token], ts: frozenset[Token]) -> bool:
    """Whether every file that meets `ts` meets `k`: each token of `k` is one of `ts` or the same
    text with fewer word bounds (`cuda` anywhere, for `cuda` as a word)."""
    return all(t in ts or any(u.text == t.text and t.left <= u.left and t.right <= u.right for u in ts) for t in k)


def _required(m: Match, common_roots: frozenset[str], in_code: bool = False) -> list[tuple[frozenset[Token], frozenset[Token]]]:
    """One pair per pattern: tokens that all appear in any file where that pattern matches, and
    those of them that are a string value (`in_code`: see `pattern_requirements`)."""
    none: frozenset[Token] = frozenset()
    statement = frozenset({Token("import", True, True)}) if in_code else none
    out = [(_dotted(p, common_roots), none) for p in m.qualified_names if not p.startswith("!")]
    out += [(_dotted(p, common_roots) | statement, none) for p in m.imports]
    out += [(_literal(p), none) for p in (*m.device_strings, *m.methods, *m.attributes, *m.env_vars,
                                          *m.default_devices)]
    out += [pair for arg in m.arguments for pair in _argument(arg, common_roots)]
    if m.requirements:  # a build script's `setup(install_requires=[...])`
        out += [(frozenset({Token("setup", True, True), Token(k, True, True)}), none) for k in sorted(SETUP_DEPENDENCIES)]
    if m.tokens and not in_code:  # words inside names and strings, in any case: no word bounds
        out += [(frozenset({Token(w)}), none) for w in first_words_of(m.tokens)]
    elif m.tokens:  # per pattern, each of its words (a region's test reads them in any case); `.cu` ends a string
        out += [(frozenset(Token(w) for w in required_words(p)), none) for p in m.tokens if not p.startswith("!")]
        out += [(frozenset({Token(w, right=True)}), none) for w in CUDA_SOURCE]
    return out


def _argument(arg: ArgumentPattern, common_roots: frozenset[str]) -> list[tuple[frozenset[Token], frozenset[Token]]]:
    """One set per (callee, value): the callee's name; the keyword when the argument can only be
    given by keyword; a string value, which is written in the file (at the call, or where the
    analyser found it: a parameter default, a module constant, an argparse default), as a whole
    string literal."""
    keyword = ({_token(arg.keyword, True, True)} if arg.keyword and arg.position is None and not arg.missing
               else set())
    values = [{_value_token(v)} if isinstance(v, str) and v else set() for v in arg.values] or [set()]
    if arg.missing or arg.switch:  # (a switch given any value that is no literal matches: no value is written)
        values = [set()]
    out = []
    for call in arg.call:
        if call.startswith("!"):  # a callee left out requires nothing
            continue
        callee = _literal(call[1:]) if call.startswith(".") else _dotted(call, common_roots)
        out += [(frozenset(callee | keyword | value), frozenset(value)) for value in values]
    for glob in arg.named:  # `PIN_MEMORY = True`, `self._compile_backend = "inductor"`: the name's
        # literal run as written in lower or upper case, inside a longer name too; and the value,
        # written in the same assignment (never taken from elsewhere: no value token)
        for run in _literal(glob):
            for spelled in dict.fromkeys((run.text, run.text.upper())):
                out += [(frozenset({Token(spelled)} | value), frozenset()) for value in values]
    return out


def _value_token(value: str) -> Token:
    return _token(value, True, True)


def pattern_values(pack: RulePack, *, in_code: bool = False) -> list[frozenset[Token]]:
    """Per pattern, in the order of `pattern_requirements`, its tokens that are an argument's
    string value: the analyser may find one where a variable got it (a module constant, an
    argparse default) instead of at the match, where every other token is written (or in the
    import that binds a name used there)."""
    return [values for _, values in _pairs(pack, in_code)]


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


def _literal(pattern: str) -> frozenset[Token]:
    """The longest literal run of a glob (the whole string when it has no wildcard), bounded at
    the ends where it is the pattern's own start or end."""
    pieces = _WILDCARD.split(pattern)
    runs = [(len(p), -i, p) for i, p in enumerate(pieces) if p]
    if not runs:
        return frozenset()
    _, neg_i, run = max(runs)
    return frozenset({_token(run, -neg_i == 0, -neg_i == len(pieces) - 1)})


def _dotted(pattern: str, common_roots: frozenset[str]) -> frozenset[Token]:
    """Literal parts of a dotted-name glob. Every part is written somewhere in a file that uses
    the name (in the reference, or in the import that binds its alias); a common root is left
    out while other parts are literal."""
    parts = [p for p in pattern.split(".") if p]
    tokens = frozenset(t for part in parts for t in _literal(part))
    rest = frozenset(t for part in parts[1:] for t in _literal(part))
    return rest if parts and parts[0] in common_roots and rest else tokens
