"""Parse only the parts of a file that can hold a finding.

The prefilter decides per file; in a large, token-dense file most functions still hold no
finding, and parsing them is most of a cold scan. So a file is split by its text into *regions*:
each function or class defined at column 0, and each method (or nested class) of a column-0
class. Everything else is *context*, always parsed: imports, module-level statements, class
headers and class-level statements, and any region that declares an argparse option or whose
imports another part of the file may read (aliases and argparse defaults are file-wide: a
binding in one function resolves a name in another).

A region is parsed when, for some rule pattern whose required tokens (those the prefilter
derives) all appear in the file, the region holds each of them, spelled or hidden behind a name
the region uses (`tc` from `import torch.cuda as tc` stands for `cuda`). An argument's string
value is the exception: the analyser may find it where a variable got it, so the context may hold
it instead (a module constant, an argparse default), or a method that sets it as an attribute of
`self` (`self.mode = "inductor"`, read by another method's `backend=self.mode`), which is then
parsed too. Every other region becomes `pass` on its
first line and the module is parsed once: line numbers and columns are those of the file, every
other character is parsed where it stands, and each block keeps a statement where a region stood.

Splitting by text cannot see strings or brackets: a column-0 line inside a docstring or a call
ends a region early (not one after a backslash, nor one between a decorator and its def). A
region that holds an odd number of triple quotes is therefore never skipped. Any other bad split
makes the module fail to parse after the region it cut, or leaves a region's `pass` inside a
string: that region is then parsed after all (a few times at most, then the whole file).

Comment lines are blanked before the token tests (those without a quote: a line in a string may
start with `#` and end the string): a token in prose keeps no region, a `# import ...` forces
none. What the walk resolves across regions is checked after it (`SparseTree.hiding`): a name
bound by an import that the text scan missed, a module root read without an import, a name whose
uses decide findings; the skipped regions that write one are then parsed too
(`scan.parse.widen`), and a `from m import *` of a module with a name a rule matches sends the
file to a whole parse, so the findings are those of the whole tree.

Skipped regions are still checked for syntax, and the walk's dependencies on them are checked
after it, by `scan.parse`, the only caller: the findings are always those of the whole tree.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import NamedTuple

from neuron_migrate.scan.prefilter import SPACES, WORD_BYTES, WORD_STR, Token, occurrences

# A line indented by at most the region's indentation that can start a statement: not blank, not
# a comment, not a closing bracket (`) -> int:` ending a wrapped signature), not a string
# (docstring text). Patterns start with a literal newline: the regex engine then skips ahead by
# searching for it, instead of trying every position (5-10x faster on large files).
_BOUNDARY: dict[int, re.Pattern[str]] = {}
# A def or class names itself (prose such as "class is stored in" is none); `[` opens type parameters.
_HEAD = r"(?:@|(?:async[ \t]+)?def[ \t]+\w+[ \t]*[(\[]|class[ \t]+\w+[ \t]*[(:\[])"
_DEF = re.compile(_HEAD)
_MEMBER: dict[int, re.Pattern[str]] = {}  # by the most indentation a member may have
_IMPORT = re.compile(r"import[ \t]+(\*|\([^)]*\)|[^\n;#]*)")
_FROM = re.compile(r"from[ \t]+([\w.]+)[ \t]+$")
_COMMENT = re.compile(r"#[^\n]*")
_NAME_RUN = re.compile(r"\w+", re.ASCII)
# A comment line holds no quote: a line inside a string may start with `#` and close the string,
# code following on the same line (`#include "x.h"\n'''.format(cutlass_dir=root)`).
_COMMENT_LINE = re.compile(r"\n[ \t]*#[^\n'\"]*(?=\n|\Z)")
_SELF_ATTRIBUTE = re.compile(r"\bself\.\w+[^\n=]*=(?!=)")  # an assignment to an attribute of `self`
# After an attribute: it is assigned (`= value`, possibly after a closing bracket or a line
# break), or annotated (`: T`, the rest of its line read by `_assigned`).
_STORE = re.compile(r"[ \t\r\n\\)]*(?:=(?!=)|:([^\n]*))")
_NOT_STATEMENT = frozenset(" \t\f\n#)]}'\"")  # first characters that start no statement line
# Below this many regions the split costs more than it saves.
MIN_REGIONS = 4
# Parses of a file whose split went through strings, before parsing it whole.
MAX_RETRIES = 3
# Below this share of the file's text skipped, the split costs more than it saves: the skipped part
# is still read for syntax (`scan.parse`) and the walk's needs may send it to a second parse
# (measured over torch's files: those under 30% skipped scanned slower split than whole).
MIN_SKIPPED_SHARE = 0.3


class _Need(NamedTuple):
    """A token a pattern requires; `value`: it is an argument's string value in that pattern."""

    text: str
    left: bool
    right: bool
    value: bool


