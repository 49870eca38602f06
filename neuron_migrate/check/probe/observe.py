"""What the backend record does not hold, observed inside the checked process (child, pytest plugin):

- parameters and buffers still on the CPU when their module runs with `neuron` inputs or
  `neuron` siblings (seen by the pass tracker at each module call's frame: no global module
  hooks, which `torch.compile` warns about and traces into);
- module transfers (`module.to/.neuron/.cuda/.half...` all funnel through `Module._apply`, and
  `load_state_dict`): one call copies many tensors, so analyze does not count those host->device
  copies as "repeated every step".
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from neuron_migrate.check.probe import frames


@dataclass
class Observations:
    cpu_params: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)
    transfers: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)

    def clear(self) -> None:
        self.cpu_params.clear()
        self.transfers.clear()

    def to_dict(self) -> dict[str, Any]:
        """The `cpu_params` and `module_transfers` keys of the child record (schema in child.py)."""
        return {"cpu_params": [dict(v) for v in self.cpu_params.values()],
                "module_transfers": [dict(v) for v in self.transfers.values()]}


_targets: list[Observations] = []  # the child's (whole run) and the pytest plugin's (per test)


def module_called(module: Any, where: dict[str, Any] | None) -> None:
    """`module` runs on the device (its inputs or some of its tensors are there), called from the
    user line `where`: note its parameters and buffers still on the CPU. Called by the pass
    tracker (check.passes) from the module call's frame, not a global module hook, which
    `torch.compile` would warn about and trace into."""
    if not _targets:
        return
    cpu = [
        (kind, name, t)
        for kind, table in (("parameter", module._parameters), ("buffer", module._buffers))
        for name, t in table.items()
        if t is not None and t.device.type == "cpu"
    ]
    for target in _targets:
        for kind, name, t in cpu:
            entry = target.cpu_params.get((id(module), name))
            if entry is None:
                entry = target.cpu_params[(id(module), name)] = {
                    "symbol": f"{type(module).__name__}.{name}", "kind": kind,
                    "shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."),
                    "site": where, "calls": 0,
                }
            entry["calls"] += 1


def install(obs: Observations) -> None:
    """Also observe into `obs` (the transfer wrappers are installed once per process)."""
    _targets.append(obs)
    if len(_targets) > 1:
        return
    import torch

    depth = [0]

    def counted(method: Any) -> Any:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if depth[0] == 0:
                where = frames.user_site(sys._getframe(1))
                if where is not None:
                    for target in _targets:
                        entry = target.transfers.setdefault((where["file"], where["line"]),
                                                            {"site": where, "calls": 0})
                        entry["calls"] += 1
            depth[0] += 1
            try:
                return method(self, *args, **kwargs)
            finally:
                depth[0] -= 1

        wrapper.__wrapped__ = method  # type: ignore[attr-defined]
        wrapper.__name__ = method.__name__
        wrapper.__qualname__ = method.__qualname__
        wrapper.__doc__ = method.__doc__
        return wrapper

    torch.nn.Module._apply = counted(torch.nn.Module._apply)  # type: ignore[method-assign]
    torch.nn.Module.load_state_dict = counted(torch.nn.Module.load_state_dict)  # type: ignore[method-assign]
