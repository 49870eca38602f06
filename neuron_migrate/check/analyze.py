"""Merged run records -> NM9xx findings at user source lines, plus the run summary (`Report.extras`).

Codes (texts in rules/nm9-runtime.yaml): NM901 CPU fallback of an op without a device kernel,
NM902 expected host work (`.item()` and other value reads the backend records as `host_sync`,
data-dependent shapes), NM903 eager recompiles per call site
(with the dimensions that varied and bucket advice), NM904/NM905/NM906 torch.compile graph breaks,
recompile reasons and the recompile limit, NM907 parameter or buffer left on the CPU, NM908 the same
host data copied to the device again at one call site (a new batch each step is input feeding, not a
finding), NM909 float64 work narrowed on the device, NM910 device
mismatch with a hint, NM911 device use before init_process_group, NM912 the program's exception
(or non-zero exit), NM913 timeout.

Recompiles (NM903). The eager compile cache is keyed by (op, input shapes, dtypes) for the whole
process, so a compile is a key seen for the first time anywhere; the backend records each one at
its call site (the innermost user line; backward ops at the `backward()` line). What is reported
per call site are the compiles that happen *after the site's first pass*, counted per slot:

- a *pass* is one execution of the line in one calling context (check.passes: the chain of call
  instructions of the user frames above it; for an nn.Module's method, the module instance): the
  next step of a training loop, the next token of a generate loop, or the same model run by
  `evaluate()` is a new pass; `rotate_half(q)` and `rotate_half(k)`, or two attention layers, are
  different contexts;
- a *slot* is (site, op, context, the nn.Module the op ran in or right after on that line): two
  Linear layers in one `model(x)`, four Adam parameters in one `step()`, the backward of several
  layers at one `backward()` line, or a loop over blocks of different widths, are several calls
  with fixed shapes, all compiled in the slot's first pass: no recompile;
- a *recompile* is a compile in a later pass than its slot's first compile. `distinct_signatures`
  is 1 + the number of passes that recompiled (a generate loop over lengths 8..19 gives 12), and
  `varied` names only the dimensions where a recompile differs from the closest signature its
  slot compiled before; bucket and pad advice uses those values. `dtypes` names the inputs whose
  dtype changed (bf16 training under autocast, float32 evaluation outside it).

Records without passes (a backend record alone, a pytest test run under another tracer) fall back to
`advice.split_variation`, which guesses slots from the shapes (`details.method` says which).

The `dynamo` part of a backend record is read as (keys optional)::

    {"graphs": int, "compiles": int,
     "graph_breaks": [{"reason": str, "site": Site|null, "count": int}],
     "recompiles": [{"reason": str, "site": Site|null, "function": str}],
     "recompile_limit": [{"function": str, "site": Site|null, "reason": str}]}
"""

from __future__ import annotations

import dataclasses
import functools
import linecache
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuron_migrate.check import advice, notebook
from neuron_migrate.check import parity as check_parity
from neuron_migrate.check.records import (
    CompileSite,
    Merged,
    Op,
    Records,
    merge,
    site_key,
)
from neuron_migrate.check.run_record import DynamoRecompile, Mismatch
from neuron_migrate.check.summary import OpsSummary, RunSummary
from neuron_migrate.errors import RulePackError
from neuron_migrate.findings import Finding, Span
from neuron_migrate.ruleset.model import RulePack
from neuron_migrate.ruleset.ops import OpTable, load_ops

ITEM_OP = "aten::_local_scalar_dense"
HOST_SYNC = "host_sync"  # the record's op kind for a device->host value read; neither device nor fallback
NARROWED_FLOAT = "float64"
MAX_SYMBOL = 80
MAX_MESSAGE = 300


@functools.cache
def _op_table() -> OpTable | None:
    """rules/ops.yaml (None when it cannot be read: then no op counts as host work by the table)."""
    try:
        return load_ops()
    except RulePackError:
        return None


def is_host_work(op: str) -> bool:
    """An op whose output shape depends on data or that reads a value back, or a native kernel
    that syncs the host (both from rules/ops.yaml): host work by nature, kept apart from missing
    kernels even when it also falls back."""
    table = _op_table()
    return table is not None and (table.is_data_dependent(op) or op in table.host_sync_ops)


@dataclass
class _Ctx:
    pack: RulePack
    root: Path
    fallback_file: str | None  # where findings without a user site go (the program's file)
    findings: list[Finding] = field(default_factory=list)

    def add(self, code: str, site: dict[str, Any] | None, symbol: str, details: dict[str, Any],
            note: str = "") -> None:
        rule = self.pack.get(code)
        if rule is None:  # an older pack without this code: nothing to attach the finding to
            return
        if _ours(site):  # this tool's own frames are never the user's line
            site = None
        path, line, source, cell = self.locate(site)
        message = rule.render_message(symbol) + (f": {note}" if note else "")
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 1] + "…"
        indent = len(source) - len(source.lstrip())
        self.findings.append(Finding(
            code=rule.code, severity=rule.severity, fix_class=rule.fix.fix_class, category=rule.category,
            path=path, span=Span(line, indent, line, max(len(source), indent)), message=message,
            source_line=source, symbol=symbol, details=details, cell=cell,
        ))

    def locate(self, site: dict[str, Any] | None) -> tuple[str, int, str, int | None]:
        """(path, line, source line, notebook cell): a notebook's program line becomes the cell and
        the line in it (check.notebook), as scan locates notebook findings."""
        file, line = (site["file"], int(site["line"])) if site and site.get("line") else (self.fallback_file, 1)
        if not file:
            return "<program>", 1, "", None
        line = max(line, 1)
        if notebook.is_notebook(file):
            nb = notebook.cached(os.path.abspath(file))
            where = nb.locate(line) if nb is not None else None
            if nb is not None and where is not None:
                return self.relative(file), where[1], nb.line_text(line), where[0]
            return self.relative(file), line, "", None
        return self.relative(file), line, linecache.getline(file, line).rstrip("\r\n"), None

    def relative(self, file: str) -> str:
        absolute = Path(os.path.abspath(file))
        try:
            return absolute.relative_to(self.root).as_posix()
        except ValueError:
            return absolute.as_posix() if Path(file).is_absolute() or os.path.exists(file) else file


