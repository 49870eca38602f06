"""Passes through user lines: which execution of its call site each eager compile happened in.

The backend's record lists, per (call site, op), the input signatures that compiled there (its
compile cache is keyed by op + shapes + dtypes, globally). That alone cannot tell two calls of an
op with fixed, different shapes on one line (two Linear layers in `model(x)`) from one call whose
shape changes between iterations. So the checked process counts *passes*: each execution of a
user line in one *calling context* (the chain of call instructions of the user frames above it:
`rotate_half(q)` and `rotate_half(k)` are different contexts; but an nn.Module's method is keyed
by the module and the method alone, whoever calls it: two layers running the same `forward` are
different contexts, while `model(x)` in the training loop and in `evaluate()` is one, so
evaluation at another batch size or dtype recompiles) is one pass, and each new compile is
stamped with the pass its site was in. analyze calls a compile in pass 1 of its site and context
a first compile, and one in a later pass (the training loop's next step, the next token of a
generate loop) a recompile. Compiles are also stamped with a *slot*: (site, op, context, the
nn.Module it ran in or after): only a compile in a later pass than its slot's first compile is a
recompile (not a loop over layers of different widths, nor a new op such as gradient
accumulation's add_ on the second step).

Events come from `sys.monitoring` on Python 3.12+ (check.monitor: library code runs at full speed)
and from `sys.settrace` before (which slows all Python code of the thread, library frames included,
though they get no line events); compile detection is a comparison of the recorder's compile count
per user line.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

import torch.nn

from neuron_migrate.check.probe import frames, monitor, observe, reads

CALL_IMPL = monitor.CALL_IMPL = torch.nn.Module._call_impl.__code__  # every module call runs it
# Before 3.12 (PEP 709) a list, set or dict comprehension is a function of its own, called once per
# run of its line: its ops belong to the enclosing frame's pass, as they do once it is inlined.
# A generator expression stays a frame of its own on every version.
_COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"}) if sys.version_info < (3, 12) else frozenset()


def render_signature(sig: tuple[Any, ...]) -> list[Any]:
    """A backend signature tuple in the record's `Input` form (schema in `neuron_emu.record`)."""
    import torch

    def one(item: Any) -> Any:
        if item is None:
            return None
        if isinstance(item[0], torch.Size):
            return [list(item[0]), str(item[1]).removeprefix("torch.")]
        return [one(x) for x in item]

    return [one(i) for i in sig]


