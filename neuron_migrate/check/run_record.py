"""The emulator's per-process record (`neuron-emu-<pid>-rank<R>.json`) as typed values.

Built once, by `EmuRecord.from_dict`, from a record that check.record_schema validated: every key
the schema leaves optional has its default here, so a record that validates always builds (counts
become ints: JSON Schema's "integer" admits 2.0). The format is documented in `neuron_emu.record`;
keys the schema does not name are not read.

Sites and op signatures stay the JSON values they are written as (`Site`, `Inputs`): findings
carry them in their details as written. So do the two objects whose every key goes into a
finding's details (`PreInit.written`, `EmuException.written`: NM911, NM912).
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


def _int_or_none(h: dict[str, Any]) -> int | None:
    distinct = h.get("distinct_sources")
    return None if distinct is None else int(distinct)
