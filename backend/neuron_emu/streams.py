"""``torch.neuron`` streams and events. Emulated execution is synchronous, so they only keep order
bookkeeping and timing; every wait returns immediately."""

from __future__ import annotations

import time
from typing import Any

import torch

from neuron_emu import device as _device


class Stream:
    """A `neuron` stream (always idle on the emulator)."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = torch.device(_device.BACKEND, _device._index(device, optional=True))
        self.priority = priority
        self.stream_id = id(self)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait_event(self, event: Event) -> None:
        return None

    def wait_stream(self, stream: Stream) -> None:
        return None

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.stream_id == self.stream_id

    def __hash__(self) -> int:
        return hash((self.stream_id, self.device))

    def __repr__(self) -> str:
        return f"<torch.neuron.Stream device={self.device} stream_id={self.stream_id}>"


class Event:
    """A `neuron` event; ``elapsed_time`` measures host wall time between records."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self._t: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        self._t = time.perf_counter()

    def query(self) -> bool:
        return True

    def wait(self, stream: Stream | None = None) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: Event) -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._t is None or end_event._t is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._t - self._t) * 1000.0


_default: dict[int, Stream] = {}
_current: dict[int, Stream] = {}


def default_stream(device: Any = None) -> Stream:
    idx = _device._index(device, optional=True)
    if idx not in _default:
        _default[idx] = Stream(idx)
    return _default[idx]


def current_stream(device: Any = None) -> Stream:
    idx = _device._index(device, optional=True)
    return _current.get(idx) or default_stream(idx)


def set_stream(stream: Stream | None) -> None:
    if stream is not None:
        _current[stream.device.index or 0] = stream


class stream:
    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self.prev: Stream | None = None

    def __enter__(self) -> Stream | None:
        if self.stream is not None:
            self.prev = current_stream(self.stream.device)
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.prev is not None:
            set_stream(self.prev)


def wait_stream(stream: Stream) -> None:
    return None


def wait_event(event: Event) -> None:
    return None


def record_event(stream: Stream | None = None) -> Event:
    return (stream or current_stream()).record_event()


def query(stream: Stream | None = None) -> bool:
    return True
