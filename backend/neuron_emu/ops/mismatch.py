"""CUDA's device-mismatch errors, raised for the `neuron` device, and recorded machine-readably.

CUDA (torch 2.13) raises one of two messages when a CPU tensor meets a device tensor:

* ops whose device check is TensorIterator's (``device_check: NoCheck  # TensorIterator`` in
  native_functions.yaml): "Expected all tensors to be on the same device, but found at least two
  devices, cuda:0 and cpu!" (the first non-CPU device first, whatever the operand order);
* the others, from the codegen'd ``check_and_update_common_device``: "Expected all tensors to be on
  the same device, but got mat1 is on cpu, different from other tensors on cuda:0 (when checking
  argument in method wrapper_CUDA_addmm)". The method is torchgen's wrapper name: for structured
  groups ``wrapper_CUDA_<name>[_out][_<overload>]`` (``wrapper_CUDA_addmm``, ``wrapper_CUDA_cat``),
  for the rest ``wrapper_CUDA_<overload>_<name>[_out]`` (``wrapper_CUDA__index_select``).

The emulator prints the same with ``NEURON`` for ``CUDA``. Which form and name an op gets is read
from torchgen's copy of native_functions.yaml, once, on the first mismatch (never on the hot path);
without it the second form with the unstructured name is used. Each raise is also recorded
(``record.device_mismatch``) with the op's qualified name, so readers never parse the message.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from neuron_emu import record

if TYPE_CHECKING:
    from neuron_emu._torch_private import OpOverload
    from neuron_emu.ops.cpu import OpInfo

_BACKEND = "neuron"
_KEY = "NEURON"
_ENTRY = re.compile(r"^- func: ([\w.]+)\(", re.MULTILINE)


@functools.cache
def _op_facts() -> tuple[frozenset[str], frozenset[str]]:
    """(overloads of structured groups, overloads checked by TensorIterator) from torchgen's yaml."""
    spec = importlib.util.find_spec("torchgen")
    if spec is None or spec.origin is None:
        return frozenset(), frozenset()
    path = Path(spec.origin).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return frozenset(), frozenset()
    structured, iterator = set(), set()
    starts = list(_ENTRY.finditer(text))
    for m, nxt in zip(starts, [*starts[1:], None], strict=True):
        body = text[m.end():nxt.start() if nxt else len(text)]
        if "\n  structured: True" in body or "\n  structured_delegate:" in body:
            structured.add(m.group(1))
        check = re.search(r"\n  device_check: NoCheck\s*#([^\n]*)", body)
        if check and "TensorIterator" in check.group(1):
            iterator.add(m.group(1))
    return frozenset(structured), frozenset(iterator)


def wrapper_name(op: OpOverload) -> str:
    """torchgen's kernel wrapper name for ``op``, with the `neuron` dispatch key."""
    schema = op._schema
    name = schema.name.split("::", 1)[1]
    overload = schema.overload_name
    is_out = any(a.kwarg_only and a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)
    cpp = name + ("_out" if is_out else "")
    key = f"{name}.{overload}" if overload else name
    if key in _op_facts()[0]:
        return f"wrapper_{_KEY}_{cpp}" + (f"_{overload}" if overload else "")
    return f"wrapper_{_KEY}_{overload}_{cpp}"


def error(info: OpInfo, arg: str, bad: torch.device, dev: int) -> RuntimeError:
    """The error CUDA raises for ``info`` when argument ``arg`` is on ``bad``, recorded."""
    op = info.op
    overload = op._schema.overload_name
    short = op._schema.name.split("::", 1)[1]
    here = f"{_BACKEND}:{dev}"
    if (f"{short}.{overload}" if overload else short) in _op_facts()[1]:
        message = ("Expected all tensors to be on the same device, but found at least two devices, "
                   f"{here} and {bad}!")
    else:
        message = ("Expected all tensors to be on the same device, but got "
                   f"{arg} is on {bad}, different from other tensors on {here} "
                   f"(when checking argument in method {wrapper_name(op)})")
    record.device_mismatch(info.name, arg, str(bad), here, message)
    return RuntimeError(message)
