"""Rewrite the code cells of a notebook and nothing else.

Only the JSON text of a changed cell's `source` value is replaced, in the style it was written in
(a list of lines or one string; the same whitespace between items; `\\uXXXX` escapes or raw
characters as the file already uses), so outputs, metadata, key order, indentation and every
unchanged cell keep their exact bytes. IPython lines (magics, `!shell`, `obj?`) are swapped for
placeholder comments while the cell is rewritten and validated, then put back verbatim.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from neuron_migrate.findings import Finding, Target
from neuron_migrate.rewrite.apply import ApplyResult, ImportContext, SkippedFix, apply_fixes_to_source
from neuron_migrate.rewrite.files import FileProblem
from neuron_migrate.scan.notebook import TIMED_PREFIX, blank_ipython, timed_statement

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
_PLACEHOLDER = re.compile(r"^[ \t]*(?:pass  )?# <neuron-migrate ipython (\d+)>$")


@dataclass(frozen=True, slots=True)
class CellChange:
    index: int
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class NotebookResult:
    new_text: str
    changes: tuple[CellChange, ...]
    applied: tuple[Finding, ...]
    skipped: tuple[SkippedFix, ...]


def _source_spans(text: str) -> dict[int, tuple[int, int]]:
    """Character span of each cell's `source` value in the notebook's JSON text."""
    spans: dict[int, tuple[int, int]] = {}
    for key, start, _end in _members(text, _skip_ws(text, 0)):
        if key != "cells":
            continue
        pos = _skip_ws(text, start)
        if text[pos] != "[":
            raise FileProblem("'cells' is not a list")
        index = 0
        pos = _skip_ws(text, pos + 1)
        while text[pos] != "]":
            if text[pos] == "{":
                for cell_key, v_start, v_end in _members(text, pos):
                    if cell_key == "source":
                        spans[index] = (v_start, v_end)
                _, pos = _DECODER.raw_decode(text, pos)
            else:
                _, pos = _DECODER.raw_decode(text, pos)
            index += 1
            pos = _skip_ws(text, pos)
            if text[pos] == ",":
                pos = _skip_ws(text, pos + 1)
    return spans


def _skip_ws(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def _members(text: str, pos: int) -> list[tuple[str, int, int]]:
    """(key, value start, value end) of the JSON object starting at `pos`."""
    if text[pos] != "{":
        raise FileProblem("expected a JSON object")
    members: list[tuple[str, int, int]] = []
    pos = _skip_ws(text, pos + 1)
    while text[pos] != "}":
        key, pos = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]
        pos = _skip_ws(text, pos)
        pos = _skip_ws(text, pos + 1)  # the colon
        _, end = _DECODER.raw_decode(text, pos)
        members.append((key, pos, end))
        pos = _skip_ws(text, end)
        if text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
    return members


_NON_ASCII_ESCAPE = re.compile(r"\\u(?:00[89a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|[1-9a-fA-F][0-9a-fA-F]{3})")


def _escapes_non_ascii(text: str) -> bool:
    """Whether the file writes non-ASCII text as `\\uXXXX` (json.dump's ensure_ascii=True)."""
    return _NON_ASCII_ESCAPE.search(text) is not None


def _render_source(new: str, old_json: str, old_value: object, ensure_ascii: bool) -> str:
    if isinstance(old_value, str):
        return json.dumps(new, ensure_ascii=ensure_ascii)
    items = [json.dumps(line, ensure_ascii=ensure_ascii) for line in new.splitlines(keepends=True)]
    if not items:
        return "[]"
    lead = re.match(r"\[([ \t\r\n]*)", old_json)
    trail = re.search(r"([ \t\r\n]*)\]$", old_json)
    sep = re.search(r'",([ \t\r\n]*)"', old_json)
    lead_ws = lead.group(1) if lead else ""
    trail_ws = trail.group(1) if trail else ""
    sep_ws = sep.group(1) if sep else (lead_ws or " ")
    return "[" + lead_ws + ("," + sep_ws).join(items) + trail_ws + "]"


def _mask_ipython(cell: str) -> tuple[str, list[str], list[str]]:
    """Replace IPython lines by numbered placeholder comments, but for a timing magic's line,
    which keeps its statement (`blank_ipython`); return the masked text, the lines replaced
    and the timing magics' lines, in order."""
    blanked = blank_ipython(cell).split("\n")
    lines = cell.split("\n")
    originals: list[str] = []
    timed: list[str] = []
    for i, (line, blank) in enumerate(zip(lines, blanked, strict=False)):
        if line == blank:
            continue
        if blank.lstrip().startswith(TIMED_PREFIX):
            lines[i] = blank
            timed.append(line)
            continue
        placeholder = f"# <neuron-migrate ipython {len(originals)}>"
        lines[i] = blank.replace("pass", f"pass  {placeholder}") if blank.strip() else placeholder
        originals.append(line)
    return "\n".join(lines), originals, timed


def _unmask(text: str, originals: Sequence[str], timed: Sequence[str]) -> str:
    out = []
    magics = iter(timed)  # fixes add and remove no timing magic's line: they come back in order
    for line in text.split("\n"):
        m = _PLACEHOLDER.match(line)
        if m is not None:
            line = originals[int(m.group(1))]
        elif line.lstrip().startswith(TIMED_PREFIX):
            original = next(magics, None)
            if original is not None:  # the magic and its options, then the statement as fixed
                start = timed_statement(original)
                line = original[:start] + line[start:]
        out.append(line)
    return "\n".join(out)


def _import_context(masked: dict[int, str], index: int) -> ImportContext:
    from neuron_migrate.rewrite.imports import bound_imports, names_read

    bound: set[str] = set()
    used: set[str] = set()
    for other, text in masked.items():
        if other == index:
            continue
        try:
            bound |= bound_imports(text)
            used |= names_read(text)
        except (SyntaxError, ValueError):
            continue
    return ImportContext(frozenset(bound), frozenset(used))


def rewrite_notebook(text: str, findings: Sequence[Finding], target: Target, *, unsafe: bool) -> NotebookResult:
    try:
        nb = json.loads(text)
        cells = nb["cells"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise FileProblem("not a readable notebook") from exc
    by_cell: dict[int, list[Finding]] = defaultdict(list)
    for finding in findings:
        if finding.cell is not None:
            by_cell[finding.cell].append(finding)
    sources: dict[int, tuple[str, object]] = {}
    masked: dict[int, tuple[str, list[str], list[str]]] = {}
    for i, cell in enumerate(cells):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            value = cell.get("source", "")
            joined = "".join(value) if isinstance(value, list) else value
            if isinstance(joined, str):
                sources[i] = (joined, value)
                masked[i] = _mask_ipython(joined.replace("\r\n", "\n"))

    applied: list[Finding] = []
    skipped: list[SkippedFix] = []
    changes: list[CellChange] = []
    masked_texts = {i: m[0] for i, m in masked.items()}
    for index in sorted(by_cell):
        cell_findings = by_cell[index]
        if index not in sources:
            skipped.extend(SkippedFix(f, "the cell is not a code cell any more") for f in cell_findings)
            continue
        joined, _ = sources[index]
        masked_text, originals, timed = masked[index]
        result: ApplyResult = apply_fixes_to_source(
            masked_text, cell_findings, target, unsafe=unsafe, imports=_import_context(masked_texts, index)
        )
        skipped.extend(result.skipped)
        if not result.applied:
            continue
        new = _unmask(result.new_source, originals, timed)
        if "\r\n" in joined:
            new = new.replace("\n", "\r\n")
        if new != joined:
            changes.append(CellChange(index, joined, new))
            applied.extend(result.applied)
    if not changes:
        return NotebookResult(text, (), tuple(applied), tuple(skipped))

    spans = _source_spans(text)
    ensure_ascii = _escapes_non_ascii(text)
    pieces: list[str] = []
    pos = 0
    for change in sorted(changes, key=lambda c: c.index):
        start, end = spans[change.index]
        pieces.append(text[pos:start])
        pieces.append(_render_source(change.new, text[start:end], sources[change.index][1], ensure_ascii))
        pos = end
    pieces.append(text[pos:])
    new_text = "".join(pieces)

    expected = json.loads(text)
    for change in changes:
        old_value = sources[change.index][1]
        expected["cells"][change.index]["source"] = (
            change.new if isinstance(old_value, str) else change.new.splitlines(keepends=True)
        )
    if json.loads(new_text) != expected:
        raise FileProblem("internal error: the rewritten notebook JSON does not round-trip")
    return NotebookResult(new_text, tuple(changes), tuple(applied), tuple(skipped))