def _ours(site: dict[str, Any] | None) -> bool:
    """A site inside this tool (the child's module-transfer hook), the emulator, torch or the
    standard library: never the user's line."""
    if not site:
        return False
    real = os.path.realpath(site["file"])
    return any(real == r or real.startswith(r + os.sep) for r in _library_roots())


def _site_text(site: dict[str, Any] | None) -> str:
    return f"{site['file']}:{site['line']}" if site else "unknown"


def _statement_symbol(ctx: _Ctx, site: dict[str, Any] | None, fallback: str) -> str:
    source = ctx.locate(site)[2].strip() if site else ""
    text = source or fallback
    return text if len(text) <= MAX_SYMBOL else text[: MAX_SYMBOL - 1] + "…"


def _shapes(inputs: Any) -> str:
    def one(t: Any) -> str:
        if t is None:
            return "None"
        if len(t) == 2 and isinstance(t[1], str):
            return f"{t[1]}{list(t[0])}"
        return "[" + ", ".join(one(x) for x in t) + "]"

    return "(" + ", ".join(one(t) for t in inputs) + ")"


# -- ops ---------------------------------------------------------------------------------------
def _host_reads(ctx: _Ctx, children: list[dict[str, Any]]) -> int | None:
    """NM902 per user line that read device values back (`loss.item()` every step, a metric's
    `.tolist()`), from the child records; the number of `.item()`-like reads they account for
    (None: records without per-line reads)."""
    sites: dict[tuple[str, int], dict[str, Any]] = {}
    known = False
    for c in children:
        if "host_reads" not in c:
            continue
        known = True
        for r in c.get("host_reads") or ():
            entry = sites.setdefault(site_key(r["site"]), {"site": r["site"], "count": 0, "kinds": {}, "ranks": set()})
            entry["count"] += int(r["count"])
            for k, n in (r.get("kinds") or {}).items():
                entry["kinds"][k] = entry["kinds"].get(k, 0) + int(n)
            if isinstance(c.get("rank"), int):
                entry["ranks"].add(c["rank"])
    if not known:
        return None
    scalar = 0
    for _key, e in sorted(sites.items()):
        if _ours(e["site"]):
            continue
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(e["kinds"].items()))
        scalar += sum(n for k, n in e["kinds"].items() if k in ("item", "float", "int"))
        ctx.add("NM902", e["site"], _statement_symbol(ctx, e["site"], "value read"),
                {"site": e["site"], "count": e["count"], "kinds": e["kinds"], "ranks": sorted(e["ranks"])},
                f"{e['count']} value read{'s' if e['count'] != 1 else ''} back to the host here ({kinds})")
    return scalar


def _ops(ctx: _Ctx, m: Merged, allow: set[str], per_line: int | None = None,
         marked: dict[str, int] | None = None) -> list[str]:
    """NM901/NM902 per op; `marked`: calls of an op in pytest tests whose `neuron_allow_ops`
    marker allows it (only the calls of other tests are reported)."""
    allowed = []
    marked = marked or {}
    for op in sorted(m.ops.values(), key=lambda o: o.name):
        host = op.kind == HOST_SYNC or is_host_work(op.name)
        if op.kind != "fallback" and not host:
            continue
        if op.name in allow or (op.name in marked and op.count <= marked[op.name]):
            allowed.append(op.name)
            continue
        if op.name in marked:
            op = Op(op.name, op.kind, op.count - marked[op.name], op.fwd, op.bwd, op.signatures, op.first_site, op.ranks)
        sigs = sorted(op.signatures.values(), key=lambda s: -s[1])
        details = {
            "op": op.name, "count": op.count, "phases": {"fwd": op.fwd, "bwd": op.bwd},
            "signatures": [{"inputs": i, "shapes": _shapes(i), "count": n} for i, n in sigs],
            "first_site": op.first_site, "ranks": sorted(op.ranks), "kind": op.kind,
            "device_kernel": op.kind != "fallback",
        }
        phase = "forward and backward" if op.fwd and op.bwd else ("backward" if op.bwd else "forward")
        if op.name == ITEM_OP and per_line is not None:
            rest = op.count - per_line  # reads the per-line count cannot see: bool(t), C++ callers
            if rest <= 0:
                continue
            details["count"] = rest
            ctx.add("NM902", op.first_site, f"{op.name} (bool(t), library code)", details,
                    f"{rest} other value read{'s' if rest != 1 else ''} back to the host (branching on a "
                    "tensor, library code); the first here")
            continue
        if op.kind == HOST_SYNC:
            note = (f"expected host work: {op.count} value read{'s' if op.count != 1 else ''} back to the host, "
                    "first here")
        else:
            note = f"{op.count} call{'s' if op.count != 1 else ''}, {phase}, {len(sigs)} input signature" + (
                "s" if len(sigs) != 1 else "")
        if op.first_site and op.first_site.get("autograd_node"):
            note += f", in {op.first_site['autograd_node']}"
        symbol = op.name + (" (.item())" if op.name == ITEM_OP else "")
        ctx.add("NM902" if host else "NM901", op.first_site, symbol, details, note)
    return allowed


# -- recompiles --------------------------------------------------------------------------------
@dataclass
class _SiteCompiles:
    compiles: int  # compiles at the site (first and later passes)
    recompiles: int  # compiles after the site's first pass
    variants: int  # distinct signatures of the site's calls that needed compiles
    ops: list[dict[str, Any]]  # per op: signatures, recompiles, varied positions -> values