_IMPORT_WORD = _Need("import", True, True, False)  # what the requirement of an import pattern holds


class Use(Enum):
    """How a name written in a skipped region is counted (`SparseTree.hiding`)."""

    ANY = "any"  # wherever it is written
    READ = "read"  # not as an attribute of something else (`x.name`): a name read, called or bound
    SET = "set"  # as an attribute assigned (`self.name = value`, `self.name: T = value`)


@dataclass(slots=True)
class Region:
    start: int  # offset of its first line (its first decorator)
    end: int  # offset just past its last line
    line: int  # 1-based line of `start`
    indent: str  # "" at module level; the class body's indentation for a member


class SparseTree:
    """A module parsed without some regions, and what the walk must check against them."""

    __slots__ = ("tree", "anchors", "_source", "_skipped", "_starts")

    def __init__(self, tree: ast.Module, source: str, skipped: list[Region], anchors: dict[str, frozenset[str]]) -> None:
        self.tree = tree
        # Names the text scan found bound by an import to a token's module, and the tokens they hide.
        self.anchors = anchors
        self._source = source
        self._skipped = skipped
        self._starts = [r.start for r in skipped]

    def skipped_text(self) -> str:
        """The skipped regions as one module, for a syntax check: each as written, a member
        under `if 1:` so that its indentation stands (line numbers are not the file's)."""
        return "".join(("if 1:\n" if r.indent else "") + self._source[r.start:r.end] + "\n" for r in self._skipped)

    def hiding(self, names: Iterable[str], use: Use = Use.ANY) -> set[int]:
        """The skipped regions (indexes into `skipped`) where one of `names` is written as a whole
        word, in the way `use` says. The tests read text, so they may count more than the walk of
        the region would see, never less."""
        source, found = self._source, set()
        for name in names:
            n = len(name)
            for pos in occurrences(source, Token(name, True, True), WORD_STR):
                k = _region_at(self._skipped, self._starts, pos)
                if k < 0 or k in found:
                    continue
                if use is Use.ANY or (use is Use.READ and not _attribute(source, pos)) or (
                        use is Use.SET and _attribute(source, pos, line_start=True) and _assigned(source, pos + n)):
                    found.add(k)
        return found

    def without(self, tree: ast.Module, parsed: Collection[int]) -> SparseTree:
        """This file's tree with the skipped regions `parsed` parsed after all (`tree`: the
        source parsed so, as `blanked` spells it)."""
        return SparseTree(tree, self._source, [r for k, r in enumerate(self._skipped) if k not in parsed], self.anchors)

    def blanked(self, parsed: Collection[int]) -> str:
        """The source to parse with the skipped regions `parsed` parsed after all."""
        return _blank(self._source, [r for k, r in enumerate(self._skipped) if k not in parsed])

    def stands(self) -> bool:
        """Whether each skipped region's `pass` is a statement where the region stood."""
        return len(_placeholders_stand(self.tree, self._skipped)) == len(self._skipped)

    @property
    def skipped(self) -> int:
        return len(self._skipped)