class PassTracker:
    """Counts passes through user lines per calling context and stamps the compiles of `recorder`
    (a `neuron_emu.Recorder`) with the pass of their site."""

    def __init__(self, recorder: Any) -> None:
        import torch

        self.recorder = recorder
        self.passes: dict[tuple[int, int], int] = {}  # (context, line) -> passes so far
        self.last_run: dict[tuple[int, int], int] = {}  # (context, line) -> the first pass of its last run
        self.calls: dict[int, int] = {}  # context -> frames run in it so far
        self.line_last_call: dict[tuple[int, int], int] = {}  # (context, line) -> the last call that ran it
        # (site, op info) -> a _Stamp per signature; a slot is (site, op, context, module)
        self.stamped: dict[tuple[Any, Any], list[_Stamp]] = {}
        # (module id, the user frame that called it, the Module._call_impl frame) of each
        # nn.Module call running now
        self.modules: list[tuple[int, _FrameTracer | None, FrameType | None]] = []
        self.module_calls = {"neuron": 0, "cpu": 0}  # user-driven module calls by where they ran
        self.first_cpu_call: dict[str, Any] | None = None
        self._slots: dict[tuple[Any, ...], int] = {}
        self._on = False
        self.current: _FrameTracer | None = None  # the innermost user frame running now
        self._contexts: dict[tuple[int, int, CodeType, int], int] = {}
        self._seen_compiles = 0
        self._user: dict[CodeType, bool] = {}
        self._module = torch.nn.Module
        self._neuron = torch.device("neuron").type
        self._tensor = torch.Tensor
        self._previous: Any = None
        self._monitor: monitor.Monitor | None = None  # events from sys.monitoring, else sys.settrace
        # the child's checkpoint (child.py): called from a line event once `tick_at` (monotonic) passed
        self.on_tick: Callable[[], None] | None = None
        self.tick_at = math.inf

    def context(self, parent: _FrameTracer | None, frame: FrameType) -> int:
        """A small id for (the caller's context, the call instruction, this code, the module whose
        method this is): two calls from one line, or of two modules, are different slots."""
        code = frame.f_code
        module = 0
        if code.co_argcount and code.co_varnames[0] == "self":
            this = frame.f_locals.get("self")
            module = id(this) if isinstance(this, self._module) else 0
        if module:  # a module's method is one computation wherever it is called from
            key: tuple[int, int, CodeType, int] = (0, -1, code, module)
        else:
            key = (parent.ctx if parent else 0, parent.frame.f_lasti if parent else -1, code, module)
        ctx = self._contexts.get(key)
        if ctx is None:
            ctx = self._contexts[key] = len(self._contexts) + 1
        return ctx

    # -- tracing -------------------------------------------------------------------------------
    @staticmethod
    def available() -> bool:
        """Whether a tracker can start without displacing another tool: `sys.monitoring` has a
        free tool id (3.12+), or no `sys.settrace` function is set (coverage, a debugger)."""
        return monitor.free_tool() is not None or sys.gettrace() is None

    def is_user(self, code: CodeType) -> bool:
        user = self._user.get(code)
        if user is None:
            user = self._user[code] = not frames.is_library(code)
        return user

    def on_call(self, frame: FrameType, event: str, arg: Any) -> Any:
        """A frame starts (the `sys.settrace` function; check.monitor calls it too): a user frame
        gets its tracer, which becomes `current`; a module call is followed to its return."""
        if frame.f_code is CALL_IMPL:
            self.module_enter(frame)
            return self._module_tracer
        if not self.is_user(frame.f_code) or frame.f_code.co_name in _COMPREHENSIONS:
            return None
        if self.recorder.compiles != self._seen_compiles:
            self.stamp()
        tracer = _FrameTracer(self, frame, self.current)
        self.current = tracer
        return tracer

    def _module_tracer(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "return":
            self.module_exit(frame)
            return None
        return self._module_tracer

    def module_enter(self, frame: FrameType) -> None:
        """An `nn.Module` call starts (its `Module._call_impl` frame): events from the frame, not
        global module hooks, which `torch.compile` warns about, guards on and traces into.

        A module that one run of a user line calls again starts a new pass of that line: a
        library loop (`model.generate()` runs the model once per token, `trainer.train()` once
        per step); `fc2(relu(fc1(x)))` calls two modules in one pass."""
        if not self._on:
            return
        module = frame.f_locals.get("self")
        if not isinstance(module, self._module):
            return
        self.stamp()
        cur = self.current
        if cur is not None and not (self.modules and self.modules[-1][1] is cur):
            run = (cur.runs, cur.line)
            if cur.module_run[0] != run:
                cur.module_run = (run, {id(module)})
            elif id(module) in cur.module_run[1]:
                key = (cur.ctx, cur.line)
                self.passes[key] = self.passes.get(key, 0) + 1
                cur.module_run = (run, {id(module)})
            else:
                cur.module_run[1].add(id(module))
        self._count_module_call(module, frame, cur)
        self.modules.append((id(module), cur, frame))

    def module_exit(self, frame: FrameType) -> None:
        if not self._on or not any(m[2] is frame for m in self.modules):
            return
        while self.modules[-1][2] is not frame:  # calls an exception unwound
            self.modules.pop()
        self.stamp()  # what compiled since the last event ran inside this module
        module, caller, _ = self.modules.pop()
        if caller is not None:
            caller.last_module = (caller.runs, caller.line, module)

    def _count_module_call(self, module: Any, frame: FrameType, cur: _FrameTracer | None) -> None:
        """Where the user's module calls ran (a run in which none ran on the device is a finding),
        and parameters left on the CPU beside device inputs (check.observe)."""
        tensor, neuron = self._tensor, self._neuron
        args = frame.f_locals.get("args") or ()
        kwargs = frame.f_locals.get("kwargs") or {}
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, tensor)]
        tensors += [t for t in (*module._parameters.values(), *module._buffers.values()) if t is not None]
        if not tensors:
            first = next(module.parameters(), None)
            if first is None:
                return
            tensors = [first]
        on_device = any(t.device.type == neuron for t in tensors)
        site = frames.site(cur.frame.f_code, cur.line) if cur is not None else None
        if on_device:
            observe.module_called(module, site)
        if cur is None or (self.modules and self.modules[-1][1] is cur):
            return  # inside a module the user called: counted with it
        self.module_calls["neuron" if on_device else "cpu"] += 1
        if not on_device and self.first_cpu_call is None and site is not None:
            self.first_cpu_call = {**site, "module": type(module).__name__}

    def start(self) -> None:
        self._on = True
        reads.TRACKER = self
        tool = monitor.free_tool()
        if tool is not None:
            self._monitor = monitor.Monitor(self, tool)
            self._monitor.start()
        else:
            self._previous = sys.gettrace()
            sys.settrace(self.on_call)
        _untrace_forked_children()

    def stop(self) -> None:
        """Stop tracing and remove the module hooks (the pytest plugin runs one tracker per test)."""
        if self._monitor is not None:
            self._monitor.stop()
            self._monitor = None
        else:
            sys.settrace(self._previous)
        self.stamp()
        self._on = False
        if reads.TRACKER is self:
            reads.TRACKER = None
        self.current, self.modules = None, []  # frames (and the tensors in them) may be freed

    # -- compiles ------------------------------------------------------------------------------
    def stamp(self) -> None:
        """Give every compile not seen yet the current pass of its site and its slot. Called before
        any user frame starts a line, calls or returns and around every module forward, so the
        compiles since the last call happened in `current` at its current line, inside the module
        on top of `modules`; a site elsewhere (a user thread) gets pass 0: unknown."""
        self._seen_compiles = self.recorder.compiles
        cur = self.current
        here = (cur.frame.f_code.co_filename, cur.line) if cur is not None else None
        for key, sigs in list(self.recorder.compile_sites.items()):
            stamped = self.stamped.setdefault(key, [])
            if len(sigs) < len(stamped):  # clear_op_tracking() emptied the lists
                del stamped[:]
            if len(sigs) == len(stamped):
                continue
            site = key[0]
            known = cur is not None and here == (site[0], site[1])
            module = self._module_of(cur)
            if known and cur is not None:
                line = (cur.ctx, cur.line)
                stamp = _Stamp(self.passes.get(line, 0), cur.run_pass.get(cur.line, 0), cur.call,
                               cur.first_pass.get(cur.line, 0), line, module != 0)
            else:
                stamp = _Stamp(0, 0, 0, 0, (0, 0), module != 0)
            slot_key = (key, stamp.line[0], module)
            slot = self._slots.get(slot_key)
            if slot is None:
                slot = self._slots[slot_key] = len(self._slots) + 1
            stamp.slot = slot
            stamped.extend([stamp] * (len(sigs) - len(stamped)))

    def _module_of(self, cur: _FrameTracer | None) -> int:
        """The module a compile belongs to: the one `cur` is calling now, else the last one it
        called in this execution of the line (`for block in blocks: x = block(x).relu()`: each
        relu follows its own block)."""
        if self.modules and self.modules[-1][1] is cur:
            return self.modules[-1][0]
        if cur is not None and cur.last_module[:2] == (cur.runs, cur.line):
            return cur.last_module[2]
        return 0

    def to_dict(self) -> list[dict[str, Any]]:
        """The child record's `compile_passes` (schema in child.py)."""
        out = []
        for (site, info), stamped in self.stamped.items():
            sigs = self.recorder.compile_sites.get((site, info), [])
            kept = stamped[: len(sigs)]
            out.append({
                "site": {"file": site[0], "line": site[1], "function": site[2], "autograd_node": site[3]},
                "op": info.name,
                "signatures": [render_signature(s) for s in sigs[: len(stamped)]],
                "passes": [s.n for s in kept],
                "slots": [s.slot for s in kept],
                "runs": [s.run for s in kept],
                "last_runs": [self.last_run.get(s.line, 0) for s in kept],
                "calls": [s.call for s in kept],
                "call_first_passes": [s.call_first for s in kept],
                "line_last_calls": [self.line_last_call.get(s.line, 0) for s in kept],
                "frame_calls": [self.calls.get(s.line[0], 0) for s in kept],
                "in_module": [s.in_module for s in kept],
            })
        return out