def _by_passes(sites: list[CompileSite]) -> _SiteCompiles:
    """The definition (module docstring): a compile in a later pass than its slot's first compile."""
    recompiling: set[int] = set()
    per_op = []
    for cs in sorted(sites, key=lambda c: c.op):
        ordered = sorted(cs.signatures.items(), key=lambda kv: cs.passes[kv[0]][0])  # stable: compile order
        once = _one_time_slots(cs)
        first: dict[int, int] = {}  # slot -> its first pass
        varied: dict[advice.Position, set[int]] = {}
        dtypes: dict[str, list[str]] = {}  # input -> dtypes in the order they appeared
        recompiles = 0
        for i, (key, sig) in enumerate(ordered):
            n, slot = cs.passes[key]
            if n <= first.setdefault(slot, n) or slot in once:
                continue
            recompiles += 1
            recompiling.add(n)
            # against the slot's earlier passes: the other calls of its own pass are not what changed
            before = [s for k, s in ordered[:i] if cs.passes[k][1] == slot and cs.passes[k][0] < n]
            for pos, values in advice.changed_positions(sig, before).items():
                varied.setdefault(pos, set()).update(values)
            for label, (new, old) in advice.changed_dtypes(sig, before).items():
                seen = dtypes.setdefault(label, [old])
                seen.extend(d for d in (old, new) if d not in seen)
        per_op.append({
            "op": cs.op, "phase": cs.phase, "signatures": len(ordered), "slots": len(first),
            "recompiles": recompiles,
            "varied": {p.label(): sorted(v) for p, v in sorted(varied.items(), key=lambda kv: kv[0].key())},
            "dtypes": dtypes,
        })
    return _SiteCompiles(compiles=sum(o["signatures"] for o in per_op),
                         recompiles=sum(o["recompiles"] for o in per_op), variants=1 + len(recompiling),
                         ops=per_op)


def _one_time_slots(cs: CompileSite) -> set[int]:
    """Slots whose compiles are one-time compiles of fixed shapes, not recompiles:

    - all made by one run of their line, which ran again without compiling there (a model called
      twice in one line at two fixed shapes);
    - outside module calls, in a function that was called again afterwards, either by a line that
      no later call ran (state made on the first step: `zeros_like(p)` per parameter), or by the
      first iterations of each call, one new shape per iteration, then none (a loop over tensors of
      different fixed shapes: `for b in bufs: b /= ws`, `torch.stack` per parameter group).

    A model run on batches of several sizes by one call of `train_epoch()` still recompiles (its
    smaller last batch compiles after passes that compiled nothing), though the next epoch
    compiles nothing new."""
    by_slot: dict[int, list[tuple[int, Any]]] = {}
    shapes: dict[int, list[tuple[int, list[int]]]] = {}
    for key, (n, slot) in cs.passes.items():
        by_slot.setdefault(slot, []).append((n, cs.repeats.get(key)))
        shapes.setdefault(slot, []).append((n, _dims(cs.signatures[key])))
    once = set()
    for slot, stamps in by_slot.items():
        repeats = [r for _, r in stamps]
        if len(stamps) < 2 or any(r is None or r.call == 0 for r in repeats) or _grows(shapes[slot]):
            continue
        runs = {r.run for r in repeats}
        if len(runs) == 1 and repeats[0].last_run > repeats[0].run:
            once.add(slot)
            continue
        last_call = max(r.call for r in repeats)
        if any(r.in_module for r in repeats) or repeats[0].frame_calls <= last_call:
            continue
        per_call: dict[int, set[int]] = {}
        for n, r in stamps:
            per_call.setdefault(r.call, set()).add(n - r.call_first)
        # state made once: one call compiled it all, and no later call ran the line
        init = len(per_call) == 1 and repeats[0].line_last_call <= last_call
        # a loop inside the call: each call's compiles are its first iterations, and some call
        # compiled in several (one new shape per call is a shape changing between calls)
        loop = (all(offsets == set(range(len(offsets))) for offsets in per_call.values())
                and any(len(offsets) > 1 for offsets in per_call.values()))
        if init or loop:
            once.add(slot)
    return once


def _dims(inputs: Any) -> list[int]:
    out: list[int] = []
    for t in inputs:
        if t is None:
            continue
        if len(t) == 2 and isinstance(t[1], str):
            out.extend(int(d) for d in t[0])
        else:
            out.extend(_dims(t))
    return out


def _grows(stamps: list[tuple[int, list[int]]]) -> bool:
    """A dimension that grows by one in each of three passes in a row: a sequence or cache
    extended every step (a generate loop), whatever the call structure: recompiles."""
    ordered = [d for _, d in sorted(stamps, key=lambda s: s[0])]
    for a, b, c in zip(ordered, ordered[1:], ordered[2:], strict=False):
        if len(a) == len(b) == len(c) and any(y - x == 1 and z - y == 1 for x, y, z in zip(a, b, c, strict=True)):
            return True
    return False


def _by_shapes(sites: list[CompileSite]) -> _SiteCompiles:
    """Records without passes (a backend record alone, a test traced by coverage): separate the
    calls of an op on one line from variation by the shapes alone (`advice.split_variation`)."""
    per_op = []
    variants = 1
    for cs in sorted(sites, key=lambda c: c.op):
        v = advice.split_variation(list(cs.signatures.values()))
        variants = max(variants, v.variants)
        per_op.append({
            "op": cs.op, "phase": cs.phase, "signatures": v.signatures, "slots": v.slots,
            "recompiles": v.recompiles, "varied": {p.label(): vals for p, vals in v.varied.items()},
        })
    return _SiteCompiles(sum(o["signatures"] for o in per_op), sum(o["recompiles"] for o in per_op),
                         variants, per_op)


