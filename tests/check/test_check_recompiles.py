"""Recompiles (NM903) per call site with exact counts: calls with fixed shapes are not recompiles,
batch sizes and growing sequences are, and only the dimensions that vary are named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.emit.check_text import render
from neuron_migrate.findings import Finding, Report
from tests.check.conftest import PROGRAMS, CheckRun, check_program


def line_of(text: str) -> int:
    """The line of programs/recompiles.py that contains `text`."""
    lines = (PROGRAMS / "recompiles.py").read_text(encoding="utf-8").splitlines()
    (number,) = [i for i, line in enumerate(lines, 1) if text in line]
    return number


@pytest.fixture(scope="module")
def fixed_shapes(tmp_path_factory: pytest.TempPathFactory) -> CheckRun:
    # Disjoint shapes, so the three scenarios do not share compiles.
    return check_program(tmp_path_factory.mktemp("fixed"), "recompiles.py", args=("fixed", "same_line", "generate",
                                                                                      "two_callers"))


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory: pytest.TempPathFactory) -> CheckRun:
    return check_program(tmp_path_factory.mktemp("evaluation"), "recompiles.py", args=("eval_batch", "eval_dtype"))


@pytest.fixture(scope="module")
def batches(tmp_path_factory: pytest.TempPathFactory) -> CheckRun:
    return check_program(tmp_path_factory.mktemp("batches"), "recompiles.py", args=("batches",))


def by_line(run: CheckRun) -> dict[int, dict[str, Any]]:
    return {f["span"]["line"]: f for f in run.findings("NM903")}


def test_two_layers_with_fixed_shapes_trained_at_one_batch_size_never_recompile(fixed_shapes: CheckRun) -> None:
    found = by_line(fixed_shapes)
    train_lines = {line_of(t) for t in ("return self.fc2(", "x = torch.ones(batch", "loss = F.mse_loss",
                                        "loss.backward()", "opt.step()")}
    assert train_lines.isdisjoint(found)


def test_two_calls_of_one_op_on_a_line_with_fixed_shapes_are_not_recompiles(fixed_shapes: CheckRun) -> None:
    assert line_of("torch.ones(3, 5") not in by_line(fixed_shapes)


def test_growing_sequence_has_one_signature_per_length(fixed_shapes: CheckRun) -> None:
    found = by_line(fixed_shapes)
    assert sorted(found) == [line_of("tokens = torch.cat(")]  # nothing else recompiles in this run
    d = found[line_of("tokens = torch.cat(")]["details"]
    assert (d["distinct_signatures"], d["recompiles"], d["method"]) == (6, 5, "passes")
    cat = next(op for op in d["ops"] if op["op"] == "aten::cat")
    assert cat["varied"] == {"input 0[0] dim 1": [4, 5, 6, 7, 8, 9]}
    assert d["varied_dimensions"][0]["options"][0]["buckets"] == [9]  # pad to the longest
    assert fixed_shapes.report["extras"]["check"]["compiles"]["eager_recompiles"] == 5


def test_batch_sizes_recompile_once_per_new_size_and_only_the_batch_varies(batches: CheckRun) -> None:
    found = by_line(batches)
    forward = line_of("return self.fc2(")
    assert sorted(found) == sorted([forward, line_of("x = torch.ones(batch"), line_of("loss = F.mse_loss"),
                                    line_of("loss.backward()")])  # not opt.step(): parameters keep their shapes
    for f in found.values():
        d = f["details"]
        assert d["distinct_signatures"] == 3, f["symbol"]
        assert [dim["values"] for dim in d["varied_dimensions"]] == [[16, 24, 32]], f["symbol"]
    d = found[forward]["details"]
    ops = {op["op"]: (op["signatures"], op["slots"], op["recompiles"], op["varied"]) for op in d["ops"]}
    assert ops == {
        "aten::addmm": (6, 2, 4, {"input 1 dim 0": [16, 24, 32]}),  # fc1 and fc2: 2 slots x 3 sizes
        "aten::relu": (3, 1, 2, {"input 0 dim 0": [16, 24, 32]}),
    }
    assert (d["compiles"], d["recompiles"]) == (9, 6)
    assert "a size varied over 16, 24, 32; pad to 32 (1 compile)" in found[forward]["message"]


def test_one_function_called_from_two_lines_with_fixed_shapes_is_not_a_recompile(fixed_shapes: CheckRun) -> None:
    assert line_of("return x * 0.5") not in by_line(fixed_shapes)


def test_a_module_evaluated_at_another_batch_size_recompiles_in_its_forward(evaluation: CheckRun) -> None:
    forward = by_line(evaluation)[line_of("return self.fc(x).tanh()")]
    ops = {op["op"]: op for op in forward["details"]["ops"]}
    assert ops["aten::addmm"]["varied"] == {"input 1 dim 0": [4, 12]}  # eval_batch: the training and evaluate() calls
    assert ops["aten::addmm"]["dtypes"] == {"input 0": ["bfloat16", "float32"], "input 1": ["bfloat16", "float32"],
                                            "input 2": ["bfloat16", "float32"]}  # eval_dtype
    assert ops["aten::tanh"]["dtypes"] == {"input 0": ["bfloat16", "float32"]}
    assert forward["details"]["recompiles"] == 4  # addmm and tanh, once per scenario
    assert "a size varied over 4, 12" in forward["message"]
    assert line_of("return model(torch.ones(batch") not in by_line(evaluation)  # its only call


def test_a_dtype_change_is_named_with_the_advice_to_keep_one_autocast_region(tmp_path: Path) -> None:
    run = check_program(tmp_path, "recompiles.py", args=("eval_dtype",))
    (forward,) = run.findings("NM903")
    assert forward["span"]["line"] == line_of("return self.fc(x).tanh()")
    assert forward["details"]["varied_dimensions"] == []
    assert "the dtype changed (bfloat16 then float32)" in forward["message"]
    assert "same autocast region" in forward["message"]
    text = render(Report("check", str(tmp_path), (Finding.from_dict(forward),)), color=False, summary=False)
    assert "aten::tanh (fwd): 2 compiles, dtype input 0: bfloat16 then float32" in text
