"""Run an aten op for the `neuron` device on CPU aliases of its arguments, and relabel the results.

This is the one execution path shared by the explicit kernels and the boxed fallback: `neuron`
arguments become zero-copy CPU aliases, ``device=neuron`` becomes ``cpu``, random ops get the
device's generator, the op runs on the CPU, and results are relabelled `neuron` (an in-place or
``out=`` result is the caller's own `neuron` tensor). Per-op facts are computed once (:class:`OpInfo`)
so the common call costs a loop over the arguments and two DLPack relabels.
"""

from __future__ import annotations

from typing import Any

import torch

from neuron_emu import memory
from neuron_emu._torch_private import DispatchKey, DispatchKeySet, OpOverload
from neuron_emu.device import guard_resolved, physical
from neuron_emu.runtime.generator import neuron_index
from neuron_emu.runtime.storage import (  # the relabel, inlined on the fast path
    _CAPSULE_PTR_OFFSET as _OFF,
)
from neuron_emu.runtime.storage import (
    _CPU_WORD,
    _I64,
    _VP,
    _from_dlpack,
    _to_dlpack,
    to_cpu,
    to_neuron,
)
from neuron_emu.runtime.storage import (
    _KDL_EXT_DEV as _EXT_WORD,
)

Tensor = torch.Tensor
_track = memory.track
CPU_KEYSET = DispatchKeySet(DispatchKey.CPU)
_CPU = torch.device("cpu")
_BACKEND = "neuron"

# Arguments that may stay on the CPU next to `neuron` tensors, as on CUDA (copies; index tensors).
_CPU_OK_ARGS: dict[str, frozenset[str]] = {
    "aten::index.Tensor": frozenset({"indices"}),
    "aten::index.Tensor_out": frozenset({"indices"}),
    "aten::index_put_": frozenset({"indices"}),
    "aten::index_put": frozenset({"indices"}),
    "aten::_index_put_impl_": frozenset({"indices"}),
    "aten::_unsafe_index.Tensor": frozenset({"indices"}),
    "aten::_unsafe_index_put": frozenset({"indices"}),
    "aten::copy_": frozenset({"src"}),
    "aten::_copy_from": frozenset({"self", "dst"}),
    "aten::_copy_from_and_resize": frozenset({"self", "dst"}),
    "aten::_to_copy": frozenset({"self"}),
    "aten::set_.source_Tensor": frozenset({"source"}),
}
# Ops the device runs on integer tensors whose CPU kernel takes floating point only ("histogram_cpu"
# not implemented for 'Int'): transformers' MoE layers count tokens per expert with an int32 histc
# on every device but the CPU and MPS. They run in float32 (exact below 2**24) and return the
# input's dtype, as on CUDA.
_FLOAT_ONLY_ON_CPU = frozenset({"aten::histc"})
# Ops that C++ reaches with a bare `neuron` already given the device guard's index (see
# device.guard_resolved); factories get the bare device, so their `neuron:0` is the user's.
_GUARD_FILLS_INDEX = frozenset({"aten::_to_copy"})


class OpInfo:
    """Facts about one overload, computed once."""

    __slots__ = (
        "arg_names",
        "compiles",
        "cpu_ok",
        "gen_kw",
        "gen_pos",
        "has_device",
        "is_view",
        "kind",
        "name",
        "op",
        "record",
        "returns_alias",
        "writes",
    )

    def __init__(self, op: OpOverload | str, kind: str, *, compiles: bool, record: bool) -> None:
        # ``op`` may be the qualified name; it is resolved (with the schema) on first use.
        self.op = op  # type: ignore[assignment]
        self.name = op if isinstance(op, str) else op.name()  # aten::name[.overload], TorchNeuron's form
        self.kind = kind  # "device" | "fallback"
        self.compiles = compiles
        self.record = record
        self.arg_names: tuple[str, ...] | None = None  # schema facts: filled on first use

    def prepare(self) -> OpInfo:
        """Read the schema (about 0.4 ms per op the first time, hence not at activation)."""
        if isinstance(self.op, str):
            from neuron_emu.ops.registry import resolve

            op = resolve(self.op)
            if op is None:
                raise RuntimeError(f"neuron emulator: unknown operator {self.op}")
            self.op = op if self.name not in _FLOAT_ONLY_ON_CPU else _InFloat(op)  # type: ignore[assignment]
        schema = self.op._schema
        args = schema.arguments
        self.is_view = self.op.is_view
        self.cpu_ok = _CPU_OK_ARGS.get(self.name, frozenset())
        self.writes = frozenset(a.name for a in args if a.alias_info is not None and a.alias_info.is_write)
        self.gen_pos = -1
        self.gen_kw = ""
        for i, a in enumerate(args):
            if "Generator" in str(a.type):
                if a.kwarg_only:
                    self.gen_kw = a.name
                else:
                    self.gen_pos = i
        self.has_device = any(a.name == "device" for a in args)
        self.returns_alias = any(r.alias_info is not None for r in schema.returns)
        self.arg_names = tuple(a.name for a in args)
        return self


class _InFloat:
    """An overload of `_FLOAT_ONLY_ON_CPU` that takes integer input: its CPU kernel gets float32."""

    __slots__ = ("_real",)

    def __init__(self, op: OpOverload) -> None:
        self._real = op

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def _op(self, x: Tensor, *args: Any, **kwargs: Any) -> Any:
        if x.is_floating_point() or x.is_complex():
            return self._real._op(x, *args, **kwargs)
        return self._real._op(x.float(), *args, **kwargs).to(x.dtype)