def _recompiles(ctx: _Ctx, m: Merged) -> int:
    by_site: dict[tuple[str, int], list[CompileSite]] = {}
    for cs in m.compile_sites.values():
        by_site.setdefault(site_key(cs.site), []).append(cs)
    total = 0
    for sites in by_site.values():
        stamped = all(len(cs.passes) == len(cs.signatures) for cs in sites)
        result = _by_passes(sites) if stamped else _by_shapes(sites)
        if result.recompiles == 0:
            continue
        total += result.recompiles
        value_sets: list[list[int]] = []
        for op in result.ops:
            for vals in op["varied"].values():
                if vals not in value_sets:
                    value_sets.append(vals)
        value_sets.sort(key=lambda vals: -len(vals))  # the widest variation first: the headline
        dims = [{"values": vals,
                 "positions": [f"{op['op']} {label}" for op in result.ops for label, v in op["varied"].items()
                               if v == vals],
                 "options": advice.bucket_advice(vals)} for vals in value_sets]
        site = sites[0].site
        details = {
            "site": site, "distinct_signatures": result.variants, "compiles": result.compiles,
            "recompiles": result.recompiles, "ops": result.ops, "varied_dimensions": dims,
            "ranks": sorted(set().union(*(cs.ranks for cs in sites))),
            "method": "passes" if stamped else "shapes",
        }
        if dims:
            first = dims[0]
            note = f"{result.variants} distinct signatures; a size varied over {', '.join(map(str, first['values']))}"
            pad, *buckets = first["options"] or [None]
            if pad:
                note += f"; pad to {pad['buckets'][0]} (1 compile)"
            if buckets:
                best = min(buckets, key=lambda o: (o["padding"], o["compiles"]))
                note += f" or bucket to {', '.join(map(str, best['buckets']))} ({best['compiles']} compiles)"
        elif changes := sorted({" then ".join(d) for op in result.ops for d in op.get("dtypes", {}).values()}):
            note = (f"{result.variants} distinct signatures; the dtype changed ({'; '.join(changes)}): run "
                    "every call in one dtype (the same autocast region for training and evaluation)")
        else:
            note = f"{result.variants} distinct signatures (dtypes, ranks or ops changed)"
        cache = advice.cache_advice(ctx.locate(site)[2], result.ops)
        if cache:
            details["advice"] = cache
            note = f"{cache}; {note}"
        ctx.add("NM903", site, _statement_symbol(ctx, site, sites[0].op), details, note)
    return total


# -- torch.compile -----------------------------------------------------------------------------
def _user_sites(entries: tuple[DynamoRecompile, ...], user: list[Any]) -> list[DynamoRecompile]:
    """Dynamo's entries with a site inside torch (the wrapper it compiled for a module whose forward
    is torch's or a library's) moved to the user line the child saw running then (same order)."""
    out = []
    for i, entry in enumerate(entries):
        if (entry.site is None or _ours(entry.site)) and i < len(user):
            entry = dataclasses.replace(entry, site=user[i], compiled_site=entry.site, moved=True)
        out.append(entry)
    return out


def _compiled_symbol(ctx: _Ctx, entry: DynamoRecompile) -> str:
    """The function Dynamo compiled; when that was torch's own wrapper, the user's statement."""
    function = str(entry.function or "a function")
    return _statement_symbol(ctx, entry.site, function) if entry.moved else function


def _dynamo(ctx: _Ctx, m: Merged, children: list[dict[str, Any]]) -> dict[str, int]:
    totals = {"graphs": 0, "graph_breaks": 0, "recompiles": 0, "recompile_limit": 0}
    breaks: dict[tuple[str, tuple[str, int]], dict[str, Any]] = {}
    seen_by_child = {(c.get("rank"), c.get("pid")): c.get("dynamo_sites") or {} for c in children}
    for (rank, d), pid in zip(m.dynamo, m.dynamo_pids, strict=True):
        user = seen_by_child.get((rank, pid), {})
        totals["graphs"] += d.graphs
        for b in d.graph_breaks:
            key = (b.reason, site_key(b.site))
            entry = breaks.setdefault(key, {"reason": key[0], "site": b.site, "count": 0})
            entry["count"] += b.count
        recompiles = _user_sites(d.recompiles, list(user.get("recompiles") or ()))
        for r in _user_sites(d.recompile_limit, list(user.get("recompile_limit") or ())):
            totals["recompile_limit"] += 1
            attempt = _limit_attempt(recompiles, r)
            guards = _guard_failures(str(attempt.reason or "")) if attempt else []
            head = _LIMIT_HEAD.match(str(r.reason or ""))
            note = (f"limit {head.group(1)}; " if head else "") + (f"last guard failure: {guards[0]}" if guards else "")
            ctx.add("NM906", r.site, _compiled_symbol(ctx, r),
                    {"reason": r.reason, "function": r.function, "guard_failures": guards,
                     **({"compiled_site": r.compiled_site} if r.moved else {})},
                    note.rstrip("; "))
        for r in recompiles:
            totals["recompiles"] += 1
            reason = str(r.reason or "").strip()
            guards = _guard_failures(reason)
            ctx.add("NM905", r.site, _compiled_symbol(ctx, r),
                    {"reason": reason, "function": r.function, "guard_failures": guards,
                     **({"compiled_site": r.compiled_site} if r.moved else {})},
                    guards[0] if guards else (reason.splitlines()[0] if reason else "guard failed"))
    for entry in breaks.values():
        totals["graph_breaks"] += entry["count"]
        reason = entry["reason"].splitlines()[0] if entry["reason"] else "unknown reason"
        ctx.add("NM904", entry["site"], reason, entry, f"{entry['count']}x")
    return totals


_GUARD_FAILURE = re.compile(r"^\s*- (?:\d+/\d+: )?(.+)$")
_LIMIT_HEAD = re.compile(r"^torch\._dynamo hit config\.\w+ \((\d+)\):")


