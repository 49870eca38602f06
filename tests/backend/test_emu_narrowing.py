"""64-bit narrowing (neuron_emu.narrowing): with NEURON_MIGRATE_NARROW_64BIT=1 or set_narrowing(True),
device ops compute float64 as float32 and int64 as int32, as TorchNeuron does; copies, casts, CPU
fallbacks and 0-dim results stay exact. Off by default (CPU numerics)."""

from __future__ import annotations

from typing import Any

import pytest
from _emulated import Pending

CODE = """
x = torch.tensor([1.0 + 1e-12, 2.0], dtype=torch.float64)
big = torch.tensor([2**31 + 5, 7], dtype=torch.int64)
def probe():
    xn, bn = x.to("neuron"), big.to("neuron")
    return {"f64_mul": (xn * 1.0).cpu().tolist(), "i64_add": (bn + 0).cpu().tolist(),
            "copy": xn.cpu().tolist(), "cast": xn.to(torch.float32).double().cpu().tolist()[1],
            "f32": (xn.float() * 1.0).dtype.__str__(), "dtype": str((xn * 1.0).dtype),
            "zero_dim": (torch.tensor(2**31 + 5, device="neuron") + 0).item()}
result["env"] = neuron_emu.narrowing_enabled()
result["first"] = probe()
neuron_emu.set_narrowing(not neuron_emu.narrowing_enabled())
result["toggled"] = probe()
"""
RUNS = {"off": Pending(CODE), "on": Pending(CODE, env={"NEURON_MIGRATE_NARROW_64BIT": "1"})}
EXACT = {"f64_mul": [1.000000000001, 2.0], "i64_add": [2147483653, 7]}
NARROWED = {"f64_mul": [1.0, 2.0], "i64_add": [-2147483643, 7]}


@pytest.fixture(scope="module")
def r() -> dict[str, Any]:
    return {k: v.wait().result for k, v in RUNS.items()}


def _check(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert {k: got[k] for k in want} == want
    # a copy keeps every bit, 0-dim results are never cast, results keep their 64-bit dtype
    assert got["copy"] == [1.000000000001, 2.0] and got["zero_dim"] == 2**31 + 5
    assert got["dtype"] == "torch.float64" and got["cast"] == 2.0


def test_off_by_default_computes_like_the_cpu(r: dict[str, Any]) -> None:
    assert r["off"]["env"] is False
    _check(r["off"]["first"], EXACT)
    _check(r["off"]["toggled"], NARROWED)  # set_narrowing(True)


def test_env_switch_narrows_64_bit_results(r: dict[str, Any]) -> None:
    assert r["on"]["env"] is True
    _check(r["on"]["first"], NARROWED)
    _check(r["on"]["toggled"], EXACT)  # set_narrowing(False)
