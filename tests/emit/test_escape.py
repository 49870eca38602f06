"""`emit.escape.printable`: control characters shown as escapes, everything else untouched."""

from __future__ import annotations

import sys

from neuron_migrate.emit import escape


def test_control_characters_become_escapes() -> None:
    assert escape.printable("a\tb\x1b[31m\u2028c\x7fé") == "a\\x09b\\x1b[31m\\u2028c\\x7fé"


def test_text_python_calls_printable_holds_nothing_to_escape() -> None:
    # `printable` returns such text as it is without searching it: that is exact only if no
    # character Python calls printable is one the escape applies to.
    shown = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isprintable())
    assert escape._CONTROL.search(shown) is None