def _guard_failures(reason: str) -> list[str]:
    """The guard failures of a recompile reason ("- 2/1: tensor 'x' size mismatch ..."), newest
    cache entry first, without Dynamo's frame/compile ids."""
    return [m.group(1).strip() for line in reason.splitlines() if (m := _GUARD_FAILURE.match(line))]


def _limit_attempt(recompiles: list[DynamoRecompile], limit: DynamoRecompile) -> DynamoRecompile | None:
    """Dynamo logs "Recompiling function ..." before it checks the recompile limit, so the call
    that hit the limit also left a recompile entry, though nothing was compiled: remove it from
    `recompiles` (the last one of that function and site naming the limit's last guard failure)."""
    last = _LIMIT_HEAD.sub("", str(limit.reason or "")).strip()
    for i in range(len(recompiles) - 1, -1, -1):
        r = recompiles[i]
        if r.function == limit.function and site_key(r.site) == site_key(limit.site) and last in str(r.reason or ""):
            return recompiles.pop(i)
    return None


# -- placement and dtype -----------------------------------------------------------------------
def _placement(ctx: _Ctx, m: Merged, children: Iterable[dict[str, Any]]) -> None:
    children = list(children)
    params: dict[str, dict[str, Any]] = {}
    transfers: dict[tuple[str, int], dict[str, Any]] = {}
    copies: dict[tuple[str, int], dict[str, Any]] = {}  # per line: copies of content copied before
    for c in children:
        for cp in c.get("copies") or ():
            e = copies.setdefault(site_key(cp["site"]), {"repeated": 0, "count": 0})
            e["repeated"] += int(cp.get("repeated", 0))
            e["count"] += int(cp.get("count", 0))
        for p in c.get("cpu_params", ()):
            entry = params.setdefault(p["symbol"], {**p, "calls": 0})
            entry["calls"] += int(p["calls"])
        for t in c.get("module_transfers", ()):
            e = transfers.setdefault(site_key(t["site"]), {"site": t["site"], "calls": 0, "ranks": set()})
            e["calls"] = max(e["calls"], int(t["calls"]))  # per process: one move per rank is one move
            if isinstance(c.get("rank"), int):
                e["ranks"].add(c["rank"])
    for symbol, p in sorted(params.items()):
        ctx.add("NM907", p["site"], symbol, p,
                f"{p['kind']} {p['dtype']}{p['shape']}, seen in {p['calls']} forward call"
                + ("s" if p["calls"] != 1 else ""))
    for key, h in sorted(m.h2d.items()):
        if _ours(h["site"]) or key in transfers:
            continue  # module transfers: one call copies many tensors
        distinct = h["distinct_sources"]
        if h["bytes"] == 0:
            continue  # empty tensors (under torch.compile): nothing is copied
        # Each process copied one content again and again (a constant re-uploaded every step); new
        # content each time is input feeding. A record without `distinct_sources`: any repetition.
        if key in copies:  # the child saw each copy's pass: the same content again in a later pass
            again = copies[key]["repeated"]
            repeated = again > 0
            note = (f"the same data copied again in {again} later pass{'es' if again != 1 else ''} of this line, "
                    f"{h['bytes']} bytes in all: create it on the device once (device=...) or keep the device copy")
        elif distinct is None:
            repeated, note = h["count"] >= 2, f"{h['count']} copies, {h['bytes']} bytes in all"
        else:
            repeated = distinct == h["processes"] and h["count"] > distinct
            note = (f"{h['count']} copies of the same data, {h['bytes']} bytes in all: create it on the "
                    "device once (device=...) or keep the device copy")
        if not repeated:
            continue
        details = {"site": h["site"], "count": h["count"], "bytes": h["bytes"],
                   "bytes_per_copy": h["bytes"] // h["count"], "distinct_sources": distinct,
                   "ranks": sorted(h["ranks"])}
        ctx.add("NM908", h["site"], _statement_symbol(ctx, h["site"], "copy"), details, note)
    for t in sorted(transfers.values(), key=lambda t: site_key(t["site"])):
        if t["calls"] >= 2:
            ctx.add("NM908", t["site"], _statement_symbol(ctx, t["site"], "module transfer"),
                    {"site": t["site"], "count": t["calls"], "module_transfer": True, "ranks": sorted(t["ranks"])},
                    f"a module was moved {t['calls']} times")


def _downcasts(ctx: _Ctx, m: Merged) -> dict[str, int]:
    """float64 work per call site (NM909); int64 narrowing is routine (indices, labels) and only
    counted in the summary."""
    narrowed = {f"{op} {dtype}": d["count"] for (op, dtype), d in sorted(m.downcasts.items())}
    f64_ops = {op for (op, dtype) in m.downcasts if dtype == NARROWED_FLOAT}
    for cs in sorted(m.compile_sites.values(), key=lambda c: (site_key(c.site), c.op)):
        if cs.op not in f64_ops:
            continue
        hits = [s for s in cs.signatures.values() if _has_dtype(s, NARROWED_FLOAT)]
        if not hits:
            continue
        entry = m.downcasts[(cs.op, NARROWED_FLOAT)]  # "to": the table's dtype_downcast, as the device ran it
        details = {"op": cs.op, "dtype": NARROWED_FLOAT, "to": entry["to"], "site": cs.site,
                   "signatures": [_shapes(s) for s in hits], "op_count": entry["count"]}
        ctx.add("NM909", cs.site, cs.op, details, f"{NARROWED_FLOAT} -> {entry['to']}")
    return narrowed


def _has_dtype(inputs: Any, dtype: str) -> bool:
    for t in inputs:
        if t is None:
            continue
        if len(t) == 2 and isinstance(t[1], str):
            if t[1] == dtype and len(t[0]) > 0:
                return True
        elif _has_dtype(t, dtype):
            return True
    return False