class RegionGate:
    """The per-region test, built from each rule pattern's required tokens."""

    def __init__(self, requirements: Sequence[Collection[Token]], values: Sequence[Collection[Token]],
                 star_modules: Collection[str], spelled: Collection[str] = ()) -> None:
        """`requirements`: per rule pattern, its required tokens; `values`: per pattern, those of
        them that are an argument's string value (its match may be in a region, the value in the
        context: a module constant, an argparse default); `spelled`: the modules a fix may write,
        through the file's binding of them (`AliasTable.spelling`)."""
        self.spelled = frozenset(spelled)
        needs = [frozenset(_Need(*t, t in vs) for t in r) for r, vs in zip(requirements, values, strict=True)]
        # The modules whose `from m import *` binds a name a rule matches (`torch.cuda`: `synchronize`).
        self.star_modules = frozenset(star_modules)
        # A pattern that needs no text can match anywhere: then no region may be skipped.
        self.requirements: tuple[tuple[_Need, ...], ...] = () if any(not r for r in needs) else tuple(
            sorted({tuple(sorted(r)) for r in needs}))
        self.words = frozenset(t.text for r in self.requirements for t in r)
        tokens = {t for r in self.requirements for t in r}
        # A whole-word token is found by looking its word up; others (a glob's prefix, a value
        # with punctuation) by searching the source.
        self.plain = {t: t.text.encode() for t in sorted(tokens) if t.left and t.right and WORD_STR.issuperset(t.text)}
        self.other = tuple(sorted(t for t in tokens if t not in self.plain))
        # A token with no word bound (the CUDA words of `match.tokens`, in three case forms each) is
        # looked for in the lowered text through the shortest such token inside it (`cuda` for
        # `Cuda`, `CUDA` and `lcuda`): the regions holding that one hold at least those holding
        # the token, so more regions are kept, never fewer; a few searches instead of a hundred.
        loose = {t.text.lower() for t in self.other if not (t.left or t.right or t.value)}
        self.probes = {t: min((p for p in loose if p in t.text.lower()), key=len).encode()
                       for t in self.other if not (t.left or t.right or t.value)}
        self.needles = {t: _needles(t) for t in self.other if t not in self.probes}
        # Per requirement, its whole words (a subset test against the file's words) and the rest,
        # filed under one of its words (a file meets only those filed under a word it has) or,
        # with none, unfiled.
        self._split: dict[bytes, list[tuple[tuple[_Need, ...], frozenset[bytes], tuple[_Need, ...]]]] = {}
        self._unfiled: list[tuple[tuple[_Need, ...], frozenset[bytes], tuple[_Need, ...]]] = []
        for req in self.requirements:
            words = frozenset(self.plain[t] for t in req if t in self.plain)
            entry = (req, words, tuple(t for t in req if t not in self.plain))
            if words:
                self._split.setdefault(min(words), []).append(entry)
            else:
                self._unfiled.append(entry)

    def hidden(self, qualified: str) -> frozenset[str]:
        """The tokens a name bound to `qualified` stands for (`cuda` for `tc` = `torch.cuda`)."""
        return self.words.intersection(qualified.split("."))

    def parse(self, source: str, parse: Callable[[str], ast.Module]) -> SparseTree | None:
        """The module without the regions that cannot hold a finding, or None when the file is
        better parsed whole (few regions, little to skip, a split the parser rejects)."""
        if not self.requirements:
            return None
        regions = _regions(source)
        if len(regions) < MIN_REGIONS:
            return None
        # What the tests below read: the source less its comment lines (a line that starts with `#`
        # holds no code; text inside a string that does is no device, keyword or call either).
        code = _without_comment_lines(source)
        bindings = _imports(code, self.star_modules)
        if bindings is None:
            return None
        anchors: dict[str, frozenset[str]] = {}
        for b in bindings:
            hidden = self.hidden(b.target) if b.target else frozenset()
            if hidden:
                anchors[b.name] = anchors.get(b.name, frozenset()) | hidden
        # A region holding an odd number of triple quotes was cut inside a docstring (column-0
        # text in it ends the region by the text): blanking it would unpair every later quote.
        skipped = [r for r in self._skippable(code, regions, anchors, bindings)
                   if not (source.count('"""', r.start, r.end) % 2 or source.count("'''", r.start, r.end) % 2)]
        if sum(r.end - r.start for r in skipped) < MIN_SKIPPED_SHARE * len(source):
            return None
        for _ in range(MAX_RETRIES + 1):
            if not skipped:
                return None
            try:
                tree = parse(_blank(source, skipped))
            except SyntaxError as exc:
                # A split through a docstring or a bracket orphans the rest of it: the error is
                # at or after the end of the region it cut. Parse that region after all.
                cut = [k for k, r in enumerate(skipped) if r.line <= (exc.lineno or 0)]
                if not cut:
                    return None
                del skipped[cut[-1]]
                continue
            standing = _placeholders_stand(tree, skipped)
            if len(standing) == len(skipped):
                return SparseTree(tree, source, skipped, anchors)
            skipped = standing  # the others were blanked inside a string
        return None

    def _skippable(self, code: str, regions: list[Region], anchors: dict[str, frozenset[str]],
                   bindings: list[Binding]) -> list[Region]:
        """The regions that cannot hold a finding, never one whose imports matter elsewhere or
        that declares an argparse option (those are context). `code`: the source less comments."""
        # One byte per character (non-ASCII as `?`), every non-word byte a space, a space at each
        # end: a whole word `w` at offset i of `code` is ` w ` at offset i of `flat`.
        flat = b" " + code.encode("ascii", "replace").translate(SPACES) + b" "
        # The words of each region and of the context (regions start and end at line starts, so
        # no word straddles two).
        words_of = [set(flat[r.start + 1:r.end + 1].split()) for r in regions]
        ends = [0] + [r.end + 1 for r in regions]
        context = set(b" ".join(flat[a:r.start + 1] for a, r in zip(ends, regions, strict=False)).split())
        context.update(flat[ends[-1]:].split())
        present = context.union(*words_of)

        starts = [r.start for r in regions]
        found: dict[bytes, list[int]] = {}
        located: dict[bytes, tuple[set[int], bool]] = {}

        def offsets(word: bytes) -> list[int]:
            if word not in found:
                found[word] = _word_offsets(flat, word) if word in present else []
            return found[word]

        def where(word: bytes) -> tuple[set[int], bool]:
            """The regions holding `word` as a whole word, and whether the rest of the file does."""
            if word not in located:
                located[word] = ({i for i, words in enumerate(words_of) if word in words}, word in context)
            return located[word]

        importing = Counter(i for i in (_region_at(regions, starts, pos) for pos in offsets(b"import")) if i >= 0)
        forced = where(b"add_argument")[0] | _binding_regions(regions, bindings, importing, offsets, self.spelled)
        candidates = {i for i in range(len(regions)) if i not in forced}
        # The requirements the whole file meets; then, for their tokens only, the candidate
        # regions holding each, and whether the context does (a forced region counts as context).
        lowered = code.encode("ascii", "replace").lower()  # one byte per character: same offsets
        # The file's distinct words, each between spaces: a token occurs in the file only if its
        # needles occur here, and most do not; a search of this, much shorter than the file,
        # spares searching the file for them.
        vocab = b" " + b" ".join(present) + b" "
        vocab_lower = vocab.lower()
        nowhere: tuple[set[int], bool] = (set(), False)
        probed: dict[bytes, tuple[set[int], bool]] = {}
        others: dict[_Need, tuple[set[int], bool]] = {}

        def other(t: _Need) -> tuple[set[int], bool]:
            """The regions holding a token that is no whole word, and whether the context does."""
            if t not in others:
                probe = self.probes.get(t)
                if probe is None:
                    absent = any(n not in vocab for n in self.needles[t])
                    others[t] = nowhere if absent else _holding(code, t, regions, starts)
                else:
                    if probe not in probed:
                        probed[probe] = (nowhere if WORD_BYTES.issuperset(probe) and probe not in vocab_lower
                                         else _spread(partial(lowered.find, probe), regions, starts))
                    others[t] = probed[probe]
            return others[t]

        met = [req for word, entries in self._split.items() if word in present for req, words, rest in entries
               if words <= present and all(any(others.get(t) or other(t)) for t in rest)]
        met += [req for req, _, rest in self._unfiled if all(any(others.get(t) or other(t)) for t in rest)]
        if any(all(t.value for t in req) for req in met):
            return []  # its match may be in any region, its value in the context
        needed = {t for req in met for t in req}
        inside: dict[_Need, set[int]] = {}
        in_context: set[_Need] = set()  # values the context holds: module constants, argparse defaults
        # Methods that may set the value as an attribute (`self.mode = "inductor"`): attributes are
        # file-wide, so another method's `backend=self.mode` reads it; both are parsed.
        setters: set[int] = set()
        for t in needed:
            holders, outside = where(self.plain[t]) if t in self.plain else other(t)
            held = holders & candidates
            if held:
                inside[t] = held
            if t.value and (outside or len(held) < len(holders)):
                in_context.add(t)
            elif t.value and held:
                setting = {i for i in held if _SELF_ATTRIBUTE.search(code, regions[i].start, regions[i].end)}
                if setting:
                    in_context.add(t)
                    setters |= setting
        # Per candidate region, the tokens of met requirements it spells or hides behind a name.
        here: dict[int, set[_Need]] = {}
        for t, holders in inside.items():
            for i in holders:
                here.setdefault(i, set()).add(t)
        by_text: dict[str, list[_Need]] = {}
        for t in needed:
            if not t.value:  # a string value is no name an import binds
                by_text.setdefault(t.text, []).append(t)
        for name, texts in anchors.items():
            hidden = [t for text in texts for t in by_text.get(text, ())]
            if hidden:
                for i in where(name.encode())[0] & candidates:
                    here.setdefault(i, set()).update(hidden)
        holding: dict[_Need, list[int]] = {}
        for i, tokens in here.items():
            for t in tokens:
                holding.setdefault(t, []).append(i)
        # An import pattern matches an import statement, which spells its module and names: the
        # region must hold one that does (`torch._C` used and `import` written elsewhere is none).
        stated = (_statements(code, flat, regions, starts, bindings, candidates)
                  if any(_IMPORT_WORD in req for req in met) else {})
        keep: set[int] = set()
        for req in met:
            # A region meeting `req` holds each of its tokens the context does not: it is among
            # those holding the rarest of them (`torch` is in every region, `synchronize` in few).
            key = min([t for t in req if t not in in_context] or req, key=lambda t: len(holding.get(t, ())))
            for i in holding.get(key, ()):
                if i not in keep and all(u in here[i] or u in in_context for u in req) and (
                        _IMPORT_WORD not in req or _spelled(req, stated.get(i, ()), self.plain)):
                    keep.add(i)
        return [regions[i] for i in sorted(candidates - keep - setters)]


