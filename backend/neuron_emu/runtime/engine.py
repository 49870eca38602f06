"""Backward passes on `neuron:<i>` for i >= 1 run on the calling thread.

The autograd engine starts one device thread per device that the registered device guards report
when it first runs, and the Python device guard torch offers a Python backend always reports one.
A node on `neuron:1` would then index past the engine's device queues (an INTERNAL ASSERT). With
autograd multithreading disabled for the call, the engine runs every node on the calling thread's
queue instead: same graph, same order, same results. Every Python entry point (``backward``,
``autograd.grad``, DDP and FSDP hooks queued from them) goes through
``Variable._execution_engine.run_backward``, so that one attribute is wrapped.
"""

from __future__ import annotations

from typing import Any

from torch.autograd.variable import Variable

from neuron_emu import _torch_private

_is_enabled = _torch_private.is_multithreading_enabled
_set_enabled = _torch_private.set_multithreading_enabled


class _Engine:
    """``Variable._execution_engine`` with ``run_backward`` on the calling thread."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def run_backward(self, *args: Any, **kwargs: Any) -> Any:
        prev = _is_enabled()
        _set_enabled(False)
        try:
            return self._engine.run_backward(*args, **kwargs)
        finally:
            _set_enabled(prev)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def install() -> None:
    if not isinstance(Variable._execution_engine, _Engine):
        Variable._execution_engine = _Engine(Variable._execution_engine)  # type: ignore[assignment]
