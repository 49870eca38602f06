"""CUDA-indicative words in code (`match.tokens`): the net under the specific rules, so that no
CUDA reference in code goes unreported.

A pattern is a word glob over the lower-cased words of a name or string: `cuda*` matches `cuda`
in `is_cuda`, `CUDAExtension`, `cudaMalloc`, `cuda11`; `flash_attn` (words joined by `_`) matches
the consecutive words `flash`, `attn` in `flash_attn_func`. Words are split at `_`, at every other
character that is not a letter or digit, at a lower-to-upper case change, before the last capital
of an upper-case run followed by lower case (`CUDAGraph` -> `cuda`, `graph`) and between letters and
digits. A string literal is looked at only when it is short and not prose (a device, backend,
package, file or env-var name, a flag): words that make a sentence (an English function word, a
sentence's end) or more than a few words are a message, which the user reads, not code that runs,
unless they are a command line (flags or a pipe after the first word), whose program, flags and
flag values are looked at; a string that names a CUDA source file (`*.cu`, `*.cuh`) matches too.

Which strings are messages (arguments of print/logging/warnings/exceptions, assert messages,
argparse help, docstrings) is the walker's call (`scan.analyze`).
"""

from __future__ import annotations

import fnmatch
import re

from neuron_migrate.ruleset.model import Rule

_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z][a-z]+|[A-Z]+|[a-z]+|[0-9]+", re.ASCII)
_PROSE_WORDS = 3  # a string with more whitespace-separated words than this is prose
_MAX_STRING = 200
CUDA_SOURCE = (".cu", ".cuh")
_MISS = object()
_EVERYDAY = frozenset({"load", "in", "and", "attention", "gpu"})
_FLAG = re.compile(r"--?[A-Za-z]")  # `-L`, `--version`; not prose's ` -- `
# Words no value, name or command line is made of: a string holding one is a sentence.
_FUNCTION_WORDS = frozenset({
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "not", "no", "to", "of", "for", "with", "and",
    "or", "on", "at", "by", "this", "that", "it", "if", "when", "please", "can", "cannot", "could", "should",
    "must", "will", "use", "using", "available", "supported", "found", "installed", "enabled", "disabled",
    "required", "failed"})
# `torch.cuda.is_available()`, `CUDNN_STATUS_NOT_SUPPORTED`: an expression or a name, not prose
_CODE = re.compile(r"[A-Za-z_]\w*\.[A-Za-z_]|\w\(|[A-Za-z0-9]_[A-Za-z0-9]")
OFF_PREFIX = r"(?:no|disable|without)[-_]"  # a flag name that turns its setting off (`--no-cuda`)
_OFF_FLAG = re.compile(rf"--?{OFF_PREFIX}\S*|--?\S+=(?:off|false|no|none|0)", re.IGNORECASE)
_SENTENCE_ENDS = (".", "!", "?", "\u3002", "\uff01", "\uff1f")  # also the full-width marks of CJK text
# A model of NVIDIA's on the Hugging Face Hub (`"nvidia/mit-b0"`, or its prefix `'nvidia/' + name`),
# also a file in it (InvokeAI's `"nvidia/PiD::checkpoints/model.safetensors"`): its weights run anywhere.
_MODEL_ID = re.compile(r"nvidia/[\w.-]*(?:(?:::|/)[^\s:]+)?", re.IGNORECASE)
# An absolute path, spaces and all (`"C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA"`), is a
# value a program uses, not prose.
_ABSOLUTE_PATH = re.compile(r"(?:[A-Za-z]:[\\/]|/|~/)[^\n]*[\\/]")
# A web page for people (`https://pytorch.org/docs/stable/notes/cuda.html#...`), also one of the
# project's own documentation (nbdev's `_modidx.py`: `'data.core.html#dataloaders.cuda'`): a link
# a message shows, nothing a program fetches or runs.
_WEB_PAGE = re.compile(r"(?:https?://\S+?|[\w./-]+)(?:\.html?|\.md)(?:#\S*)?|https?://\S*#\S*", re.IGNORECASE)
# A web address's scheme and host: the host names a server (`nvlabs-fi-cdn.nvidia.com` serves
# weights), the path what is fetched (`.../compute/cuda/redist/cuda_nvcc/...`); on a code or
# model hub the owner too (`github.com/NVIDIA/BigVGAN`, `huggingface.co/datasets/nvidia/...`), the
# repository what it is.
_URL_HOST = re.compile(r"https?://(?:(?:www\.)?(?:github\.com|gitlab\.com|(?:huggingface\.co|hf\.co)(?:/datasets|/spaces)?)"
                       r"/[^/\s]*|[^/\s]*)", re.IGNORECASE)
