"""Process-level behaviour: a forked child that touches a device its parent used raises (use spawn,
as TorchNeuron says); activation refuses a torch version the private-API module was not checked on;
importing the Dynamo backend leaves Dynamo's config alone."""

from __future__ import annotations

from typing import Any

import pytest
from _emulated import Pending

CODE = """
import os

def in_child(fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            fn()
            msg = "ok"
        except RuntimeError as exc:
            msg = "RuntimeError: " + str(exc)
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    return os.read(r, 4096).decode()

touch = lambda: (torch.ones(2, device="neuron") + 1).cpu()
result["fork_before_use"] = in_child(touch)
x = torch.ones(2, device="neuron")
result["fork_after_use"] = in_child(touch)
result["fork_cpu_work"] = in_child(lambda: torch.ones(2) + 1)
result["bad_fork_flag"] = [torch.neuron._is_in_bad_fork(), in_child(
    lambda: None if torch.neuron._is_in_bad_fork() else (_ for _ in ()).throw(RuntimeError("flag unset")))]
result["parent_still_works"] = (x + 1).cpu().tolist()

from neuron_emu import _torch_private
result["versions"] = [_torch_private.version_problem("2.14.1+cpu"), _torch_private.version_problem("2.13.0"),
                      _torch_private.version_problem("2.15.0")]
result["symbols_present"] = _torch_private.missing_symbols(with_dynamo=True)
_torch_private.SYMBOLS["torch._C._no_such_private_symbol"] = "planted"
result["missing"] = _torch_private.version_problem()
"""
RUN = Pending(CODE)
IMPORT_ONLY = Pending("""
import torch._dynamo
before = torch._dynamo.config.automatic_dynamic_shapes
import neuron_emu.compile
result["config"] = [before, torch._dynamo.config.automatic_dynamic_shapes]
f = torch.compile(lambda t: t * 2, backend="neuron")
f(torch.ones(2, device="neuron"))
result["after_compile"] = torch._dynamo.config.automatic_dynamic_shapes
""")


@pytest.fixture(scope="module")
def r() -> dict[str, Any]:
    return RUN.wait().result


def test_forked_child_of_a_device_user_raises_and_says_spawn(r: dict[str, Any]) -> None:
    assert r["fork_before_use"] == "ok"
    assert r["fork_after_use"].startswith("RuntimeError: Cannot re-initialize the Neuron runtime")
    assert "'spawn'" in r["fork_after_use"]
    assert r["fork_cpu_work"] == "ok"
    assert r["bad_fork_flag"] == [False, "ok"]
    assert r["parent_still_works"] == [2.0, 2.0]


def test_activation_refuses_an_unchecked_torch(r: dict[str, Any]) -> None:
    ok_214, ok_213, refused = r["versions"]
    assert ok_214 is None and ok_213 is None
    assert "torch 2.15.0 is not a version it was checked on" in refused
    assert "neuron_emu/_torch_private.py" in refused
    assert r["symbols_present"] == []  # every private symbol the emulator lists exists in this torch
    assert "lacks private symbols it relies on: torch._C._no_such_private_symbol" in r["missing"]


def test_importing_the_backend_leaves_dynamo_config_alone() -> None:
    res = IMPORT_ONLY.wait().result
    assert res["config"] == [True, True]
    assert res["after_compile"] is False  # the neuron backend forces static shapes once used