class _Stamp:
    """The pass of its site one compile happened in (`n`), the first pass of that run of the line
    (`run`; they differ in a library loop's later passes), which call of its frame it was in, its
    slot, and whether it ran in or right after a module call."""

    __slots__ = ("call", "call_first", "in_module", "line", "n", "run", "slot")

    def __init__(self, n: int, run: int, call: int, call_first: int, line: tuple[int, int], in_module: bool) -> None:
        self.n, self.run, self.call, self.call_first, self.line = n, run, call, call_first, line
        self.in_module = in_module
        self.slot = 0


def merge_stamps(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Several trackers' `to_dict()` (one per pytest test) as one: each run's passes and slots are
    shifted past the previous runs', so a compile in test B is never the same pass or slot as one
    in test A (each test's first pass of a slot stays a first compile)."""
    out: list[dict[str, Any]] = []
    pass_base = slot_base = 0
    for entries in runs:
        top_pass = top_slot = 0
        for entry in entries:
            shifted: dict[str, list[int]] = {k: [n + pass_base if n > 0 else 0 for n in entry[k]]
                       for k in ("passes", "runs", "last_runs", "call_first_passes") if k in entry}
            out.append({**entry, **shifted, "slots": [slot + slot_base for slot in entry["slots"]]})
            top_pass = max([top_pass, *entry["passes"]])
            top_slot = max([top_slot, *entry["slots"]])
        pass_base += top_pass
        slot_base += top_slot
    return out


_fork_hook = False


def _untrace_forked_children() -> None:
    """A forked child (a DataLoader worker) inherits the tracer: it stops tracing there. Registered
    once per process (fork hooks cannot be removed); a tracer that is not ours is left alone."""
    global _fork_hook
    if not _fork_hook:
        _fork_hook = True
        os.register_at_fork(after_in_child=_untrace)


def _untrace() -> None:
    if isinstance(getattr(sys.gettrace(), "__self__", None), PassTracker):
        sys.settrace(None)
    mon = getattr(sys, "monitoring", None)
    if mon is not None:
        for tool in range(6):
            if mon.get_tool(tool) == monitor.NAME:
                mon.set_events(tool, 0)
                mon.free_tool_id(tool)


class _FrameTracer:
    """One user frame's events. A pass of a line is one execution of it in one calling context. A
    statement spread over several lines produces events 1, 2, 1 (arguments, then the call) within
    one execution, so a line counts once per *run*: the events between two backward jumps (a loop
    coming back always jumps backward)."""

    __slots__ = ("call", "ctx", "first_pass", "frame", "last", "last_module", "line", "module_run", "parent",
                 "run_pass", "runs", "seen", "tracker")

    def __init__(self, tracker: PassTracker, frame: FrameType, parent: _FrameTracer | None) -> None:
        self.tracker, self.frame, self.parent = tracker, frame, parent
        self.ctx = tracker.context(parent, frame)
        self.call = tracker.calls[self.ctx] = tracker.calls.get(self.ctx, 0) + 1
        self.line = 0
        self.last = -1
        self.seen: set[int] = set()
        self.run_pass: dict[int, int] = {}  # line -> its pass at the start of this run
        self.first_pass: dict[int, int] = {}  # line -> its pass at its first run in this call
        self.runs = 0
        self.last_module = (-1, 0, 0)  # (run, line, module id) of the last module it called
        self.module_run: tuple[tuple[int, int], set[int]] = ((-1, 0), set())  # (run, line), modules it called

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        t = self.tracker
        if t.recorder.compiles != t._seen_compiles:
            t.stamp()
        if event == "line":
            if t.on_tick is not None and time.monotonic() >= t.tick_at:
                t.tick_at = math.inf  # set again by the checkpoint
                t.on_tick()
            if frame.f_lasti <= self.last:
                self.seen = set()
                self.run_pass = {}
                self.runs += 1
            self.last = frame.f_lasti
            self.line = line = frame.f_lineno
            if line not in self.seen:
                self.seen.add(line)
                key = (self.ctx, line)
                n = t.passes[key] = t.passes.get(key, 0) + 1
                self.run_pass[line] = t.last_run[key] = n
                if line not in self.first_pass:
                    self.first_pass[line] = n
                    t.line_last_call[key] = self.call
        elif event == "return":
            t.current = self.parent
        return self
