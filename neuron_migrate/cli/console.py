"""The CLI's one console policy: when output gets colour (https://no-color.org, FORCE_COLOR)."""

from __future__ import annotations

import os
from typing import IO, Any


def colour(stream: IO[Any]) -> bool:
    """Colour on `stream`: never with NO_COLOR set, always with FORCE_COLOR, else on a terminal."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) else False