def _statements(code: str, flat: bytes, regions: list[Region], starts: list[int], bindings: list[Binding],
                candidates: set[int]) -> dict[int, tuple[tuple[str, set[bytes]], ...] | None]:
    """Per candidate region, the text and words of each import statement in it (from its line's
    start: `from m import x`), or None where `_imports` could not read one: then any import
    pattern may match there. (Every `import` of a candidate region is a statement it read.)"""
    out: dict[int, list[tuple[str, set[bytes]]] | None] = {}
    last = -1
    for b in bindings:
        i = _region_at(regions, starts, b.pos)
        if i not in candidates or b.pos == last or (i in out and out[i] is None):
            continue
        last = b.pos  # a statement binding several names is read once
        if b.key[1] == "unread":
            out[i] = None
            continue
        line_start = code.rfind("\n", 0, b.pos) + 1
        out.setdefault(i, []).append((code[line_start:b.end], set(flat[line_start + 1:b.end + 1].split())))  # type: ignore[union-attr]
    return {i: tuple(v) if v is not None else None for i, v in out.items()}


def _spelled(req: tuple[_Need, ...], statements: tuple[tuple[str, set[bytes]], ...] | None,
             plain: dict[_Need, bytes]) -> bool:
    """Whether one of a region's import statements spells every token of `req` (None: unknown)."""
    if statements is None:
        return True
    return any(all(t == _IMPORT_WORD or (plain[t] in words if t in plain else t.text in text) for t in req)
               for text, words in statements)


