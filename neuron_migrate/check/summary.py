"""The run summary of one check (`Report.extras["check"]`), typed.

`check.analyze` builds it, `check.report` puts its `to_dict()` in the Report; the JSON keys and
their order are the fields' (emitters and the migration record read that JSON).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class OpsSummary:
    device: int  # op calls that ran on the device
    cpu_fallback: int  # op calls that fell back to the CPU
    device_share: float | None  # device / (device + cpu_fallback), 4 places; None: no op ran
    distinct_fallback_ops: list[str]
    host_compute: dict[str, int]  # op -> calls whose kernel computes on the host (rules/ops.yaml)
    host_syncs: int  # device->host value reads
    host_sync_ops: dict[str, int]  # op -> reads


@dataclass(frozen=True, slots=True)
class RunSummary:
    processes: int  # processes that wrote a backend record
    ranks: list[int]
    ops: OpsSummary
    compiles: dict[str, int]  # eager, eager_recompiles, dynamo_graphs, dynamo_graph_breaks, ...
    narrowed_64bit: dict[str, int]  # "op dtype" -> calls computed narrowed
    caught_device_mismatches: list[dict[str, Any]]  # {op, argument, argument_device, device, site}
    allowed_ops: list[str]  # fallback ops the settings allow
    wall_s: float  # the longest process's wall time
    exit: list[dict[str, Any]]  # per process: {rank, status, code[, signal]}
    problems: list[str]  # records that could not be read, and why
    values: dict[str, Any]  # user line -> values read back (check.parity.summarize)
    parity: dict[str, Any] | None = None  # the CPU-reference comparison (check --parity)
    program: str | None = None  # what ran ("train.py", "-m pkg"), set by check.report

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: `program` first, `parity` only when compared, then the other fields in order."""
        out: dict[str, Any] = {"program": self.program} if self.program is not None else {}
        for f in fields(self):
            if f.name == "program":
                continue
            value = getattr(self, f.name)
            if f.name == "parity" and value is None:
                continue
            out[f.name] = _plain(value)
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, OpsSummary):
        return {f.name: getattr(value, f.name) for f in fields(value)}
    return value
