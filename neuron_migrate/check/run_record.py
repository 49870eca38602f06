"""The per-process records of a check run as typed values: the emulator's (`neuron-emu-<pid>-rank<R>.json`,
`EmuRecord`) and the child's (`neuron-check-<pid>-rank<R>.json`, `ChildRecord`).

Each is built once, by `from_dict`, from a record that check.record_schema validated: every key
the schema leaves optional has its default here, so a record that validates always builds (counts
become ints: JSON Schema's "integer" admits 2.0). The formats are documented in `neuron_emu.record` and
`neuron_migrate.check.probe.child`; keys the schema does not name are not read.

Sites and op signatures stay the JSON values they are written as (`Site`, `Inputs`): findings
carry them in their details as written. So do the objects whose every key goes into a finding's
details or the summary (the `written` fields: NM907, NM910, NM911, NM912, the exit statuses).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Site = dict[str, Any]  # {"file": str, "line": int, "function"?: str, "autograd_node"?: str | None}
Inputs = list[Any]  # an op's input signature: [[shape], dtype] | [Inputs...] | None per input


@dataclass(frozen=True, slots=True)
class OpEntry:
    name: str  # "aten::add.Tensor"
    kind: str  # device | fallback | host_sync
    count: int
    fwd: int
    bwd: int
    signatures: tuple[tuple[Inputs, int], ...]  # (inputs, calls)
    first_site: Site | None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> OpEntry:
        phases = d.get("phases", {})
        return cls(d["name"], d["kind"], int(d["count"]), int(phases.get("fwd", 0)), int(phases.get("bwd", 0)),
                   tuple((s["inputs"], int(s["count"])) for s in d.get("signatures", ())), d.get("first_site"))


@dataclass(frozen=True, slots=True)
class CompileEntry:
    """The eager compiles of one op at one call site."""

    site: Site
    op: str
    phase: str  # fwd | bwd
    signatures: tuple[Inputs, ...]  # compile order

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompileEntry:
        return cls(d["site"], d["op"], d.get("phase", "fwd"), tuple(d.get("signatures", ())))


@dataclass(frozen=True, slots=True)
class HostToDevice:
    site: Site
    count: int
    bytes: int
    distinct_sources: int | None  # distinct contents copied (None: a record without the key)


@dataclass(frozen=True, slots=True)
class Downcast:
    op: str
    dtype: str  # the 64-bit dtype asked for
    to: str  # the one the device computed in
    count: int


@dataclass(frozen=True, slots=True)
class PreInit:
    """Device allocations before init_process_group."""

    count: int
    bytes: int
    first_site: Site | None
    process_group_initialized: bool
    written: dict[str, Any]  # the object as written (a finding's details)


@dataclass(frozen=True, slots=True)
class GraphBreak:
    reason: str
    site: Site | None
    count: int


@dataclass(frozen=True, slots=True)
class DynamoRecompile:
    """A recompile (or, with `reason` None possible, a recompile-limit hit) Dynamo logged."""

    reason: str | None
    site: Site | None
    function: str | None
    compiled_site: Site | None = None  # the site Dynamo named, when `site` is the user line instead
    moved: bool = False  # `site` was moved to the user's line (check.analyze)


@dataclass(frozen=True, slots=True)
class Dynamo:
    graphs: int
    graph_breaks: tuple[GraphBreak, ...]
    recompiles: tuple[DynamoRecompile, ...]
    recompile_limit: tuple[DynamoRecompile, ...]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Dynamo:
        return cls(
            int(d.get("graphs", 0)),
            tuple(GraphBreak(str(b.get("reason", "")), b.get("site"), int(b.get("count", 1)))
                  for b in d.get("graph_breaks", ())),
            tuple(DynamoRecompile(r.get("reason", ""), r.get("site"), r.get("function"))
                  for r in d.get("recompiles", ())),
            tuple(DynamoRecompile(r.get("reason"), r.get("site"), r.get("function"))
                  for r in d.get("recompile_limit", ())),
        )


@dataclass(frozen=True, slots=True)
class Mismatch:
    """The last device mismatch the backend raised in the process (caught or not)."""

    message: str
    site: Site | None
    op: str | None
    argument: str | None
    argument_device: str | None
    device: str | None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Mismatch:
        return cls(d["message"], d.get("site"), d.get("op"), d.get("argument"), d.get("argument_device"),
                   d.get("device"))


@dataclass(frozen=True, slots=True)
class EmuException:
    """The exception that ended the process, as the backend saw it."""

    type: str
    message: str
    site: Site | None
    argument_device: str | None  # set when it is the backend's own device mismatch
    written: dict[str, Any]  # the object as written (a finding's details)


@dataclass(frozen=True, slots=True)
class EmuRecord:
    pid: int | None
    rank: int | None
    ops: tuple[OpEntry, ...]
    compiles: int
    compile_sites: tuple[CompileEntry, ...]
    host_to_device: tuple[HostToDevice, ...]
    downcasts: tuple[Downcast, ...]
    pre_init: PreInit | None  # None, or an empty object: nothing to report
    dynamo: Dynamo | None
    device_mismatch: Mismatch | None
    exception: EmuException | None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EmuRecord:
        """The record `d`, valid against check.record_schema.EMU."""
        process = d.get("process", {})
        compiles = d.get("compiles", {})
        pre, dyn, mm, exc = (d.get(k) for k in ("pre_init_allocations", "dynamo", "device_mismatch", "exception"))
        return cls(
            pid=process.get("pid"),
            rank=process.get("rank"),
            ops=tuple(OpEntry.from_dict(o) for o in d.get("ops", ())),
            compiles=int(compiles.get("count", 0)),
            compile_sites=tuple(CompileEntry.from_dict(s) for s in compiles.get("sites", ())),
            host_to_device=tuple(HostToDevice(h["site"], int(h["count"]), int(h["bytes"]), _int_or_none(h))
                                 for h in d.get("host_to_device", ())),
            downcasts=tuple(Downcast(c["op"], c["dtype"], c["to"], int(c["count"])) for c in d.get("downcasts", ())),
            pre_init=(PreInit(pre.get("count", 0), pre.get("bytes", 0), pre.get("first_site"),
                              pre.get("process_group_initialized", False), pre) if pre else None),
            dynamo=Dynamo.from_dict(dyn) if dyn else None,
            device_mismatch=Mismatch.from_dict(mm) if mm else None,
            exception=(EmuException(exc["type"], exc["message"], exc.get("site"), exc.get("argument_device"), exc)
                       if exc else None),
        )


@dataclass(frozen=True, slots=True)
class ChildException:
    """The program's uncaught exception, as the child saw it."""

    type: str
    message: str
    frames: tuple[Site, ...]  # user frames, innermost last
    mismatch: dict[str, Any] | None  # the device-mismatch hint (check.probe.hints), as written
    written: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Exit:
    status: str  # ok | exception | exit | terminated | running
    code: int
    written: dict[str, Any]  # the summary's exit entry