def _needles(t: _Need) -> tuple[bytes, ...]:
    """What of a token stands among a file's words (see `_skippable`) wherever it occurs: spelled
    with name characters only, itself with a space on each bounded side; else each run of name
    characters in it (`gpu` of `gpu:0`)."""
    if WORD_STR.issuperset(t.text):
        return ((" " * t.left + t.text + " " * t.right).encode(),)
    return tuple(w.encode() for w in _NAME_RUN.findall(t.text))


class Binding(NamedTuple):
    """A name an import statement binds (or, relative, unbinds), as the alias table records it."""

    pos: int  # offset of the statement's `import`
    name: str
    target: str | None  # the qualified name; None for a relative import (the project's own)
    key: tuple[str | None, str]  # what the binding sets: equal keys, equal effect
    end: int = 0  # offset just past the statement's names


def _imports(source: str, star_modules: Collection[str]) -> list[Binding] | None:
    """Every import binding the text spells (in strings and comments too: more is safe), with an
    unnamed one for an `import` it cannot read (prose, a backslash continuation, also a `from m`
    carried over to the `import` line by one); None when the file star-imports one of
    `star_modules`, or a module it cannot read (then any free name may be a rule's). A star
    import of any other module binds no name the walk resolves."""
    out: list[Binding] = []
    for m in _IMPORT.finditer(source):
        i = m.start()
        if i and source[i - 1] in WORD_STR:
            continue
        items, end = m.group(1), m.end()
        line_start = source.rfind("\n", 0, i) + 1
        before = _FROM.search(source, line_start, i)
        module = before.group(1) if before else None
        if items == "*":
            if module is None or module in star_modules:
                return None
            continue
        items = _COMMENT.sub("", items)
        if (items.startswith("(") and not items.rstrip().endswith(")")) or (  # a `)` inside a comment
                line_start and not source[line_start:i].strip()
                and source[source.rfind("\n", 0, line_start - 1) + 1:line_start - 1].rstrip(" \t\r").endswith("\\")):
            out.append(Binding(i, "", None, (None, "unread"), end))
            continue
        for item in items.strip("()").split(","):
            parts = item.split()
            if not parts:
                continue
            if not (len(parts) == 1 or (len(parts) == 3 and parts[1] == "as")) or not all(
                    name.isidentifier() for name in (*parts[0].split("."), *parts[2:])):
                out.append(Binding(i, "", None, (None, "unread"), end))  # prose, or a continuation line
                continue
            target, bound = parts[0], parts[-1]
            if module is None:
                if len(parts) == 1:  # `import a.b.c` binds `a`, and its uses spell the rest
                    target = bound = target.partition(".")[0]
                    out.append(Binding(i, bound, target, (target, "import"), end))
                else:
                    out.append(Binding(i, bound, target, (target, "import as"), end))
            elif module.startswith("."):
                out.append(Binding(i, bound, None, (None, "relative"), end))
            else:
                out.append(Binding(i, bound, f"{module}.{target}", (f"{module}.{target}", "from"), end))
    return out


