"""Making user-derived text (paths, messages, source lines) inert in each output.

File names and messages come from the scanned tree: a name may hold a newline, a terminal escape
sequence or a backtick. Text and terminal output show control characters as escapes; Markdown puts
names in code spans whose fence is longer than any backtick run inside; XML drops the characters
XML 1.0 cannot carry.
"""

from __future__ import annotations

import re

# C0 and C1 controls and DEL, and the line/paragraph separators that some terminals honour.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Characters XML 1.0 forbids even as references (ElementTree would write them unescaped).
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character shown as a `\\xNN` escape (a tab, too)."""
    if text.isprintable():  # holds none of them (the common case: a warm scan's report has 30k lines)
        return text
    return _CONTROL.sub(_escape_control, text)


def code_span(text: str) -> str:
    """A Markdown code span holding `text` verbatim, whatever backticks it contains."""
    text = printable(text)
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.strip()) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def xml_text(text: str) -> str:
    """`text` without the characters XML 1.0 cannot represent (as U+FFFD)."""
    return _XML_INVALID.sub("\ufffd", text)
