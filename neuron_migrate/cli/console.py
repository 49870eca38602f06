"""The CLI's one console policy: when output gets colour (https://no-color.org, FORCE_COLOR) and
when stderr shows progress bars (a terminal, a long run)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import IO, Any, Self


def colour(stream: IO[Any]) -> bool:
    """Colour on `stream`: never with NO_COLOR set, always with FORCE_COLOR, else on a terminal."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


PROGRESS_MIN_FILES = 200  # below this a run is quick: no progress bar


class ProgressBars:
    """Rich progress bars on stderr, one per stage ("scanning", "fixing"), with a file count.

    `stage(label)` is the callback an engine calls with (done, total); a bar appears only when the
    stream is a terminal and the stage has at least PROGRESS_MIN_FILES files, so pipes, CI logs
    and small runs see nothing."""

    def __init__(self, enabled: bool, stream: IO[Any] | None = None) -> None:
        import sys

        self._stream = stream if stream is not None else sys.stderr
        isatty = getattr(self._stream, "isatty", None)
        self._enabled = enabled and callable(isatty) and bool(isatty())
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}

    def stage(self, label: str) -> Callable[[int, int], None] | None:
        if not self._enabled:
            return None

        def update(done: int, total: int) -> None:
            if label not in self._tasks:
                if total < PROGRESS_MIN_FILES:
                    return
                self._tasks[label] = self._started().add_task(label, total=total)
            self._bar.update(self._tasks[label], completed=done, total=total)

        return update

    def _started(self) -> Any:
        if self._bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("files"), TimeRemainingColumn(),
                                 console=Console(file=self._stream, force_terminal=True), transient=True)
            self._bar.start()
        return self._bar

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