def _binding_regions(regions: list[Region], bindings: list[Binding], importing: Counter[int],
                     offsets: Callable[[bytes], list[int]], spelled: Collection[str]) -> set[int]:
    """The regions whose imports the rest of the file may depend on (`importing`: how many
    `import` words each region holds). The alias table is file-wide, so a binding in a function
    resolves names elsewhere. It does not matter when every import in the file binds that name
    the same way and either one at module level does (`import torch._dynamo` in a function
    rebinds `torch` to itself), or every other function that reads the name imports it first
    itself (the same lazy import in several functions); nor when nothing outside the region
    reads the name."""
    starts = [r.start for r in regions]
    keys: dict[str, set[tuple[str | None, str]]] = {}
    first_bound: dict[tuple[int, str], int] = {}  # (region, name) -> its first import of the name
    inside: dict[int, list[Binding]] = {}
    statements: Counter[int] = Counter()  # per region, the import statements read
    for b in bindings:
        keys.setdefault(b.name, set()).add(b.key)
        i = _region_at(regions, starts, b.pos)
        first_bound.setdefault((i, b.name), b.pos)
        if i >= 0:
            if not inside.get(i) or inside[i][-1].pos != b.pos:
                statements[i] += 1
            inside.setdefault(i, []).append(b)
    matter = set()
    for i, words in importing.items():
        if words != statements[i]:  # an `import` that is no statement the scan read
            matter.add(i)
            continue
        for b in inside[i]:
            same = bool(b.name) and len(keys[b.name]) == 1
            if same and (-1, b.name) in first_bound:
                continue
            # A module a fix writes, bound under a name of its own (`import torch as th`), is also
            # how fixes spell it (`AliasTable.spelling`): that binding counts even where nothing
            # else reads it. Any other (`import sympy` in a function) counts only where it is read.
            if not b.name or (b.target is not None and "." not in b.target and b.target in spelled):
                matter.add(i)
                break
            for pos in offsets(b.name.encode()):
                k = _region_at(regions, starts, pos)
                if k != i and (k < 0 or not same or first_bound.get((k, b.name), pos + 1) > pos):
                    matter.add(i)
                    break
            if i in matter:
                break
    return matter


