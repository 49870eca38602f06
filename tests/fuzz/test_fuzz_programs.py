"""Generated programs made of the rule pack's own CUDA idioms (every rule's invalid examples),
placed at module level, in functions, methods and blocks, between comments, strings and docstrings
that mention CUDA, saved with every newline style, with or without a BOM or a coding cookie and
with odd permission bits; then scanned and rewritten with `--apply` for both targets.

Properties: the scan reports no tool diagnostic for a valid program; the rewritten file parses,
keeps its BOM, newlines, encoding and mode; every line no applied edit or import change touches is
kept byte for byte; and a second rewrite changes nothing."""

from __future__ import annotations

import ast
import difflib
import io
import re
import stat
import textwrap
import tokenize
from pathlib import Path

import pytest
from fuzzing import bounded
from hypothesis import assume, given
from hypothesis import strategies as st

from neuron_migrate.api import rewrite_paths
from neuron_migrate.config import Settings
from neuron_migrate.findings import Target
from neuron_migrate.rewrite.apply import applicable_fix
from neuron_migrate.rewrite.engine import FileStatus
from neuron_migrate.ruleset.load import load_pack

PACK = load_pack()
# (a dependency or configuration rule's examples are a requirements or YAML file, not Python)
IDIOMS = sorted({ex.code for rule in PACK.rules.values() if not (rule.match.requirements or rule.match.config_values)
                 for ex in rule.invalid})
FILLER = [
    "# a comment that says cuda and torch.cuda.synchronize()\n",
    's = "torch.cuda.is_available() # neuron-migrate: ignore"\n',
    '"""A docstring.\n\n    x.cuda()  # neuron-migrate: ignore[NM102]\n"""\n',
    "value = 1  # trailing comment\n",
    "\n",
    "names = [\n    'cuda',\n    'cpu',\n]\n",
    "def helper(a, b=2):\n    return a + b\n",
    "π = 3.14159  # non-ASCII text\n",
    "\x0c\n\n",  # a form feed line, then a blank one
    "x = 1 \\\n    + 2\n",  # a backslash continuation
    "if True:\n\tpass\n",  # tab indentation
]
NEWLINES = ["\n", "\r\n", "\r"]
MODES = [0o644, 0o600, 0o755, 0o444]
BOM = b"\xef\xbb\xbf"


def _indented(snippet: str, context: str) -> str:
    """`snippet` placed in `context` (module, function, method, if-block, with-block)."""
    if context == "module":
        return snippet
    body = textwrap.indent(snippet, "    " if context != "method" else "        ", lambda line: bool(line.strip()))
    header = {
        "function": "def run():\n",
        "method": "class Job:\n    def run(self):\n",
        "if": "if __name__ == '__main__':\n",
        "with": "import contextlib\nwith contextlib.suppress(Exception):\n",
    }[context]
    return header + body


@st.composite
def programs(draw: st.DrawFn) -> tuple[bytes, str, int]:
    parts = draw(st.lists(st.tuples(st.sampled_from(IDIOMS + FILLER), st.sampled_from(
        ["module", "function", "method", "if", "with"])), min_size=1, max_size=6))
    chunks = []
    for snippet, context in parts:
        placed = _indented(snippet, context)
        try:
            ast.parse(placed)
        except SyntaxError:  # `from x import *` in a function, a decorator at the end...
            placed = snippet
        chunks.append(placed if placed.endswith("\n") else placed + "\n")
    text = "".join(chunks)
    try:
        ast.parse(text)
    except SyntaxError:
        assume(False)
    if draw(st.booleans()):
        text = text.rstrip("\n")  # no newline at the end of the file
    newline = draw(st.sampled_from(NEWLINES))
    encoding = draw(st.sampled_from(["utf-8", "utf-8-bom", "latin-1"]))
    if encoding == "latin-1":
        text = "# -*- coding: latin-1 -*-\n" + text.replace("π", "é")  # é: a byte only latin-1 decodes
    body = text.replace("\n", newline).encode("latin-1" if encoding == "latin-1" else "utf-8")
    data = (BOM if encoding == "utf-8-bom" else b"") + body
    return data, newline, draw(st.sampled_from(MODES))