def _convert(info: OpInfo, name: str, a: Any, state: list[Any]) -> Any:
    """Convert one argument; ``state`` is [device index, first bad (name, device), aliases]."""
    if isinstance(a, Tensor):
        d = a.get_device()
        if d >= 0:
            if state[0] < 0:
                state[0] = d
            elif d != state[0]:
                state[1] = (name, a.device)
            c = to_cpu(a)
            if name in info.writes:
                state[2].append((c, a))
            return c
        if state[1] is None and a.dim() != 0 and name not in info.cpu_ok:
            state[1] = (name, a.device)
        return a
    if type(a) in (list, tuple) and a and any(isinstance(x, Tensor) for x in a):
        return type(a)(_convert(info, name, x, state) for x in a)
    return a


def execute(info: OpInfo, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``info.op`` on the CPU for `neuron` arguments and return `neuron` results."""
    if info.arg_names is None:
        info.prepare()
    if not kwargs and not info.writes and info.gen_pos < 0 and not info.gen_kw:
        fast = _execute_fast(info, args)
        if fast is not _SLOW:
            return fast
    return _execute(info, args, kwargs)


_SLOW = object()


def _execute_fast(info: OpInfo, args: tuple[Any, ...]) -> Any:
    """Functional ops whose tensor arguments are all `neuron` tensors of one device (most calls):
    the general path's bookkeeping inlined. Returns _SLOW for anything else."""
    dev = -1
    cargs = list(args)
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            d = a.get_device()
            if d < 0 or (dev >= 0 and d != dev):
                return _SLOW
            dev = d
            try:
                cap = _to_dlpack(a)
            except RuntimeError:
                return _SLOW
            _I64.from_address(_VP.from_address(id(cap) + _OFF).value + 8).value = _CPU_WORD
            cargs[i] = _from_dlpack(cap)
        elif type(a) in (list, tuple):
            return _SLOW
    if dev < 0:
        return _SLOW
    result = info.op._op(*cargs)
    if isinstance(result, Tensor):
        cap = _to_dlpack(result)
        _I64.from_address(_VP.from_address(id(cap) + _OFF).value + 8).value = _EXT_WORD | (dev << 32)
        n = _from_dlpack(cap)
        _track(n, dev, result.numel() * result.element_size())
        return n
    return _relabel(result, [], dev)


def _execute(info: OpInfo, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    state: list[Any] = [-1, None, []]
    names = info.arg_names
    cargs = [_convert(info, names[i], a, state) for i, a in enumerate(args)]
    ckw = {k: _convert(info, k, v, state) for k, v in kwargs.items()} if kwargs else {}
    out_dev = state[0]
    if info.has_device:
        dev = ckw.get("device")
        if dev is not None:
            dev = torch.device(dev)
            if dev.type == _BACKEND:
                out_dev = (guard_resolved if info.name in _GUARD_FILLS_INDEX else physical)(dev.index)
                if state[0] < 0:
                    state[0] = out_dev
            else:
                out_dev = -1
            ckw["device"] = _CPU
    if state[1] is not None and state[0] >= 0:
        from neuron_emu.ops import mismatch  # the error path only

        raise mismatch.error(info, state[1][0], state[1][1], state[0])
    if info.gen_pos >= 0 or info.gen_kw:
        _generator(info, cargs, ckw, max(state[0], 0))
    try:
        result = info.op._op(*cargs, **ckw)
    except RuntimeError as exc:
        if "not resizable" not in str(exc) or not state[2]:
            raise
        result = _rerun_with_fresh_outputs(info, cargs, ckw, state[2], out_dev)
    return _relabel(result, state[2], out_dev)


def _generator(info: OpInfo, cargs: list[Any], ckw: dict[str, Any], dev: int) -> None:
    from neuron_emu.random import default_generators

    if info.gen_pos >= 0:
        g = cargs[info.gen_pos] if info.gen_pos < len(cargs) else None
    else:
        g = ckw.get(info.gen_kw)
    if g is None:
        g = default_generators[dev]
    elif neuron_index(g) < 0:
        raise RuntimeError(f"Expected a '{_BACKEND}' device type for generator but found '{g.device.type}'")
    if info.gen_pos >= 0 and info.gen_pos < len(cargs):
        cargs[info.gen_pos] = g
    else:
        ckw[info.gen_kw or info.arg_names[info.gen_pos]] = g


def _rerun_with_fresh_outputs(
    info: OpInfo, cargs: list[Any], ckw: dict[str, Any], aliases: list[tuple[Tensor, Tensor]], dev: int
) -> Any:
    # A DLPack-adopted storage cannot grow; give the op fresh CPU outputs, then point the caller's
    # `neuron` tensors at the (relabelled) results.
    swap = {id(c): torch.empty(0, dtype=c.dtype) for c, _ in aliases}
    cargs = [swap.get(id(a), a) if isinstance(a, Tensor) else a for a in cargs]
    ckw = {k: swap.get(id(v), v) if isinstance(v, Tensor) else v for k, v in ckw.items()}
    result = info.op._op(*cargs, **ckw)
    for i, (c, orig) in enumerate(aliases):
        fresh = swap[id(c)]
        torch.ops.aten.set_.source_Tensor(orig, to_neuron(fresh, max(dev, 0)))
        aliases[i] = (fresh, orig)
    return result


def _relabel(result: Any, aliases: list[tuple[Tensor, Tensor]], dev: int) -> Any:
    if isinstance(result, Tensor):
        for c, orig in aliases:
            if result is c:
                return orig
        if dev < 0:
            return result
        n = to_neuron(result, dev)
        memory.track(n, dev, result.numel() * result.element_size())
        return n
    if type(result) in (tuple, list):
        return type(result)(_relabel(r, aliases, dev) for r in result)
    return result