def _regions(source: str) -> list[Region]:
    """The column-0 functions and the members of column-0 classes, in order."""
    out: list[Region] = []
    for start, end, is_class in _blocks(source, 0, len(source), ""):
        if is_class:
            out += _members(source, start, end)
        else:
            out.append(Region(start, end, 0, ""))
    line, pos = 1, 0
    for r in out:
        line += source.count("\n", pos, r.start)
        pos = r.start
        r.line = line
    return out


def _blocks(source: str, start: int, end: int, indent: str) -> list[tuple[int, int, bool]]:
    """(start, end, is_class) of each def/class indented by `indent` in source[start:end],
    decorators included; a block ends where the next statement at that indentation or less starts."""
    width = len(indent)
    boundary = _BOUNDARY.get(width)
    if boundary is None:
        boundary = _BOUNDARY[width] = re.compile(r"\n[ \t]{0,%d}[^ \t\f\n#)\]}'\"]" % width)
    # A line after a backslash continues the one before (a string, an expression): no boundary.
    lines = [m.start() + 1 for m in boundary.finditer(source, start - 1 if start else 0, end)
             if source[m.start() - 1] != "\\"]
    if start == 0 and source and source[0] not in _NOT_STATEMENT:
        lines.insert(0, 0)
    blocks: list[tuple[int, int, bool]] = []
    decorated: int | None = None
    for i, pos in enumerate(lines):
        head = pos + width
        if not (source.startswith(indent, pos) and source[head] not in " \t" and _DEF.match(source, head)):
            # No def: the block before ends here. A pending decorator stays pending: in valid
            # code only a def or class follows one, so this line is in its call (a string's text).
            continue
        if source[head] == "@":
            decorated = pos if decorated is None else decorated
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else end
        blocks.append((decorated if decorated is not None else pos, nxt, source.startswith("class", head)))
        decorated = None
    return blocks


def _members(source: str, start: int, end: int) -> list[Region]:
    """A column-0 class's direct members: the defs and classes at its body's indentation."""
    # Members sit at the least indentation of any def in the class: deeper ones are nested in a
    # method or are example code in a docstring. A class whose defs all sit under an `if` gets
    # regions there, whose `pass` is then no statement of the class body: they are parsed after
    # all (`_placeholders_stand`). Members deeper than 64 columns are not looked for.
    indent, most = "", 64
    while most:
        found = _member(most).search(source, start, end)
        if found is None:
            break
        indent = found.group(1)
        most = len(indent) - 1
    if not indent:
        return []
    return [Region(s, e, 0, indent) for s, e, _ in _blocks(source, start, end, indent)]


def _member(most: int) -> re.Pattern[str]:
    """Finds a def, class or decorator line indented by 1 to `most` characters."""
    pattern = _MEMBER.get(most)
    if pattern is None:
        pattern = _MEMBER[most] = re.compile(r"\n([ \t]{1,%d})%s" % (most, _HEAD))
    return pattern


def _blank(source: str, regions: list[Region]) -> str:
    """The source with each region replaced by `pass` on its first line and blank lines after."""
    pieces: list[str] = []
    pos = 0
    for r in regions:
        pieces.append(source[pos:r.start])
        pieces.append(r.indent + "pass" + "\n" * source.count("\n", r.start, r.end))
        pos = r.end
    pieces.append(source[pos:])
    return "".join(pieces)



