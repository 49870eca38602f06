"""``torch.neuron`` streams and events. Emulated execution is synchronous, so they only keep order
bookkeeping and timing; every wait returns immediately.

Events are ``torch.Event`` subclasses timed on the host clock. The generic ``torch.Event`` is
replaced by such a subclass too (:func:`install`): the Python device guard torch offers a Python
backend implements no ``elapsedTime``/``synchronizeEvent`` (they raise "Backend doesn't support
..."), and ``torch.Event`` is an immutable C++ type. The replacement is what ``torch.Event(...)``
creates, so ``torch.Event(enable_timing=True)``/``record``/``elapsed_time``/``synchronize`` work;
``isinstance(e, torch.Event)`` still holds for events C++ creates. Those (``torch.Stream(device=
'neuron').record_event()`` on a stream C++ made) keep the guard's behaviour: ``query``/``wait``
work, ``synchronize``/``elapsed_time`` raise the guard's "Backend doesn't support" errors, as for any
backend whose guard lacks them.

``torch.neuron.Stream`` is a ``torch.Stream`` subclass with its own stream ids (0 is the default
stream). The Python device guard keeps no current stream, so ``torch.accelerator.current_stream`` /
``set_stream`` are routed to ``torch.neuron``'s for the `neuron` device: ``with
torch.neuron.stream(s)`` and ``torch.accelerator.current_stream()`` agree.

Device indices follow the process's device (a launched worker on local rank r owns `neuron:r`):
the Python guard answers index 0 for every stream C++ makes, so the generic ``torch.Stream`` is
replaced like ``torch.Event``: ``torch.Stream("neuron")``/``torch.Stream(r)``/``torch.Stream()``
(DDP's copy and mixed-precision streams) make a ``torch.neuron.Stream`` on the designated (or
current) device, and an event recorded on a stream reports that stream's device.
"""

from __future__ import annotations

import functools
import itertools
import time
from typing import Any, Self

import torch

from neuron_emu import device as _device

_stream_ids = itertools.count(1)  # 0 is each device's default stream, as on CUDA


_TorchStream = torch.Stream  # the C++ class; install() rebinds the name torch.Stream


class _CppKin(type):
    # Streams and events created in C++ are instances of the C++ class only; they are still
    # torch.Streams / torch.Events. Only the class naming `_cpp` in its own body claims them (not
    # its subclasses, such as torch.neuron.Stream).
    def __instancecheck__(cls, obj: object) -> bool:
        cpp = cls.__dict__.get("_cpp")
        return type.__instancecheck__(cls, obj) or (cpp is not None and isinstance(obj, cpp))

    def __subclasscheck__(cls, sub: type) -> bool:
        cpp = cls.__dict__.get("_cpp")
        return type.__subclasscheck__(cls, sub) or (cpp is not None and issubclass(sub, cpp))


def _designated(device: Any) -> torch.device | None:
    """The device a ``torch.Stream(device)`` call names (None: the current accelerator)."""
    if device is None:
        return torch.accelerator.current_accelerator()
    if isinstance(device, int):
        acc = torch.accelerator.current_accelerator()
        return None if acc is None else torch.device(acc.type, device)
    return torch.device(device)


class GenericStream(_TorchStream, metaclass=_CppKin):
    """``torch.Stream`` once the emulator is active: a `neuron` stream is a ``torch.neuron.Stream``
    on the designated or current device; other devices' streams are torch's own."""

    _cpp = _TorchStream

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is GenericStream and "stream_id" not in kwargs and len(args) <= 2:
            device = args[0] if args else kwargs.get("device")
            dev = _designated(device)
            if dev is not None and dev.type == _device.BACKEND:
                priority = args[1] if len(args) > 1 else kwargs.get("priority", 0)
                return Stream(dev, priority)
        return super().__new__(cls, *args, **kwargs)


GenericStream.__module__, GenericStream.__name__, GenericStream.__qualname__ = "torch", "Stream", "Stream"
GenericStream.__doc__ = f"{_TorchStream.__doc__}\n{GenericStream.__doc__}"


