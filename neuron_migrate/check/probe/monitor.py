"""The pass tracker's events from `sys.monitoring` (Python 3.12 and newer).

`sys.settrace` slows every Python frame of the thread, library code included (a pure-Python loop
~1.5-3x, calls ~5x on 3.11-3.13), although only user frames are traced. With `sys.monitoring`,
PY_START is disabled for each library code object at its first call, and LINE / PY_RETURN /
PY_YIELD are enabled only on user code objects, so torch, the emulator and the standard library
run at full speed. The events are fed to the same `passes.PassTracker` logic as settrace's
("call", "line", "return"), so both count the same passes.

Monitoring is process-wide, not per thread: events from other threads are ignored (never
disabled, which would disable them for the main thread too). It also leaves `sys.settrace` free,
so coverage and debuggers keep working beside it.
"""

from __future__ import annotations

import sys
import threading
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neuron_migrate.check.probe.passes import PassTracker, _FrameTracer

CALL_IMPL: CodeType | None = None  # torch.nn.Module._call_impl's code, set by check.passes

NAME = "neuron-migrate check"


def free_tool() -> int | None:
    """A `sys.monitoring` tool id nobody uses, or None (older Python, or all taken)."""
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:
        return None
    for tool in (monitoring.PROFILER_ID, 3, 4):
        if monitoring.get_tool(tool) is None:
            return tool
    return None


class Monitor:
    """Delivers a tracker's events while started; `stop()` gives the tool id back."""

    def __init__(self, tracker: PassTracker, tool: int) -> None:
        self.tracker, self.tool = tracker, tool
        self.thread = threading.get_ident()
        self.instrumented: set[CodeType] = set()

    def start(self) -> None:
        mon = sys.monitoring
        events = mon.events
        mon.use_tool_id(self.tool, NAME)
        for event, callback in ((events.PY_START, self._start), (events.PY_RESUME, self._start),
                                (events.PY_THROW, self._throw), (events.LINE, self._line),
                                (events.PY_RETURN, self._return), (events.PY_YIELD, self._return),
                                (events.PY_UNWIND, self._return)):
            mon.register_callback(self.tool, event, callback)
        mon.set_events(self.tool, events.PY_START | events.PY_RESUME | events.PY_THROW | events.PY_UNWIND)
        mon.restart_events()  # a previous tracker's DISABLEs (the pytest plugin starts one per test)

    def stop(self) -> None:
        mon = sys.monitoring
        mon.set_events(self.tool, 0)
        for code in self.instrumented:
            mon.set_local_events(self.tool, code, 0)
        self.instrumented.clear()
        mon.free_tool_id(self.tool)  # also unregisters the callbacks

    # -- callbacks ------------------------------------------------------------------------------
    def _start(self, code: CodeType, offset: int) -> Any:
        if threading.get_ident() != self.thread:
            return None
        t = self.tracker
        if code is CALL_IMPL:  # a module call: followed to its return (PassTracker.module_enter)
            if code not in self.instrumented:
                self.instrumented.add(code)
                sys.monitoring.set_local_events(self.tool, code, sys.monitoring.events.PY_RETURN)
            t.module_enter(sys._getframe(1))
            return None
        if not t.is_user(code):
            return sys.monitoring.DISABLE
        if code not in self.instrumented:
            self.instrumented.add(code)
            events = sys.monitoring.events
            sys.monitoring.set_local_events(self.tool, code, events.LINE | events.PY_RETURN | events.PY_YIELD)
        t.on_call(sys._getframe(1), "call", None)
        return None

    def _throw(self, code: CodeType, offset: int, exception: BaseException) -> None:
        self._start(code, offset)  # a generator resumed by throw(); not a local event: no DISABLE

    def _line(self, code: CodeType, line: int) -> None:
        if threading.get_ident() != self.thread:
            return
        frame = sys._getframe(1)
        tracer = self._tracer_of(frame)
        if tracer is not None:
            tracer(frame, "line", None)

    def _return(self, code: CodeType, offset: int, value: Any) -> None:
        if threading.get_ident() != self.thread:
            return
        if code is CALL_IMPL:
            self.tracker.module_exit(sys._getframe(1))
            return
        cur = self.tracker.current
        if cur is None or cur.frame.f_code is not code:  # PY_UNWIND also comes from library frames
            return
        frame = sys._getframe(1)
        if cur.frame is frame:
            cur(frame, "return", None)

    def _tracer_of(self, frame: FrameType) -> _FrameTracer | None:
        """The tracer of `frame`: the current one, or one further out when returns were missed
        (the tracker then resumes there)."""
        cur = self.tracker.current
        while cur is not None and cur.frame is not frame:
            cur = cur.parent
        if cur is not None:
            self.tracker.current = cur
        return cur