# In a web address's path NVIDIA names the company (its licences, its published models); what is
# CUDA there is spelled so (`/compute/cuda/repos/`, `nvidia_smi`).
_COMPANY = re.compile(r"(?<![\w])nvidia(?![\w])", re.IGNORECASE)


def words(text: str) -> list[str]:
    """The lower-cased words of a name or string."""
    return [w.lower() for w in _WORDS.findall(text)]


class TokenTable:
    """Every `tokens` pattern of the pack; answers "which pattern does this name/string hit"."""

    __slots__ = ("_names", "_regexes", "_runs", "_strings", "patterns", "rules")

    def __init__(self, rules: list[Rule]) -> None:
        # (pattern words, rule); a pattern of one word is the common case
        self.patterns: list[tuple[tuple[str, ...], Rule]] = [
            (_pattern_words(p), rule) for rule in rules for p in rule.match.tokens if not p.startswith("!")]
        self.rules = tuple({rule.code: rule for _, rule in self.patterns}.values())
        # Lower-case literal text one of which every match contains: most names contain none.
        runs = dict.fromkeys(max(re.split(r"[*?]|\[[^\]]*\]", w), key=len) for ws, _ in self.patterns for w in ws[:1])
        self._runs = re.compile("|".join(map(re.escape, runs)) or "(?!)", re.IGNORECASE).search
        # Per rule, one regex over a text's words joined by spaces.
        by_rule: dict[str, tuple[Rule, list[str], list[str]]] = {}
        for rule in rules:
            for p in rule.match.tokens:
                entry = by_rule.setdefault(rule.code, (rule, [], []))
                if p.startswith("!"):  # an exception: text with these words is something else
                    entry[2].append(" ".join(map(_word_regex, _pattern_words(p[1:]))))
                else:
                    entry[1].append(" ".join(map(_word_regex, _pattern_words(p))))
        self._regexes = [(_words_regex(alts), _words_regex(nots) if nots else None, rule)
                         for rule, alts, nots in by_rule.values() if alts]
        self._names: dict[str, tuple[str, tuple[Rule, ...]] | None] = {}
        self._strings: dict[str, tuple[str, tuple[Rule, ...]] | None] = {}

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def name(self, ident: str) -> tuple[str, tuple[Rule, ...]] | None:
        """(the matched word(s) as written, rules) for an identifier, or None. Memoised: the same
        names recur in every file."""
        hit = self._names.get(ident, _MISS)
        if hit is _MISS:
            hit = self._names[ident] = self._match(ident)
        return hit  # type: ignore[return-value]

    def string(self, value: str) -> tuple[str, tuple[Rule, ...]] | None:
        """The same for a string literal's value; prose and long strings never match. A command
        line is not prose, however many words it has: its program's name is matched
        (`"nvidia-smi -L | wc -l"`)."""
        if len(value) > _MAX_STRING or _MODEL_ID.fullmatch(value) or _WEB_PAGE.fullmatch(value):
            return None
        text = _URL_HOST.sub("", value)
        if "://" in value:
            text = _COMPANY.sub(" ", text)
        parts = text.split()
        path = _ABSOLUTE_PATH.match(value) is not None
        if not path and _prose(parts):
            return None
        if len(parts) > _PROSE_WORDS and not path:
            text = " ".join(_command_words(parts))
        try:
            return self._strings[text]
        except KeyError:
            hit = self._match(text)
            if hit is None and text.rstrip().endswith(CUDA_SOURCE) and self.patterns:
                hit = (text.strip(), self.rules)
            if len(self._strings) < 65536:
                self._strings[text] = hit
            return hit

    def phrase(self, value: str) -> tuple[str, tuple[Rule, ...]] | None:
        """The same for text that is code however many words it has (a string a program
        compares: `"CUDA out of memory" in str(e)`)."""
        if len(value) > _MAX_STRING or _MODEL_ID.fullmatch(value):
            return None
        return self._match(_URL_HOST.sub("", value))

    def _match(self, text: str) -> tuple[str, tuple[Rule, ...]] | None:
        if self._runs(text) is None:
            return None
        joined = " ".join(words(text))
        token = ""
        found: list[Rule] = []
        for rx, exception, rule in self._regexes:
            m = rx.search(joined)
            if m is not None and (exception is None or exception.search(joined) is None):
                token = token or m.group(1).replace(" ", "_")
                found.append(rule)
        return (token, tuple(found)) if found else None