def _placeholders_stand(tree: ast.Module, skipped: list[Region]) -> list[Region]:
    """The skipped regions whose `pass` is a statement of the module or of a class at its top
    level. One that is not was blanked inside a string (a column-0 `def` in a docstring): the
    parse then says nothing about where statements start."""
    lines = set()
    for node in tree.body:
        if node.__class__ is ast.Pass:
            lines.add(node.lineno)
        elif node.__class__ is ast.ClassDef:
            for member in node.body:  # type: ignore[attr-defined]
                if member.__class__ is ast.Pass:
                    lines.add(member.lineno)
    return [r for r in skipped if r.line in lines]


def _without_comment_lines(source: str) -> str:
    """`source` with each comment line (after the first line) that holds no quote blanked to
    spaces: same offsets."""
    pieces: list[str] = []
    pos = 0
    for m in _COMMENT_LINE.finditer(source):
        start = m.start() + 1
        pieces += (source[pos:start], " " * (m.end() - start))
        pos = m.end()
    pieces.append(source[pos:])
    return "".join(pieces)


def _attribute(source: str, pos: int, line_start: bool = False) -> bool:
    """Whether the word at `pos` follows a `.` on its line (`x.name`): an attribute of something
    else. A word that starts its line counts as one when `line_start` is set (a bracket or a
    backslash may continue `x.` from the line before)."""
    i = pos - 1
    while i >= 0 and source[i] in " \t":
        i -= 1
    if i < 0 or source[i] == "\n":
        return line_start
    return source[i] == "."


def _assigned(source: str, end: int) -> bool:
    """Whether the attribute ending at `end` is assigned a value: `= value`, or an annotation with
    a value on its line, or a line that goes on (an open bracket, a backslash, a comment: the
    value may follow)."""
    m = _STORE.match(source, end)
    if m is None:
        return False
    rest = m.group(1)
    if rest is None:
        return True
    return ("=" in rest or "#" in rest or rest.rstrip().endswith("\\")
            or sum(map(rest.count, "([{")) > sum(map(rest.count, ")]}")))


def _region_at(regions: list[Region], starts: list[int], pos: int) -> int:
    """The index of the region holding offset `pos` (`starts`: the regions' starts), or -1."""
    i = bisect.bisect_right(starts, pos) - 1
    return i if i >= 0 and pos < regions[i].end else -1


def _holding(code: str, token: _Need, regions: list[Region], starts: list[int]) -> tuple[set[int], bool]:
    """The indexes of the regions holding `token` (with its word bounds), and whether the text
    outside them does."""
    text, left, right = token.text, token.left, token.right
    n, end = len(text), len(code)

    def find(pos: int) -> int:
        i = code.find(text, pos)
        while i >= 0 and not ((not left or i == 0 or code[i - 1] not in WORD_STR) and (
                not right or i + n == end or code[i + n] not in WORD_STR)):
            i = code.find(text, i + 1)
        return i

    return _spread(find, regions, starts)


def _spread(find: Callable[[int], int], regions: list[Region], starts: list[int]) -> tuple[set[int], bool]:
    """The regions holding an occurrence `find(pos)` (the first at or after `pos`, or -1) finds,
    and whether one lies outside them. Once a region (or the context) is known to hold one, the
    search jumps past that region (to the next region): a word such as `cuda` occurs thousands of
    times in a file."""
    found: set[int] = set()
    outside = False
    i = find(0)
    while i >= 0:
        k = _region_at(regions, starts, i)
        if k >= 0:
            found.add(k)
            i = find(regions[k].end)
            continue
        outside = True
        nxt = bisect.bisect_right(starts, i)
        if nxt == len(starts):
            break
        i = find(starts[nxt])
    return found, outside


def _word_offsets(flat: bytes, word: bytes) -> list[int]:
    """Offsets in the source of `word` as a whole word, given `flat` as `_skippable` builds it."""
    needle = b" " + word + b" "
    out = []
    i = flat.find(needle)
    while i >= 0:
        out.append(i)
        i = flat.find(needle, i + 1)
    return out
