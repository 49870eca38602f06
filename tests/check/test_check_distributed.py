"""Real distributed patterns under `check --launcher torchrun` (2 and 4 ranks) and mp.spawn under
plain `check`: every rank's device is `neuron:<local_rank>`, DDP (with and without device_ids),
FSDP2 and DTensor tensor parallelism on `init_device_mesh("neuron")` alone match a single-process CPU
reference, every collective returns the right values, and a checkpoint saved on rank 0 loads onto
each rank's own device."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.check.conftest import CheckRun, check_program

pytestmark = pytest.mark.slow
TOL = 1e-6


def _ranks(run: CheckRun, out: Path, world: int) -> dict[int, dict[str, Any]]:
    ranks = {}
    for path in out.glob("rank*.json"):
        data = json.loads(path.read_text())
        ranks[data["rank"]] = data
    assert set(ranks) == set(range(world)), run.stdout[-3000:]
    return ranks


@pytest.fixture(scope="module", params=[2, 4], ids=["2-ranks", "4-ranks"])
def patterns(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    world = request.param
    tmp = tmp_path_factory.mktemp(f"dist{world}")
    out = tmp / "out"
    out.mkdir()
    run = check_program(tmp, "dist_patterns.py", "--launcher", "torchrun", "--nproc-per-node", str(world),
                        args=(str(out),))
    return {"world": world, "run": run, "ranks": _ranks(run, out, world)}


def test_run_is_clean_and_merged(patterns: dict[str, Any]) -> None:
    run, world = patterns["run"], patterns["world"]
    s = run.report["extras"]["check"]
    assert (s["processes"], s["ranks"]) == (world, list(range(world)))
    assert not run.findings("NM911")  # nothing touched the device before the process group
    assert run.exit_code == 0, run.stdout[-3000:]


def test_each_rank_owns_neuron_local_rank(patterns: dict[str, Any]) -> None:
    world = patterns["world"]
    for rank, r in patterns["ranks"].items():
        assert r["world"] == world
        assert r["device"] == [world, rank, rank, f"neuron:{rank}"]
        assert f"owns only neuron:{rank}" in r["other_device"]  # set_device(another rank's index)
        assert f"owns only neuron:{rank}" in r["explicit_other"]  # x.to("neuron:<another rank>")
        assert r["streams"] == [f"neuron:{rank}"] * 3


@pytest.mark.parametrize("variant", ["ddp_device_ids", "ddp_no_device_ids"])
def test_ddp_matches_cpu_reference(patterns: dict[str, Any], variant: str) -> None:
    for rank, r in patterns["ranks"].items():
        d = r[variant]
        assert d["grad_device"] == f"neuron:{rank}"
        assert d["grads_equal_across_ranks"] is True and d["params_equal_across_ranks"] is True
        assert d["max_diff_vs_cpu"] < TOL


def test_collectives(patterns: dict[str, Any]) -> None:
    world = patterns["world"]
    total = float(sum(range(1, world + 1)))
    for rank, r in patterns["ranks"].items():
        assert r["all_reduce_sum"] == [[total] * 4, f"neuron:{rank}"]
        assert r["all_reduce_max"] == world - 1
        assert r["broadcast"] == 5.0
        assert r["all_gather_into_tensor"] == [float(i) for i in range(world) for _ in range(2)]
        assert r["all_gather"] == [10.0 * i for i in range(world)]
        assert r["reduce_scatter_tensor"] == [world * rank + world * (world - 1) / 2]
        assert r["reduce_on_0"] == (total if rank == 0 else None)
        assert r["all_to_all_single"] == [rank + 10.0 * j for j in range(world)]
        assert r["all_gather_object"] == list(range(world))


def test_checkpoint_loads_onto_each_ranks_device(patterns: dict[str, Any]) -> None:
    for rank, r in patterns["ranks"].items():
        assert r["checkpoint"] == {"devices": [f"neuron:{rank}"], "equal": True, "load_state_dict": True}


def test_fsdp2_matches_cpu_reference(patterns: dict[str, Any]) -> None:
    for rank, r in patterns["ranks"].items():
        assert r["fsdp2"]["local_device"] == f"neuron:{rank}"
        assert r["fsdp2"]["max_diff_vs_cpu"] < TOL


def test_tensor_parallel_matches_cpu_reference(patterns: dict[str, Any]) -> None:
    world = patterns["world"]
    for r in patterns["ranks"].values():
        tp = r["tensor_parallel"]
        assert tp["local_shard"] == [16 // world, 8]
        assert tp["output_max_diff"] < 1e-5 and tp["grad_max_diff"] < TOL


def test_mp_spawn_workers(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir(parents=True)
    run = check_program(tmp_path, "dist_spawn.py", args=(str(out),))
    ranks = _ranks(run, out, 2)
    for rank, r in ranks.items():
        assert r["device"] == [2, rank] and r["param_device"] == f"neuron:{rank}"
        assert r["grads_equal_across_ranks"] is True and r["max_diff_vs_cpu"] < TOL
    assert run.exit_code == 0, run.stdout[-3000:]
