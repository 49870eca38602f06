"""Values read back to the host, and host->device copies, at the user's lines.

- Host reads: `Tensor.item()`, `.tolist()`, `float(t)` / `int(t)`, and `.cpu()` of a one-element
  tensor, as the program calls them (wrapped on `torch.Tensor` in the checked process only). Each
  user line that read a device value is counted (NM902 per line, not lumped at the first read);
  the values themselves are kept in order (check.parity compares and summarizes them).
- Copies: the backend's `host_to_device` is wrapped so that each copy is also counted per calling
  context of its user line (check.probe.passes): the same content copied again in a later pass of
  the same context is a constant uploaded every step (NM908); two objects each copying their own
  constant once (train and eval loaders' mean/std), one copy per rank or a 0-byte copy are not.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from neuron_migrate.check.probe import frames

MAX_VALUES = 200_000  # numbers kept for parity; more are counted, not kept
MAX_PER_READ = 1024  # numbers kept from one .tolist()


class Reads:
    def __init__(self, keep_values: bool) -> None:
        self.keep_values = keep_values
        self.sites: dict[tuple[str, int], dict[str, Any]] = {}
        self.values: list[list[Any]] = []  # [file, line, kind, [numbers]] in read order
        self.kept = 0
        self.dropped = 0
        # copies: (file, line) -> {"site", "count", "bytes", "repeated": copies of content already
        # copied in an earlier pass of the same context, "contexts": set}
        self.copies: dict[tuple[str, int], dict[str, Any]] = {}
        self._seen: dict[tuple[str, int, int, int], int] = {}  # (file, line, context, content) -> pass

    def read(self, kind: str, value: Any, device: bool) -> None:
        site = frames.user_site(sys._getframe(1))
        if site is None:
            return
        key = (site["file"], site["line"])
        if not device:  # a host tensor's value (printing a copied-back tensor reads it again)
            return
        entry = self.sites.get(key)
        if entry is None:
            entry = self.sites[key] = {"site": site, "count": 0, "kinds": {}}
        entry["count"] += 1
        entry["kinds"][kind] = entry["kinds"].get(kind, 0) + 1
        if not self.keep_values:
            return
        numbers = _numbers(value)
        if self.kept + len(numbers) > MAX_VALUES:
            self.dropped += len(numbers)
            return
        self.kept += len(numbers)
        self.values.append([site["file"], site["line"], kind, numbers])

    def copy(self, tracker: Any, content: int, nbytes: int) -> None:
        site = frames.user_site(sys._getframe(1))
        if site is None or nbytes == 0:
            return
        key = (site["file"], site["line"])
        entry = self.copies.get(key)
        if entry is None:
            entry = self.copies[key] = {"site": site, "count": 0, "bytes": 0, "repeated": 0, "contexts": set()}
        entry["count"] += 1
        entry["bytes"] += nbytes
        cur = getattr(tracker, "current", None)
        if cur is None or (cur.frame.f_code.co_filename, cur.line) != key:
            return
        n = tracker.passes.get((cur.ctx, cur.line), 0)
        entry["contexts"].add(cur.ctx)
        seen = self._seen.setdefault((*key, cur.ctx, content), n)
        if seen < n:
            entry["repeated"] += 1

    def to_dict(self) -> dict[str, Any]:
        """The child record's `host_reads`, `copies` and `values` keys (schema in child.py)."""
        return {
            "host_reads": [dict(v) for v in self.sites.values()],
            "copies": [{**v, "contexts": len(v["contexts"])} for v in self.copies.values()],
            "values": {"kept": self.values, "dropped": self.dropped},
        }


def _numbers(value: Any) -> list[float | int | bool | None]:
    out: list[Any] = []

    def walk(v: Any) -> None:
        if len(out) >= MAX_PER_READ:
            return
        if isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif isinstance(v, bool) or isinstance(v, int):
            out.append(v)
        elif isinstance(v, float):
            out.append(v if math.isfinite(v) else repr(v))  # JSON has no nan/inf
        elif isinstance(v, complex):
            out.extend([v.real, v.imag])

    walk(value)
    return out


ACTIVE: Reads | None = None
TRACKER: Any = None  # the running check.probe.passes.PassTracker (set by it)


def install(reads: Reads) -> None:
    """Wrap the read methods of `torch.Tensor` and the backend's copy record (once per process)."""
    global ACTIVE
    first = ACTIVE is None
    ACTIVE = reads
    if not first:
        return
    import torch

    import neuron_emu.record as emu_record

    neuron = torch.device("neuron").type
    depth = [0]  # the backend's `.item()` reads its CPU copy with `.item()` again: count the outer call

    def wrap(name: str, kind: str, scalar_only: bool = False) -> None:
        method = getattr(torch.Tensor, name)

        def wrapper(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            try:
                out = method(self, *args, **kwargs)
            finally:
                depth[0] -= 1
            if ACTIVE is not None and depth[0] == 0 and not torch.compiler.is_compiling():
                if not scalar_only:
                    ACTIVE.read(kind, out, self.device.type == neuron)
                elif self.device.type == neuron and isinstance(out, torch.Tensor) and out.numel() == 1:
                    ACTIVE.read(kind, out.item() if not out.is_complex() else complex(out.item()), True)
            return out

        wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = method.__name__, method.__qualname__, method.__doc__
        wrapper.__wrapped__ = method  # type: ignore[attr-defined]
        setattr(torch.Tensor, name, wrapper)

    wrap("item", "item")
    wrap("tolist", "tolist")
    wrap("__float__", "float")
    wrap("__int__", "int")
    wrap("cpu", "cpu", scalar_only=True)

    original = emu_record.host_to_device
    content_key = emu_record._content_key

    def host_to_device(src: Any) -> None:
        original(src)
        if ACTIVE is not None:
            ACTIVE.copy(TRACKER, content_key(src), src.numel() * src.element_size())

    emu_record.host_to_device = host_to_device