def is_prose(value: str) -> bool:
    """Whether a string is text for people (see `TokenTable.string`), not a value or a command line."""
    return _prose(_URL_HOST.sub("", value).split())


def _prose(parts: list[str]) -> bool:
    """Words that make a sentence, not a value, an expression or a command line: more than a few
    words with an English function word or a sentence's end, or no flag or pipe after the first
    (`"pass --device cuda to use the GPU"`); a few such words without a dotted name, call or
    snake-case name (`"xFormers not available"`; not pytest's `"not torch.cuda.is_available()"` nor
    an error text matched in code, `"cuDNN error: CUDNN_STATUS_NOT_SUPPORTED."`)."""
    if len(parts) > _PROSE_WORDS:
        return _sentence(parts) or not any(p == "|" or _FLAG.match(p) for p in parts[1:])
    return len(parts) > 1 and _sentence(parts) and not any(_CODE.search(p) for p in parts)


def _sentence(parts: list[str]) -> bool:
    return parts[-1].endswith(_SENTENCE_ENDS) or any(p.lower().strip(",;:()") in _FUNCTION_WORDS for p in parts)


def _command_words(parts: list[str]) -> list[str]:
    """What of a command line runs CUDA: its program, its flags and each flag's value
    (`train.py --epochs 1 --device cuda`); not a path or address given to it, nor a flag that
    turns something off (`-DGGML_CUDA=OFF`, `--no-cuda`)."""
    out = [parts[0]]
    for i, p in enumerate(parts[1:], 1):
        if _OFF_FLAG.fullmatch(p):
            continue
        if p.startswith("-") or (parts[i - 1].startswith("-") and "=" not in parts[i - 1] and "/" not in p
                                 and not _OFF_FLAG.fullmatch(parts[i - 1])):
            out.append(p)
    return out


def first_words(rules: list[Rule]) -> tuple[str, ...]:
    """Text at least one of which appears in any file a `tokens` pattern of `rules` matches."""
    return first_words_of(tuple(p for rule in rules for p in rule.match.tokens))


def first_words_of(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """Lower, upper and capitalised forms of each pattern's longest literal run (and the CUDA
    source suffixes), for a text gate: one of them is written wherever a pattern matches."""
    out: dict[str, None] = {}
    for p in patterns:
        if p.startswith("!"):
            continue
        run = max((r for r in re.split(r"[*?]|\[[^\]]*\]|_", p) if r), key=_rarity, default="")
        for form in (run.lower(), run.upper(), run.capitalize()):
            if form:
                out[form] = None
    if out:
        out.update(dict.fromkeys(CUDA_SOURCE))  # a source file name: `"kernel.cu"`
    return tuple(out)


def required_words(pattern: str) -> tuple[str, ...]:
    """Lower-case text all of which a name or string matching `pattern` contains, in some case
    (`bits`, `bytes` for `bits_and_bytes*`): each word of its literal parts, less everyday and
    one- or two-letter words (which filter nothing); its rarest run when none is left."""
    runs = [r for r in re.split(r"[*?]|\[[^\]]*\]|_", pattern) if r]
    kept = [w for r in runs for w in words(r) if len(w) > 2 and w not in _EVERYDAY]
    return tuple(dict.fromkeys(kept)) or (max(runs, key=_rarity).lower(),)


def _words_regex(alternatives: list[str]) -> re.Pattern[str]:
    return re.compile(r"(?:^| )(" + "|".join(alternatives) + r")(?= |$)")


def _word_regex(glob: str) -> str:
    """One word glob as a regex over a word (`*` and `?` stay inside the word)."""
    return fnmatch.translate(glob).removeprefix("(?s:").removesuffix(")\\Z").replace(".*", "[a-z0-9]*").replace(".", "[a-z0-9]")


def _rarity(run: str) -> tuple[bool, bool, int]:
    """Which literal run of a pattern a gate looks for: one with a digit, not an everyday word,
    then the longest (`8bit` of `load_in_8bit`, `flash` of `flash_attention`)."""
    return (any(c.isdigit() for c in run), run not in _EVERYDAY, len(run))


def _pattern_words(pattern: str) -> tuple[str, ...]:
    """`load_in_8bit` -> (load, in, 8, bit), split as names are; a part with a wildcard stays whole."""
    out: list[str] = []
    for part in pattern.lower().split("_"):
        out += [part] if any(c in part for c in "*?[") else words(part)
    return tuple(out)