def _pre_init(ctx: _Ctx, m: Merged) -> None:
    for rank, p in m.pre_init:
        if p.count and p.process_group_initialized:
            ctx.add("NM911", p.first_site, _statement_symbol(ctx, p.first_site, "allocation"),
                    {**p.written, "rank": rank}, f"{p.count} allocations, {p.bytes} bytes"
                    + (f", rank {rank}" if rank is not None else ""))


# -- nothing on the device (NM914) -----------------------------------------------------------
_DEVICE_MAP = re.compile(r"""\bdevice_map\s*=""")


def _device_unused(ctx: _Ctx, m: Merged, children: list[dict[str, Any]], ended_early: bool) -> None:
    """A run in which no op ran on the device, or the user's modules all ran on the CPU, passed
    for clean before: say so, with the likely cause."""
    if ended_early or not children:
        return
    device_ops = sum(o.count for o in m.ops.values() if o.kind == "device")
    calls = {"neuron": 0, "cpu": 0}
    first_cpu: dict[str, Any] | None = None
    chosen: dict[str, str] = {}
    for c in children:
        use = c.get("device_use") or {}
        for k in calls:
            calls[k] += int((use.get("module_calls") or {}).get(k, 0))
        first_cpu = first_cpu or use.get("first_cpu_call")
        chosen.update(use.get("library_devices") or {})
    if device_ops and not (calls["cpu"] and not calls["neuron"]):
        return
    details: dict[str, Any] = {"device_ops": device_ops, "module_calls": calls, "first_cpu_call": first_cpu,
                               "library_devices": chosen, "cause": "nothing_moved"}
    site = first_cpu
    if chosen.get("accelerate", "").startswith("cpu"):
        details["cause"] = "library_chose_cpu"
        symbol = "accelerate's Accelerator() chose `cpu`"
        note = ("the model, optimizer and data it prepared stayed on the CPU; accelerate picks `neuron` only "
                "where torch_neuronx is importable, and never with Accelerator(cpu=True) or ACCELERATE_USE_CPU=1")
    elif (where := _device_map_line(ctx.fallback_file)) is not None:
        details.update(cause="device_map", device_map_at=where)
        site = where
        symbol = "`device_map` placed the model"
        note = "load the model without device_map and call .to('neuron'), or pass device_map={'': 'neuron'}"
    elif first_cpu is not None:
        details["cause"] = "model_not_moved"
        symbol = f"`{first_cpu.get('module', 'a module')}` ran on the CPU"
        note = "the model was never moved: call model.to('neuron') (and move its inputs) before running it"
    else:
        symbol = "no tensor was put on the device"
        note = "nothing was moved with .to('neuron') or created with device='neuron'"
    if device_ops:
        note += f" ({device_ops} device op{'s' if device_ops != 1 else ''}, {calls['cpu']} module calls on the CPU)"
    ctx.add("NM914", site, symbol, details, note)


def _device_map_line(file: str | None) -> dict[str, Any] | None:
    if not file or notebook.is_notebook(file):
        return None
    for i, text in enumerate(linecache.getlines(file), start=1):
        if _DEVICE_MAP.search(text) and not text.lstrip().startswith("#"):
            return {"file": file, "line": i, "function": "", "autograd_node": None}
    return None


# -- parity (NM915) ------------------------------------------------------------------------------
def _parity(ctx: _Ctx, result: dict[str, Any]) -> dict[str, Any]:
    """NM915 at the first read that parts from the CPU reference; the summary with report paths."""
    first = result.get("first_divergence")
    out = {**result, "lines": [{**e, "site": {**e["site"], "file": ctx.relative(e["site"]["file"])}}
                               for e in result.get("lines", [])]}
    if not result.get("reference_ok"):
        out["note"] = "the CPU reference recorded no values (it failed to run or read nothing)"
    if first is None:
        return out
    site = first["site"]
    symbol = _statement_symbol(ctx, site, "a value read")
    if first["kind"] == "value":
        note = (f"device {first['device']}, CPU reference {first['reference']} (relative difference "
                f"{_fmt(first['rel_diff'])}, tolerance rtol {result['rtol']:g} / atol {result['atol']:g}); "
                f"read {first['line_read']} of this line, value read {first['read'] + 1} of the run")
    elif first["kind"] == "path":
        ref = first["reference_site"]
        note = (f"the runs part here: value read {first['read'] + 1} came from this line on the device and "
                f"from {ctx.relative(ref['file'])}:{ref['line']} in the CPU reference")
    else:
        note = (f"the device run read {first['device_reads']} values, the CPU reference "
                f"{first['reference_reads']}: they part at this line")
    out["first_divergence"] = {**first, "site": {**site, "file": ctx.relative(site["file"])}}
    ctx.add("NM915", site, symbol, dict(first), note)
    return out


def _fmt(x: Any) -> str:
    return f"{x:.3g}" if isinstance(x, float) else str(x)


