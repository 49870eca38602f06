"""Bytes on disk -> the text the analyser sees, or the NM0xx diagnosis of why there is none.

Decoding follows Python's own rules (PEP 263 / PEP 3120): a UTF-8 BOM wins, else a coding cookie on
line 1 or 2, else UTF-8. Newlines are normalised to `\\n`; `\\r\\n` and lone `\\r` are newlines to
Python's tokenizer as well, so line numbers and character columns are those of the file on disk.
"""

from __future__ import annotations

import codecs
import errno
import re

from neuron_migrate.scan.diagnostics import TOO_LARGE, UNDECODABLE, UNREADABLE, Diagnosis

DEFAULT_MAX_FILE_SIZE = 5 * 1024 * 1024

# PEP 263: the cookie must be in a comment on the first or second line.
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_BLANK_OR_COMMENT = re.compile(rb"^[ \t\f]*(?:[#\r\n]|$)")


def read_bytes(path: str, size: int, max_size: int = DEFAULT_MAX_FILE_SIZE) -> bytes:
    """Read a file whose `stat` size is `size`; refuse files over `max_size` without reading them."""
    if size > max_size:
        raise Diagnosis(TOO_LARGE, f"{_mb(size)} exceeds the {_mb(max_size)} limit")
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_size + 1)
    except PermissionError:
        raise Diagnosis(UNREADABLE, "permission denied") from None
    except OSError as exc:
        reason = "symlink loop" if exc.errno == errno.ELOOP else (exc.strerror or type(exc).__name__)
        raise Diagnosis(UNREADABLE, reason.lower()) from None
    if len(data) > max_size:  # grew since it was listed
        raise Diagnosis(TOO_LARGE, f"more than the {_mb(max_size)} limit")
    return data


def decode_source(data: bytes, *, cookie: bool = True) -> str:
    """Decode Python source (or, with `cookie=False`, notebook JSON, which is always UTF-8)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):  # UTF-32 BOMs start alike
        raise Diagnosis(UNDECODABLE, "UTF-16/32 text (source must be UTF-8 or declare an "
                                     "ASCII-compatible encoding)")
    nul = data.find(b"\0")
    if nul >= 0:
        line, col = _position(data, nul)
        raise Diagnosis(UNDECODABLE, "NUL byte (binary content?)", line, col, _line_text(data, line))
    encoding = "utf-8"
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    elif cookie and b"coding" in data[:400]:
        encoding = _cookie_encoding(data)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line, col = _position(data, exc.start)
        raise Diagnosis(UNDECODABLE, f"byte 0x{data[exc.start]:02x} is not valid {encoding}",
                        line, col, _line_text(data, line)) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _cookie_encoding(data: bytes) -> str:
    lines = data.split(b"\n", 2)
    for index, line in enumerate(lines[:2]):
        match = _COOKIE.match(line)
        if match:
            name = match.group(1).decode("ascii")
            try:
                return codecs.lookup(name).name
            except LookupError:
                raise Diagnosis(UNDECODABLE, f"unknown encoding {name!r} in the coding cookie",
                                index + 1, 0, line.decode("ascii", "replace").rstrip("\r")) from None
        if not _BLANK_OR_COMMENT.match(line):  # the cookie may follow only a blank or comment line
            break
    return "utf-8"


def _position(data: bytes, offset: int) -> tuple[int, int]:
    line_start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - line_start


def _line_text(data: bytes, line: int) -> str:
    lines = data.split(b"\n")
    raw = lines[line - 1] if 0 < line <= len(lines) else b""
    return raw.decode("utf-8", "replace").replace("\0", "\\0").rstrip("\r")


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"
