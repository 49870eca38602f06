"""Which child records this run's child wrote at its normal end: a per-run secret and a seal.

The parent makes a random nonce per run and hands it to the child outside the environment: through
an inherited pipe (`fd:N`, read to its end and closed before user code runs), or under a launcher,
whose workers inherit no descriptors, through a file in a private directory (`file:PATH`) that the
parent deletes as soon as every rank has started. The child keeps it and, when the program has
ended normally, writes its record with `seal` = HMAC-SHA256(nonce, the record's canonical JSON).

A record that a program wrote itself (and then `os._exit(0)`), one left over from another run, or
one edited after the child wrote it has no valid seal. This is not a defence against a program that
goes looking for the secret in the child's memory, or a rank that reads the file in the moment
before the other ranks start; it makes an accidental or casual fake fail.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

ENV = "NEURON_MIGRATE_CHECK_NONCE"  # "fd:N" | "file:PATH": where the child reads the nonce
FIELD = "seal"


def new_nonce() -> str:
    return secrets.token_hex(16)


def canonical(data: dict[str, Any]) -> bytes:
    body = {k: v for k, v in data.items() if k != FIELD}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True).encode("utf-8")


def seal(data: dict[str, Any], nonce: str) -> str:
    return hmac.new(nonce.encode("ascii"), canonical(data), hashlib.sha256).hexdigest()


def verify(data: dict[str, Any], nonce: str) -> bool:
    given = data.get(FIELD)
    return isinstance(given, str) and hmac.compare_digest(given, seal(data, nonce))


def read_nonce(*, sole_reader: bool) -> str | None:
    """The child's side: take the nonce from where $NEURON_MIGRATE_CHECK_NONCE says and forget the
    way to it (the variable goes, the pipe is closed; the file too when no other rank reads it)."""
    where = os.environ.pop(ENV, "")
    kind, _, value = where.partition(":")
    try:
        if kind == "fd" and value.isdigit():
            fd = int(value)
            chunks = []
            while chunk := os.read(fd, 256):
                chunks.append(chunk)
            os.close(fd)
            text = b"".join(chunks).decode("ascii")
        elif kind == "file" and value:
            text = Path(value).read_text(encoding="ascii")
            if sole_reader:
                Path(value).unlink(missing_ok=True)
        else:
            return None
    except (OSError, UnicodeDecodeError):
        return None
    text = text.strip()
    return text if len(text) == 32 and all(c in "0123456789abcdef" for c in text) else None
