"""check on programs shaped like real ones: HF generate, an accelerate trainer that stayed on the
CPU, a model never moved, loops over fixed shapes inside an optimizer step."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.check.conftest import PROGRAMS, CheckRun, check_program

pytestmark = pytest.mark.slow


def line_of(program: str, text: str) -> int:
    lines = (PROGRAMS / program).read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if text in line)


def _line(f: dict) -> int:
    return int(f["span"]["line"])


# -- HF generate: the library's loop recompiles, reported at the user's generate() line -------
@pytest.fixture(scope="module")
def generate(tmp_path_factory: pytest.TempPathFactory) -> CheckRun:
    pytest.importorskip("transformers")
    return check_program(tmp_path_factory.mktemp("generate"), "hf_generate.py")


def test_generate_with_a_growing_cache_recompiles_at_the_generate_line(generate: CheckRun) -> None:
    at = line_of("hf_generate.py", "out = model.generate(")
    found = [f for f in generate.findings("NM903") if _line(f) == at]
    assert len(found) == 1, generate.report["findings"]
    d = found[0]["details"]
    assert d["recompiles"] >= 8 and d["distinct_signatures"] >= 8  # one per new token
    assert "cache_implementation" in d["advice"] and "static" in found[0]["message"]
    grown = next(dim["values"] for dim in d["varied_dimensions"] if len(dim["values"]) >= 8)
    assert sum(b - a == 1 for a, b in itertools.pairwise(grown)) >= 7  # one token per step


def test_a_static_cache_drops_the_advice_and_most_recompiles(generate: CheckRun, tmp_path: Path) -> None:
    static = check_program(tmp_path, "hf_generate.py", args=("static",))
    at = line_of("hf_generate.py", "out = model.generate(")
    dynamic = next(f for f in generate.findings("NM903") if _line(f) == at)["details"]
    found = [f["details"] for f in static.findings("NM903") if _line(f) == at]
    assert all("advice" not in d for d in found)
    assert sum(d["recompiles"] for d in found) < dynamic["recompiles"] / 3


# -- nothing on the device ------------------------------------------------------------------
def test_an_accelerate_trainer_on_the_cpu_fails_with_the_cause(tmp_path: Path) -> None:
    pytest.importorskip("accelerate")
    run = check_program(tmp_path, "accelerate_cpu.py")
    assert run.exit_code == 1
    [f] = run.findings("NM914")
    assert f["severity"] == "error"
    assert f["details"]["cause"] == "library_chose_cpu" and f["details"]["library_devices"]["accelerate"] == "cpu"
    assert "Accelerator()" in f["message"]
    assert f["details"]["device_ops"] == 0


def test_accelerate_left_to_choose_is_reported_exactly_when_it_chose_the_cpu(tmp_path: Path) -> None:
    pytest.importorskip("accelerate")
    run = check_program(tmp_path, "accelerate_cpu.py", args=("auto",))
    found = run.findings("NM914")
    chose = next(iter(found), {"details": {}})["details"].get("library_devices", {}).get("accelerate")
    if found:  # no torch_neuronx here: accelerate picks the CPU, and check says so
        assert chose == "cpu" and run.exit_code == 1
    else:  # accelerate found the device: the model ran there
        assert run.report["findings"] == [] or all(f["code"] != "NM914" for f in run.report["findings"])


def test_a_model_never_moved_is_named_at_its_first_cpu_call(tmp_path: Path) -> None:
    run = check_program(tmp_path, "cpu_only.py")
    [f] = run.findings("NM914")
    assert f["details"]["cause"] == "model_not_moved"
    assert _line(f) == line_of("cpu_only.py", "loss = torch.nn.functional.mse_loss(model(x), y)")
    assert "Sequential" in f["message"] and run.exit_code == 1


def test_a_program_that_used_the_device_has_no_nm914(scenarios: CheckRun) -> None:
    assert scenarios.findings("NM914") == []


# -- fixed shapes inside one call are one-time compiles -------------------------------------
def test_loops_over_fixed_shapes_in_a_step_are_not_recompiles(tmp_path: Path) -> None:
    run = check_program(tmp_path, "fixed_loops.py")
    reported = {_line(f) for f in run.findings("NM903")}
    for quiet in ("b /= world_size", "torch.zeros_like(p)", "buf.mul_(0.9)", "return torch.stack(norms)"):
        assert line_of("fixed_loops.py", quiet) not in reported, quiet
    # the smaller last batch of each epoch is a recompile, though the second epoch compiles nothing new
    for real in ("x = torch.ones(n, 8", "return self.b(torch.relu", "out.sum().backward()"):
        assert line_of("fixed_loops.py", real) in reported, real


def test_a_comprehension_over_each_parameter_group_is_not_a_recompile(tmp_path: Path) -> None:
    run = check_program(tmp_path, "fixed_loops.py")
    assert line_of("fixed_loops.py", "torch.stack([g.norm()") not in {_line(f) for f in run.findings("NM903")}