@dataclass(frozen=True, slots=True)
class CompilePasses:
    """The passes (check.passes) that the compiles of one op at one site ran in: per signature."""

    site: Site
    op: str
    signatures: tuple[Inputs, ...]
    passes: tuple[int, ...]
    slots: tuple[int, ...]
    # how the line and frame ran again (check.records.Repeat), each per signature; None if absent
    runs: tuple[int, ...] | None
    last_runs: tuple[int, ...] | None
    calls: tuple[int, ...] | None
    frame_calls: tuple[int, ...] | None
    in_module: tuple[bool, ...] | None
    call_first_passes: tuple[int, ...] | None
    line_last_calls: tuple[int, ...] | None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompilePasses:
        def ints(key: str) -> tuple[int, ...] | None:
            return tuple(int(x) for x in d[key]) if key in d else None

        return cls(d["site"], d["op"], tuple(d.get("signatures", ())), ints("passes") or (), ints("slots") or (),
                   ints("runs"), ints("last_runs"), ints("calls"), ints("frame_calls"),
                   tuple(bool(x) for x in d["in_module"]) if "in_module" in d else None,
                   ints("call_first_passes"), ints("line_last_calls"))


@dataclass(frozen=True, slots=True)
class HostRead:
    site: Site
    count: int
    kinds: dict[str, int]  # item, float, tolist, ... -> reads


@dataclass(frozen=True, slots=True)
class Copy:
    """Host-to-device copies at one line, as the child saw their passes."""

    site: Site
    count: int
    repeated: int  # copies of content this line copied in an earlier pass


@dataclass(frozen=True, slots=True)
class CpuParam:
    """A parameter or buffer left on the CPU (NM907)."""

    symbol: str
    site: Site
    calls: int
    written: dict[str, Any]  # symbol, kind, shape, dtype, site, calls: the finding's details