# -- the program's end -------------------------------------------------------------------------
def _outcome(ctx: _Ctx, m: Merged, records: Records, children: list[dict[str, Any]],
             timeout: dict[str, Any] | None, crash: dict[str, Any] | None) -> None:
    seen: set[tuple[str, str]] = set()
    for c in children:
        rank = c.get("rank")
        exc = c.get("exception")
        if exc:
            key = (exc["type"], exc["message"])
            if key in seen:
                continue  # the same error on every rank: one finding
            seen.add(key)
            frames = exc.get("frames") or []
            site = frames[-1] if frames else None
            details = {**exc, "ranks": sorted(r for ch in children if (r := ch.get("rank")) is not None
                                              and (ch.get("exception") or {}).get("message") == exc["message"])}
            recorded = _recorded_mismatch(m, c.get("pid"), exc)
            hint = _with_record(exc.get("mismatch"), recorded)
            if hint:
                details["mismatch"] = hint
                ctx.add("NM910", site or (recorded.site if recorded else None), _mismatch_symbol(hint), details,
                        hint.get("hint", ""))
            else:
                first = exc["message"].strip().splitlines()[0] if exc["message"].strip() else ""
                ctx.add("NM912", site, f"{exc['type']}: {first}" if first else exc["type"], details)
        elif c.get("exit", {}).get("status") == "exit":
            code = c["exit"]["code"]
            failed = list((c.get("pytest") or {}).get("failed") or [])
            symbol = f"pytest exit code {code}" if c.get("mode") == "pytest" else f"SystemExit({code})"
            if failed:
                symbol += f": {len(failed)} failed test{'s' if len(failed) != 1 else ''}: " + ", ".join(failed[:5]) + (
                    ", …" if len(failed) > 5 else "")
            ctx.add("NM912", None, symbol, {"exit_code": code, "rank": rank, "failed_tests": failed})
    if not children:
        for rank, exc in m.exceptions:  # records written without the child (e.g. --from-records)
            if exc.argument_device:  # the backend's own mismatch: no live frames, no cause
                hint = _with_record(None, Mismatch.from_dict(exc.written))
                ctx.add("NM910", exc.site, _mismatch_symbol(hint), {**exc.written, "rank": rank, "mismatch": hint},
                        hint["hint"])
                continue
            ctx.add("NM912", exc.site, f"{exc.type}: {exc.message.splitlines()[0] if exc.message else ''}",
                    {**exc.written, "rank": rank})
    if timeout is None and not seen:
        _crash(ctx, records, children, crash)
    if timeout is not None:
        where = next((c["terminated"]["frames"] for c in children if c.get("terminated")), [])
        site = where[-1] if where else None
        ctx.add("NM913", site, f"{timeout['seconds']:g} s", {**timeout, "frames": where},
                "stopped here" if site else "no record of where it was")


def _crash(ctx: _Ctx, records: Records, children: list[dict[str, Any]], crash: dict[str, Any] | None) -> None:
    """NM912 for a process that started and never reached its end (a fatal signal, `os._exit`, the
    OOM killer's SIGKILL, a record it replaced): the signal or exit code, and the last user line
    known: faulthandler's stack of a fatal signal, else the line its last checkpoint saw running."""
    partial = [c for c in children if c.get("partial")]
    if crash is None and not partial:
        return
    info: dict[str, Any] = dict(crash or {})
    site, known = None, "unknown"
    for text in records.faults.values():
        if (site := _fault_site(text)) is not None:
            known = "fault"
            break
    if site is None:
        checkpoints = [c["last_site"] for c in partial if c.get("last_site")]
        if checkpoints:
            site, known = checkpoints[-1], "checkpoint"
    info.update(last_site=site, last_site_from=known, processes=info.get("processes") or
                sorted(c["pid"] for c in partial if isinstance(c.get("pid"), int)))
    code = info.get("returncode")
    if info.get("signal"):
        symbol = f"a fatal signal ({info['signal']})"
    elif isinstance(code, int):
        symbol = f"no exception but exited abruptly (exit code {code}: os._exit or a C-level exit)"
    else:
        symbol = "no exception but died without reaching its end"
    note = {"fault": "the process died without a Python exception; this is the line it was running "
                     "(faulthandler)",
            "checkpoint": "the process died without a Python exception (os._exit, a signal, the OOM killer); "
                          "the last line known to run, from its last checkpoint: the report holds what "
                          "it recorded until then",
            "unknown": "the process died without a Python exception; no line was recorded"}[known]
    ctx.add("NM912", site, symbol, info, note)


_FAULT_FRAME = re.compile(r'^\s*File "(.+)", line (\d+) in (.+)$')


