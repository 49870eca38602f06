"""User frames: which stack frames belong to the user's program (not torch, the emulator, this tool,
the standard library or pytest), and tracebacks cut down to them.

Runs inside the checked process (child.py, pytest_plugin.py); imports nothing heavy itself.
"""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig
from types import CodeType, FrameType, TracebackType
from typing import Any

# Packages whose frames are never the user's; their directories are resolved lazily because torch
# and pytest may be imported after this module.
_LIBRARY_PACKAGES = ("torch", "neuron_emu", "neuron_migrate", "_pytest", "pytest", "pluggy", "runpy")
_is_lib: dict[CodeType, bool] = {}
_dirs: tuple[str, ...] = ()
_loaded = -1  # how many of _LIBRARY_PACKAGES were imported when _dirs was computed


def _library_dirs() -> tuple[str, ...]:
    global _dirs, _loaded
    loaded = sum(name in sys.modules for name in _LIBRARY_PACKAGES)
    if loaded != _loaded:
        _loaded = loaded
        found = {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
        for name in _LIBRARY_PACKAGES:
            module = sys.modules.get(name)
            path = getattr(module, "__file__", None)
            if path:
                found.add(os.path.dirname(path) if not path.endswith("runpy.py") else path)
        _dirs = tuple(os.path.normcase(os.path.realpath(d)) for d in found)
        _is_lib.clear()
    return _dirs


def is_library(code: CodeType) -> bool:
    lib = _is_lib.get(code)
    if lib is None:
        name = code.co_filename
        real = os.path.normcase(os.path.realpath(name))
        lib = name.startswith("<frozen") or any(
            real == d or real.startswith(d + os.sep) for d in _library_dirs()
        )
        _is_lib[code] = lib
    return lib


def site(code: CodeType, line: int) -> dict[str, Any]:
    """A call site in the backend record's shape (schema in `neuron_emu.record`)."""
    return {"file": code.co_filename, "line": line, "function": code.co_name, "autograd_node": None}


def user_site(frame: FrameType | None) -> dict[str, Any] | None:
    """The innermost user frame at or above `frame`."""
    while frame is not None and is_library(frame.f_code):
        frame = frame.f_back
    return site(frame.f_code, frame.f_lineno) if frame is not None else None


def user_tb_frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    """(frame, line) of every user frame of a traceback, outermost first."""
    out = []
    while tb is not None:
        if not is_library(tb.tb_frame.f_code):
            out.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return out


def stack_frames(frame: FrameType | None) -> list[tuple[FrameType, int]]:
    """(frame, line) of every user frame of a live stack, outermost first."""
    out = []
    while frame is not None:
        if not is_library(frame.f_code):
            out.append((frame, frame.f_lineno))
        frame = frame.f_back
    return out[::-1]


def describe(frames: list[tuple[FrameType, int]]) -> list[dict[str, Any]]:
    return [
        {**site(f.f_code, line), "source": linecache.getline(f.f_code.co_filename, line).strip()}
        for f, line in frames
    ]