@dataclass(frozen=True, slots=True)
class DeviceUse:
    neuron_calls: int  # the user's module calls on the device
    cpu_calls: int  # ... and on the CPU
    first_cpu_call: Site | None  # with "module": the first module that ran on the CPU
    library_devices: dict[str, str]  # library -> the device it chose (accelerate: "cpu")


Read = tuple[str, int, str, list[Any]]  # a kept value read: file, line, kind, numbers


@dataclass(frozen=True, slots=True)
class ChildRecord:
    pid: int | None
    rank: int | None
    mode: str | None  # path | module | pytest
    target_file: str | None
    partial: bool  # a checkpoint: the process had not ended when it was written
    last_site: Site | None  # the user line running at the checkpoint
    start_error: tuple[str, str] | None  # (type, message): the program could not start
    wall_s: float
    exit: Exit | None
    exception: ChildException | None
    terminated_frames: tuple[Site, ...] | None  # where a timeout stopped it (None: not terminated)
    cpu_params: tuple[CpuParam, ...]
    module_transfers: tuple[tuple[Site, int], ...]  # (site, calls)
    compile_passes: tuple[CompilePasses, ...]
    host_reads: tuple[HostRead, ...] | None  # None: a record without per-line reads
    copies: tuple[Copy, ...]
    values: tuple[Read, ...] | None  # None: no values recorded (check.parity)
    pytest_allowed: dict[str, int]  # op -> calls in tests whose marker allows it
    pytest_failed: tuple[str, ...]
    dynamo_recompiles: tuple[Site | None, ...]  # the user line running at each Dynamo recompile
    dynamo_recompile_limit: tuple[Site | None, ...]
    device_use: DeviceUse

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ChildRecord:
        """The record `d`, valid against check.record_schema.CHILD."""
        start, exit_, exc, term = (d.get(k) for k in ("start_error", "exit", "exception", "terminated"))
        values = d.get("values")
        pytest = d.get("pytest") or {}
        dyn = d.get("dynamo_sites") or {}
        use = d.get("device_use") or {}
        calls = use.get("module_calls") or {}
        return cls(
            pid=d.get("pid"),
            rank=d.get("rank"),
            mode=d.get("mode"),
            target_file=d.get("target_file"),
            partial=bool(d.get("partial")),
            last_site=d.get("last_site"),
            start_error=(start["type"], start["message"]) if start else None,
            wall_s=float(d.get("wall_s", 0.0)),
            exit=Exit(exit_["status"], exit_["code"], exit_) if exit_ is not None else None,
            exception=(ChildException(exc["type"], exc["message"], tuple(exc.get("frames") or ()), exc.get("mismatch"),
                                      exc) if exc else None),
            terminated_frames=tuple(term.get("frames", ())) if term else None,
            cpu_params=tuple(CpuParam(p["symbol"], p["site"], int(p["calls"]), p) for p in d.get("cpu_params", ())),
            module_transfers=tuple((t["site"], int(t["calls"])) for t in d.get("module_transfers", ())),
            compile_passes=tuple(CompilePasses.from_dict(e) for e in d.get("compile_passes", ())),
            host_reads=(tuple(HostRead(r["site"], int(r["count"]), {k: int(n) for k, n in (r.get("kinds") or {}).items()})
                              for r in d.get("host_reads") or ()) if "host_reads" in d else None),
            copies=tuple(Copy(c["site"], int(c.get("count", 0)), int(c.get("repeated", 0)))
                         for c in d.get("copies") or ()),
            values=(tuple((str(r[0]), int(r[1]), str(r[2]), list(r[3])) for r in values.get("kept") or ()
                          if isinstance(r, list) and len(r) == 4 and isinstance(r[3], list))
                    if isinstance(values, dict) else None),
            pytest_allowed={op: int(n) for op, n in (pytest.get("allowed") or {}).items()},
            pytest_failed=tuple(pytest.get("failed") or ()),
            dynamo_recompiles=tuple(dyn.get("recompiles") or ()),
            dynamo_recompile_limit=tuple(dyn.get("recompile_limit") or ()),
            device_use=DeviceUse(int(calls.get("neuron", 0)), int(calls.get("cpu", 0)), use.get("first_cpu_call"),
                                 dict(use.get("library_devices") or {})),
        )


def _int_or_none(h: dict[str, Any]) -> int | None:
    distinct = h.get("distinct_sources")
    return None if distinct is None else int(distinct)