def _fault_site(text: str) -> dict[str, Any] | None:
    """The innermost user frame of a faulthandler dump (most recent call first)."""
    for line in text.splitlines():
        m = _FAULT_FRAME.match(line)
        if m and not _library_file(m.group(1)):
            return {"file": m.group(1), "line": int(m.group(2)), "function": m.group(3).strip(),
                    "autograd_node": None}
    return None


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """The standard library, this tool, the emulator and torch (found without importing them)."""
    import importlib.util
    import sysconfig

    roots = {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"],
             os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    for name in ("neuron_emu", "torch"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        roots.update(spec.submodule_search_locations or () if spec is not None else ())
    return tuple(os.path.realpath(r) for r in roots)


def _library_file(file: str) -> bool:
    if file.startswith("<"):
        return True
    parts = Path(file).parts
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    real = os.path.realpath(file)
    return any(real == r or real.startswith(r + os.sep) for r in _library_roots())


def _records_left_out(ctx: _Ctx, records: Records) -> None:
    """NM916 per record that was left out of the report: malformed, or not sealed by this run."""
    for bad in records.invalid:
        if bad.forged:
            symbol = f"{bad.file} was not written by check"
        else:
            symbol = f"{bad.file} is malformed"
        ctx.add("NM916", None, symbol, {"file": bad.file, "reason": bad.reason, "forged": bad.forged}, bad.reason)


def _survivors(ctx: _Ctx, survivors: list[dict[str, Any]]) -> None:
    """NM917: processes the program started that were still running when it ended (check ended them)."""
    names = ", ".join(f"{s.get('pid')} `{s.get('command') or '?'}`" for s in survivors[:3])
    more = f" and {len(survivors) - 3} more" if len(survivors) > 3 else ""
    n = len(survivors)
    ctx.add("NM917", None, f"{n} process{'es' if n != 1 else ''}", {"survivors": survivors},
            f"{names}{more}: still running when the program ended; check ended them")


def _exit_entry(child: dict[str, Any], crash: dict[str, Any] | None) -> dict[str, Any]:
    """A process's exit for the summary; one that left only a checkpoint died (the code or signal
    is the program's when known)."""
    if not child.get("partial"):
        return {"rank": child.get("rank"), **child.get("exit", {})}
    crash = crash or {}
    code = crash.get("returncode")
    return {"rank": child.get("rank"), "status": "died", "code": code if isinstance(code, int) else None,
            **({"signal": crash["signal"]} if crash.get("signal") else {})}


def _recorded_mismatch(m: Merged, pid: Any, exc: dict[str, Any]) -> Mismatch | None:
    """The backend's record of the mismatch that `exc` (the child's uncaught exception) is: same
    process, same message; None if the process's last mismatch was another (caught) one."""
    recorded = m.mismatches.get(pid)
    if recorded is None or recorded.message != exc.get("message"):
        return None
    frames = exc.get("frames") or []
    if frames and recorded.site and site_key(recorded.site) != site_key(frames[-1]):
        return None
    return recorded


def _with_record(hint: dict[str, Any] | None, recorded: Mismatch | None) -> dict[str, Any] | None:
    """The child's hint (cause from the live frames; op and argument parsed from the message) with
    op, argument and devices taken from the backend's record, which knows them even when the
    message does not name them (TensorIterator's "found at least two devices")."""
    if recorded is None:
        return hint
    out = dict(hint) if hint else {"cause": "unknown", "values": [], "created_at": None, "device_map_at": None,
                                   "hint": "Put the model and every input on the same device."}
    out.update({k: v for k in ("op", "argument", "argument_device", "device") if (v := getattr(recorded, k))})
    return out


def _mismatch_symbol(hint: dict[str, Any]) -> str:
    if hint.get("argument"):
        return f"`{hint['argument']}` of {_op_label(hint.get('op'))} is on {hint.get('argument_device') or 'the CPU'}"
    return f"a tensor is on {hint.get('argument_device') or 'the CPU'}"


def _op_label(op: str | None) -> str:
    """`add_Tensor` (an older message's method name) -> `aten::add.Tensor`; a qualified name as is."""
    if not op:
        return "an op"
    name = op.removeprefix("aten::")
    if "." in name:
        return f"aten::{name}"
    base, _, last = name.rpartition("_")
    if base and last[:1].isupper():
        name = f"{base}.{last}"
    return f"aten::{name}"


# -- entry point -------------------------------------------------------------------------------
def analyze(
    records: Records,
    pack: RulePack,
    root: Path,
    *,
    allow_ops: Iterable[str] = (),
    timeout: dict[str, Any] | None = None,
    crash: dict[str, Any] | None = None,
    fallback_file: str | None = None,
    parity: dict[str, Any] | None = None,
    survivors: Iterable[dict[str, Any]] = (),
) -> tuple[list[Finding], RunSummary]:
    """Findings (raw: selection, baseline and gate come later) and the run summary."""
    m = merge(records)
    children = list(records.child)
    target_file = fallback_file or next((c.get("target_file") for c in children if c.get("target_file")), None)
    ctx = _Ctx(pack, root.resolve(), target_file)
    marked: dict[str, int] = {}
    for c in children:
        for op, n in ((c.get("pytest") or {}).get("allowed") or {}).items():
            marked[op] = marked.get(op, 0) + int(n)
    allowed = _ops(ctx, m, set(allow_ops), _host_reads(ctx, children), marked)
    recompiles = _recompiles(ctx, m)
    dyn = _dynamo(ctx, m, children)
    _placement(ctx, m, children)
    narrowed = _downcasts(ctx, m)
    _pre_init(ctx, m)
    ended_early = bool(timeout or crash or records.invalid or any(c.get("exception") or c.get("start_error") or
                                               c.get("exit", {}).get("status") not in (None, "ok") for c in children))
    _device_unused(ctx, m, children, ended_early)
    _outcome(ctx, m, records, children, timeout, crash)
    _records_left_out(ctx, records)
    if survivors:
        _survivors(ctx, list(survivors))
    if parity is not None:
        parity = _parity(ctx, parity)
    device = sum(o.count for o in m.ops.values() if o.kind == "device")
    fallback = sum(o.count for o in m.ops.values() if o.kind == "fallback")
    host_syncs = {o.name: o.count for o in m.ops.values() if o.kind == HOST_SYNC}
    table = _op_table()
    host_compute = {o.name: o.count for o in m.ops.values() if table is not None and o.name in table.host_compute}
    uncaught = {*(e["message"] for c in children if (e := c.get("exception") or {}).get("message")),
                *(e.message for _, e in m.exceptions if e.message)}
    # a mismatch the program caught (a try/except falling back to another path) ran no finding
    caught = [{k: getattr(mm, k) for k in ("op", "argument", "argument_device", "device", "site")}
              for mm in m.mismatches.values() if mm.message not in uncaught]
    ranks = sorted({rec.rank for rec in records.emu if rec.rank is not None})
    problems = list(records.problems)
    if not records.emu:
        problems.append(
            "no emulator record was written (the program was killed before it could exit, or never "
            "imported torch)"
        )
    summary = RunSummary(
        processes=len(records.emu),
        ranks=ranks,
        ops=OpsSummary(
            device=device, cpu_fallback=fallback,
            device_share=round(device / (device + fallback), 4) if device + fallback else None,
            distinct_fallback_ops=sorted(o.name for o in m.ops.values() if o.kind == "fallback"),
            host_compute=host_compute,
            host_syncs=sum(host_syncs.values()), host_sync_ops=host_syncs,
        ),
        compiles={"eager": m.compiles, "eager_recompiles": recompiles, **{f"dynamo_{k}": v for k, v in dyn.items()}},
        narrowed_64bit=narrowed,
        caught_device_mismatches=caught,
        allowed_ops=allowed,
        wall_s=max((float(c.get("wall_s", 0.0)) for c in children), default=0.0),
        exit=[_exit_entry(c, crash) for c in children],
        problems=problems,
        values=check_parity.summarize(records, ctx.relative),
        parity=parity,
    )
    return ctx.findings, summary