def _import_lines(text: str) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _lines(text: str) -> list[str]:
    """Lines as Python counts them, with their newlines (`str.splitlines` also splits at form
    feeds and U+2028, which are no newlines to the tokenizer)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def _decode(data: bytes) -> str:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def _check_program(tmp_path: Path, data: bytes, newline: str, mode: int, target: Target) -> None:
    source = tmp_path / "prog.py"
    source.write_bytes(data)
    source.chmod(mode)
    settings = Settings(target=target)
    first = rewrite_paths([tmp_path], settings, apply=True, unsafe=False, allow_dirty=True, target=target,
                          use_cache=False, jobs=1)
    assert not [f for f in first.findings if f.code.startswith("NM0")], "a valid program got a tool diagnostic"
    for outcome in first.files:
        # A valid program is never skipped whole (a CR-only file's coding cookie was, issue 13).
        assert outcome.status is not FileStatus.SKIPPED, outcome
    new = source.read_bytes()
    assert stat.S_IMODE(source.stat().st_mode) == mode
    if new == data:
        return
    assert new.startswith(BOM) == data.startswith(BOM)
    old_text, new_text = _decode(data), _decode(new)
    ast.parse(new_text)
    if newline != "\n":
        assert "\n" not in new_text.replace("\r\n", "") if newline == "\r\n" else "\n" not in new_text
    # Lines no edit and no import change touches are kept byte for byte (newline included).
    touched = _import_lines(old_text)
    for outcome in first.files:
        for finding in outcome.applied:
            fix = applicable_fix(finding, target, unsafe=False)
            for edit in fix.edits if fix else ():
                touched.update(range(edit.span.line, edit.span.end_line + 1))
    old_lines, new_lines = _lines(old_text), _lines(new_text)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for op, i1, i2, _, _ in matcher.get_opcodes():
        if op in ("replace", "delete"):
            untouched = [n for n in range(i1 + 1, i2 + 1) if n not in touched]
            assert not untouched, f"lines {untouched} changed outside any edit:\n{matcher.a[i1:i2]!r}"
    second = rewrite_paths([tmp_path], settings, apply=False, unsafe=False, allow_dirty=True, target=target,
                           use_cache=False, jobs=1)
    again = [o for o in second.files if o.status is FileStatus.CHANGED]
    assert not again, f"not idempotent: {again[0].diff}"


@pytest.mark.parametrize("target", [Target.NEURON, Target.ACCELERATOR])
@bounded(60)
@given(program=programs())
def test_generated_programs_rewrite_byte_exactly(target: Target, program: tuple[bytes, str, int],
                                                 tmp_path_factory: pytest.TempPathFactory) -> None:
    data, newline, mode = program
    _check_program(tmp_path_factory.mktemp("prog"), data, newline, mode, target)


def test_the_generator_covers_every_idiom_and_layout() -> None:
    """The pool is the pack's examples (not a hand-picked subset) and every layout parses."""
    assert len(IDIOMS) >= 100
    for context in ("module", "function", "method", "if", "with"):
        ast.parse(_indented("x = 1\ny = 2\n", context))


@pytest.mark.parametrize("target", [Target.NEURON, Target.ACCELERATOR])
def test_every_idiom_alone(target: Target, tmp_path: Path) -> None:
    """The exhaustive floor under the random draws: each idiom once, as a whole file, the newline
    styles taken in turn."""
    for index, idiom in enumerate(IDIOMS):
        case = tmp_path / str(index)
        case.mkdir()
        newline = NEWLINES[index % len(NEWLINES)]
        _check_program(case, idiom.replace("\n", newline).encode(), newline, 0o644, target)


def test_a_cr_only_file_keeps_its_final_newline_when_an_import_changes(tmp_path: Path) -> None:
    data = b'import torch.cuda as tc\r\rtc.synchronize()\rBACKEND = "nccl"\r'
    _check_program(tmp_path, data, "\r", 0o644, Target.ACCELERATOR)