class Stream(_TorchStream):
    """A `neuron` stream: a ``torch.Stream`` (so ``Tensor.record_stream``, ``torch.accelerator
    .set_stream`` and ``isinstance(s, torch.Stream)`` accept it), always idle on the emulator.
    ``with s:`` makes it the current stream, as ``with torch.neuron.stream(s):`` does."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> Self:
        index = _device._index(device, optional=True)
        stream_id = kwargs.get("stream_id")
        return super().__new__(cls, stream_id=next(_stream_ids) if stream_id is None else stream_id,
                               device_index=index, device_type=_device_type())

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.priority = priority

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def wait_stream(self, stream: Any) -> None:
        return None

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def __enter__(self) -> Self:
        self._entered = stream(self)
        self._entered.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._entered.__exit__(*exc)

    def __repr__(self) -> str:
        return f"<torch.neuron.Stream device={self.device} stream_id={self.stream_id}>"


@functools.cache
def _device_type() -> int:
    return _TorchStream(device=_device.BACKEND).device_type


_TorchEvent = torch.Event  # the C++ class; install() rebinds the name torch.Event


class GenericEvent(_TorchEvent, metaclass=_CppKin):
    """``torch.Event`` once the emulator is active: `neuron` events are timed on the host clock
    (execution is synchronous, so host time is device time); other devices' events are untouched."""

    _cpp = _TorchEvent

    def __init__(self, device: Any = None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self._t: float | None = None
        self._index: int | None = None

    def _emulated(self) -> bool:
        return _TorchEvent.device.__get__(self).type == _device.BACKEND  # type: ignore[attr-defined]

    @property  # type: ignore[override]
    def device(self) -> torch.device:
        """The device of the stream it was last recorded on (no index before a record), as torch's."""
        base: torch.device = _TorchEvent.device.__get__(self)  # type: ignore[attr-defined]
        index = getattr(self, "_index", None)
        return base if index is None else torch.device(base.type, index)

    def record(self, stream: Any = None) -> None:
        if not self._emulated():
            return super().record(stream) if stream is not None else super().record()
        self._index = (stream if stream is not None else current_stream()).device.index
        self._t = time.perf_counter()

    def query(self) -> bool:
        return True if self._emulated() else super().query()

    def wait(self, stream: Any = None) -> None:
        if not self._emulated():
            return super().wait(stream) if stream is not None else super().wait()
        return None

    def synchronize(self) -> None:
        return None if self._emulated() else super().synchronize()

    def elapsed_time(self, end_event: Any) -> float:
        if not self._emulated():
            return super().elapsed_time(end_event)
        if not (self.enable_timing and getattr(end_event, "enable_timing", False)):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._t is None or getattr(end_event, "_t", None) is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._t - self._t) * 1000.0


GenericEvent.__module__, GenericEvent.__name__, GenericEvent.__qualname__ = "torch", "Event", "Event"
GenericEvent.__doc__ = f"{_TorchEvent.__doc__}\n{GenericEvent.__doc__}"


class Event(GenericEvent):
    """A `neuron` event (``torch.neuron.Event``, ``torch.cuda.Event``'s signature);
    ``elapsed_time`` measures host wall time between records."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> Self:
        return super().__new__(cls, _device.BACKEND, enable_timing=enable_timing, blocking=blocking,
                               interprocess=interprocess)

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        super().__init__(_device.BACKEND, enable_timing=enable_timing)



def install() -> None:
    """Make ``torch.Event`` the host-timed subclass (see the module docstring), and let
    ``torch.accelerator``'s current stream be ``torch.neuron``'s (the Python device guard keeps none)."""
    torch.Event = GenericEvent  # type: ignore[misc]
    torch.Stream = GenericStream  # type: ignore[misc]
    _orig_accelerator.update(current_stream=torch.accelerator.current_stream,
                             set_stream=torch.accelerator.set_stream)
    torch.accelerator.current_stream = _accelerator_current_stream
    torch.accelerator.set_stream = _accelerator_set_stream


_orig_accelerator: dict[str, Any] = {}


def _on_neuron(device: Any) -> bool:
    if device is None:
        acc = torch.accelerator.current_accelerator()
        return acc is not None and acc.type == _device.BACKEND
    return isinstance(device, int) or torch.device(device).type == _device.BACKEND


def _accelerator_current_stream(device: Any = None, /) -> torch.Stream:
    if not _on_neuron(device):
        return _orig_accelerator["current_stream"](device)
    return current_stream(device)


def _accelerator_set_stream(stream: torch.Stream) -> None:
    if stream.device.type != _device.BACKEND:
        return _orig_accelerator["set_stream"](stream)
    set_stream(stream)
    return None


_default: dict[int, Stream] = {}
_current: dict[int, torch.Stream] = {}


def default_stream(device: Any = None) -> Stream:
    idx = _device._index(device, optional=True)
    if idx not in _default:
        _default[idx] = Stream(idx, stream_id=0)
    return _default[idx]


def current_stream(device: Any = None) -> torch.Stream:
    idx = _device._index(device, optional=True)
    return _current.get(idx) or default_stream(idx)


def set_stream(stream: torch.Stream | None) -> None:
    if stream is not None:
        # a stream C++ made reports the Python guard's index 0: on a launched worker, its own device
        _current[_device.guard_resolved(stream.device.index)] = stream


class stream:
    def __init__(self, stream: torch.Stream | None) -> None:
        self.stream = stream
        self.prev: torch.Stream | None = None

    def __enter__(self) -> torch.Stream | None:
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
