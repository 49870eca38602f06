"""Read the per-process records of one check run and merge ranks.

A run directory holds the backend's records (`neuron-emu-<pid>-rank<R>.json`, schema in
`neuron_emu.record`) and the child's (`neuron-check-<pid>-rank<R>.json`, schema in child.py). Under
torchrun there is one of each per rank (plus any DataLoader worker that used the device); they are
merged here so each op, call site and copy is reported once with the ranks that saw it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuron_migrate.check.run_record import Dynamo, EmuException, EmuRecord, Mismatch, PreInit, Site
from neuron_migrate.errors import NeuronMigrateError

EMU_PREFIX = "neuron-emu-"
CHILD_PREFIX = "neuron-check-"
SUPPORTED_EMU_SCHEMA = 1
FAULT_PREFIX = "fault-"  # fault-<pid>.txt: faulthandler's traceback of a fatal signal
MAX_FAULT_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class Invalid:
    """A record left out of the report (NM916): the file and why."""

    file: str
    reason: str
    forged: bool = False  # well-formed, but not sealed by this run's child (check.probe.seal)


@dataclass(frozen=True, slots=True)
class Records:
    emu: tuple[EmuRecord, ...]  # backend records, ordered by (rank, pid)
    child: tuple[dict[str, Any], ...]  # child records, same order
    problems: tuple[str, ...] = ()  # unreadable files, named in the report
    invalid: tuple[Invalid, ...] = ()  # malformed or unsealed records, left out
    started: tuple[int, ...] = ()  # pids whose user code started (`started-<pid>` markers)
    faults: dict[int, str] = field(default_factory=dict)  # pid -> faulthandler's dump of a fatal signal


def _rank_key(rank: Any, pid: Any) -> tuple[int, int]:
    return (rank if isinstance(rank, int) else 1 << 30, pid if isinstance(pid, int) else 0)


MAX_RECORD_BYTES = 256 << 20  # larger than any real record; a bigger file is not read


def _pid_suffix(name: str, prefix: str) -> int | None:
    rest = name[len(prefix):].split(".", 1)[0]
    return int(rest) if rest.isdigit() else None


def load_dir(directory: Path, nonce: str | None = None) -> Records:
    """The records in `directory`, each validated against its schema (check.record_schema); with
    `nonce` (a run's, check.probe.seal), a child record must be sealed with it or be a checkpoint
    (`partial`) of a process that did not end normally."""
    from neuron_migrate.check import record_schema
    from neuron_migrate.check.probe import seal

    if not directory.is_dir():
        raise NeuronMigrateError(f"{directory}: no such records directory")
    emu: list[EmuRecord] = []
    child: list[dict[str, Any]] = []
    problems: list[str] = []
    invalid: list[Invalid] = []
    started: list[int] = []
    faults: dict[int, str] = {}
    for path in sorted(directory.iterdir()):
        name = path.name
        if name.startswith("started-") and (pid := _pid_suffix(name, "started-")) is not None:
            started.append(pid)
            continue
        if name.startswith(FAULT_PREFIX) and (pid := _pid_suffix(name, FAULT_PREFIX)) is not None:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")[:MAX_FAULT_CHARS]
            except OSError:
                continue
            if text.strip():
                faults[pid] = text
            continue
        if not name.endswith(".json") or not name.startswith((EMU_PREFIX, CHILD_PREFIX)):
            continue
        kind = "emu" if name.startswith(EMU_PREFIX) else "child"
        try:
            if not path.is_file():
                raise OSError("not a regular file")
            if path.stat().st_size > MAX_RECORD_BYTES:
                raise OSError(f"larger than {MAX_RECORD_BYTES >> 20} MiB")
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
            invalid.append(Invalid(name, f"unreadable record ({e})"))
            continue
        reason = record_schema.problem(kind, data)
        if reason is not None:
            invalid.append(Invalid(name, reason))
        elif kind == "emu":
            emu.append(EmuRecord.from_dict(data))
        elif nonce is not None and not data.get("partial") and not seal.verify(data, nonce):
            invalid.append(Invalid(name, "not sealed by this run's check (written by the program, left from "
                                         "another run, or changed after the run)", forged=True))
        else:
            child.append(data)
    problems.extend(f"{i.file}: {i.reason}" for i in invalid)
    emu.sort(key=lambda r: _rank_key(r.rank, r.pid))
    child.sort(key=lambda r: _rank_key(r.get("rank"), r.get("pid")))
    return Records(tuple(emu), tuple(child), tuple(problems), tuple(invalid), tuple(sorted(started)), faults)


def rank_of(rec: dict[str, Any]) -> int | None:
    """A child record's rank."""
    rank = rec.get("rank")
    return rank if isinstance(rank, int) else None


def site_key(site: Site | None) -> tuple[str, int]:
    return (site["file"], int(site["line"])) if site else ("", 0)


def _sig_key(inputs: Any) -> str:
    return json.dumps(inputs, separators=(",", ":"))


@dataclass
class Op:
    name: str
    kind: str
    count: int = 0
    fwd: int = 0
    bwd: int = 0
    signatures: dict[str, tuple[Any, int]] = field(default_factory=dict)  # key -> (inputs, count)
    first_site: dict[str, Any] | None = None
    ranks: set[int] = field(default_factory=set)


@dataclass
class CompileSite:
    site: dict[str, Any]
    op: str
    phase: str
    signatures: dict[str, Any] = field(default_factory=dict)  # key -> inputs, first seen first
    ranks: set[int] = field(default_factory=set)
    # key -> (the pass of this site the signature compiled in, its slot) (check.passes; the first
    # rank's); absent for signatures no child record stamped
    passes: dict[str, tuple[int, int]] = field(default_factory=dict)
    # key -> Repeat, where the child record says how the line and its frame ran again
    repeats: dict[str, Repeat] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Repeat:
    """How the compile's line and frame ran (check.passes): the first pass of the line's run it
    was in and of the line's last run; the frame's call it was in and the calls in all."""
    run: int
    last_run: int
    call: int
    frame_calls: int
    in_module: bool
    call_first: int  # the line's first pass in that call
    line_last_call: int  # the last call of the frame that ran the line


@dataclass
class Merged:
    ops: dict[str, Op]
    compile_sites: dict[tuple[str, int, str], CompileSite]
    compiles: int
    # {site, count, bytes, ranks, processes, distinct_sources}: distinct_sources sums each process's
    # count of distinct contents copied (hashes are per process); None if a record predates the key
    h2d: dict[tuple[str, int], dict[str, Any]]
    downcasts: dict[tuple[str, str], dict[str, Any]]  # (op, dtype) -> {to, count}
    pre_init: list[tuple[int | None, PreInit]]
    dynamo: list[tuple[int | None, Dynamo]]
    exceptions: list[tuple[int | None, EmuException]]  # the backend's, for processes without a child record
    # pid -> the last device mismatch the backend raised in that process (caught or not)
    mismatches: dict[int | None, Mismatch] = field(default_factory=dict)
    dynamo_pids: list[int | None] = field(default_factory=list)  # the process of each `dynamo` entry


def merge(records: Records) -> Merged:
    m = Merged({}, {}, 0, {}, {}, [], [], [])
    for rec in records.emu:
        rank = rec.rank
        for o in rec.ops:
            op = m.ops.get(o.name)
            if op is None:
                op = m.ops[o.name] = Op(o.name, o.kind)
            op.count += o.count
            op.fwd += o.fwd
            op.bwd += o.bwd
            for inputs, count in o.signatures:
                key = _sig_key(inputs)
                prev = op.signatures.get(key)
                op.signatures[key] = (inputs, (prev[1] if prev else 0) + count)
            op.first_site = op.first_site or o.first_site
            if rank is not None:
                op.ranks.add(rank)
        m.compiles += rec.compiles
        for s in rec.compile_sites:
            at = (*site_key(s.site), s.op)
            cs = m.compile_sites.get(at)
            if cs is None:
                cs = m.compile_sites[at] = CompileSite(s.site, s.op, s.phase)
            for sig in s.signatures:
                cs.signatures.setdefault(_sig_key(sig), sig)
            if rank is not None:
                cs.ranks.add(rank)
        for h in rec.host_to_device:
            entry = m.h2d.setdefault(site_key(h.site), {"site": h.site, "count": 0, "bytes": 0, "ranks": set(),
                                                        "processes": 0, "distinct_sources": 0})
            entry["count"] += h.count
            entry["bytes"] += h.bytes
            entry["processes"] += 1
            entry["distinct_sources"] = (None if h.distinct_sources is None or entry["distinct_sources"] is None
                                         else entry["distinct_sources"] + h.distinct_sources)
            if rank is not None:
                entry["ranks"].add(rank)
        for d in rec.downcasts:
            dc = m.downcasts.setdefault((d.op, d.dtype), {"to": d.to, "count": 0})
            dc["count"] += d.count
        if rec.pre_init is not None:
            m.pre_init.append((rank, rec.pre_init))
        if rec.dynamo is not None:
            m.dynamo.append((rank, rec.dynamo))
            m.dynamo_pids.append(rec.pid)
        if rec.exception is not None:
            m.exceptions.append((rank, rec.exception))
        if rec.device_mismatch is not None:
            m.mismatches[rec.pid] = rec.device_mismatch
    for child in records.child:
        for entry in child.get("compile_passes", ()):
            cs = m.compile_sites.get((*site_key(entry["site"]), entry["op"]))
            if cs is None:
                continue
            sigs = entry.get("signatures", ())
            stamps = zip(sigs, entry.get("passes", ()), entry.get("slots", ()), strict=False)
            extra = [entry.get(k) for k in ("runs", "last_runs", "calls", "frame_calls", "in_module",
                                            "call_first_passes", "line_last_calls")]
            repeats = (list(zip(*extra, strict=False)) if all(isinstance(x, list) and len(x) == len(sigs)
                                                             for x in extra) else [])
            for i, (sig, n, slot) in enumerate(stamps):
                key = _sig_key(sig)
                if int(n) > 0 and key in cs.signatures and key not in cs.passes:
                    cs.passes[key] = (int(n), int(slot))
                    if repeats:
                        r = repeats[i]
                        cs.repeats[key] = Repeat(int(r[0]), int(r[1]), int(r[2]), int(r[3]), bool(r[4]),
                                                 int(r[5]), int(r[6]))
    return m
