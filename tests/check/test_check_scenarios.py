"""Each runtime finding kind from one purpose-built program (programs/scenarios.py), exact counts."""

from __future__ import annotations

import pytest

from tests.check.conftest import CheckRun, check_program

# Line numbers of programs/scenarios.py.
FORWARD, PARAM_CALL, INPUT_COPY, QR, F64_ONES, F64_MUL, NONZERO, MASK, ADD = 11, 18, 17, 19, 20, 21, 22, 23, 24


def codes(run: CheckRun) -> list[str]:
    return sorted(f["code"] for f in run.report["findings"])


def test_exactly_the_expected_findings(scenarios: CheckRun) -> None:
    assert codes(scenarios) == ["NM901", "NM902", "NM903", "NM907", "NM908", "NM909", "NM909", "NM910"]
    assert scenarios.exit_code == 1  # NM907 and NM910 are errors
    assert {f["path"] for f in scenarios.report["findings"]} == {"scenarios.py"}


def test_cpu_fallback_per_op(scenarios: CheckRun) -> None:
    (f,) = scenarios.findings("NM901")
    assert f["symbol"] == "aten::linalg_qr.out"
    assert f["span"]["line"] == QR
    d = f["details"]
    assert (d["count"], d["phases"], d["device_kernel"]) == (1, {"fwd": 1, "bwd": 0}, False)
    assert [s["inputs"] for s in d["signatures"]] == [[[[4, 4], "float32"]]]


def test_expected_host_work_is_kept_apart(scenarios: CheckRun) -> None:
    (f,) = scenarios.findings("NM902")
    assert (f["symbol"], f["span"]["line"], f["severity"]) == ("aten::nonzero", NONZERO, "info")
    assert f["details"]["device_kernel"] is True


def test_recompiles_with_varied_dimension_and_buckets(scenarios: CheckRun) -> None:
    (f,) = scenarios.findings("NM903")
    d = f["details"]
    assert f["span"]["line"] == FORWARD
    assert (d["distinct_signatures"], d["compiles"], d["recompiles"]) == (3, 6, 4)
    assert {op["op"]: op["varied"] for op in d["ops"]} == {
        "aten::addmm": {"input 1 dim 0": [3, 5, 8]},
        "aten::mul.Tensor": {"input 0 dim 0": [3, 5, 8]},
    }
    (dim,) = d["varied_dimensions"]
    assert [(o["strategy"], o["buckets"], o["compiles"]) for o in dim["options"]] == [
        ("pad", [8], 1), ("powers_of_two", [4, 8], 2), ("fitted", [3, 8], 2),
    ]
    assert "pad to 8 (1 compile)" in f["message"]


def test_parameter_left_on_cpu(scenarios: CheckRun) -> None:
    (f,) = scenarios.findings("NM907")
    assert (f["symbol"], f["span"]["line"]) == ("Scaled.scale", PARAM_CALL)
    assert (f["details"]["kind"], f["details"]["calls"], f["details"]["shape"]) == ("parameter", 3, [4])


def test_repeated_host_to_device_copies_but_not_inputs_or_the_model_transfer(scenarios: CheckRun) -> None:
    # the CPU parameter is uploaded again in every forward; each step's new input batch is not a finding
    found = {f["span"]["line"]: f["details"] for f in scenarios.findings("NM908")}
    assert {line: (d["count"], d["bytes"], d["distinct_sources"]) for line, d in found.items()} == {
        FORWARD: (3, 3 * 4 * 4, 1),
    }
    assert INPUT_COPY not in found


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> CheckRun:
    return check_program(tmp_path_factory.mktemp("copies"), "copies.py")


def test_constant_uploaded_every_step_but_not_a_new_batch(copies: CheckRun) -> None:
    (f,) = copies.findings("NM908")  # line 7's fresh batch per step is input feeding
    assert (f["span"]["line"], f["severity"]) == (8, "warning")
    d = f["details"]
    assert (d["count"], d["distinct_sources"], d["bytes"], d["bytes_per_copy"]) == (5, 1, 5 * 16, 16)
    assert "same data" in f["message"] and "device once" in f["message"]


def test_item_is_a_host_sync_not_a_device_or_fallback_op(copies: CheckRun) -> None:
    assert codes(copies) == ["NM902", "NM908"]
    (f,) = copies.findings("NM902")
    assert (f["span"]["line"], f["severity"], f["details"]["count"], f["details"]["kinds"]) == (9, "info", 2,
                                                                                                {"item": 2})
    assert "2 value reads back to the host here" in f["message"]
    ops = copies.report["extras"]["check"]["ops"]
    assert (ops["cpu_fallback"], ops["device_share"], ops["host_syncs"]) == (0, 1.0, 2)
    assert ops["host_sync_ops"] == {"aten::_local_scalar_dense": 2}
    assert copies.exit_code == 0


def test_float64_downcast_per_site(scenarios: CheckRun) -> None:
    found = sorted((f["span"]["line"], f["symbol"]) for f in scenarios.findings("NM909"))
    assert found == [(F64_ONES, "aten::ones"), (F64_MUL, "aten::mul.Tensor")]


def test_device_mismatch_hint_and_trimmed_traceback(scenarios: CheckRun) -> None:
    (f,) = scenarios.findings("NM910")
    d = f["details"]
    assert f["span"]["line"] == ADD
    assert [(fr["line"], fr["source"]) for fr in d["frames"]] == [(ADD, "z = y + mask")]
    hint = d["mismatch"]  # op and argument from the backend's record: the message names neither
    assert (hint["op"], hint["argument"], hint["argument_device"], hint["device"]) == (
        "aten::add.Tensor", "other", "cpu", "neuron:0")
    assert (hint["cause"], hint["created_at"]) == ("tensor_without_device", MASK)
    assert f["symbol"] == "`other` of aten::add.Tensor is on cpu"
    assert "`mask`" in f["message"] and "device=" in f["message"]
    assert scenarios.report["extras"]["check"]["caught_device_mismatches"] == []


def test_summary(scenarios: CheckRun) -> None:
    s = scenarios.report["extras"]["check"]
    assert s["ops"]["cpu_fallback"] == 1
    assert s["ops"]["distinct_fallback_ops"] == ["aten::linalg_qr.out"]
    assert 0 < s["ops"]["device_share"] < 1
    assert s["compiles"]["eager_recompiles"] == 4
    assert s["exit"] == [{"rank": None, "status": "exception", "code": 1}]
    # The JSON is the typed summary's (check.summary.RunSummary): its keys, in this order.
    assert list(s) == ["program", "processes", "ranks", "ops", "compiles", "narrowed_64bit",
                       "caught_device_mismatches", "allowed_ops", "wall_s", "exit", "problems", "values"]
    assert list(s["ops"]) == ["device", "cpu_fallback", "device_share", "distinct_fallback_ops", "host_compute",
                              "host_syncs", "host_sync_ops"]


@pytest.mark.parametrize("fmt", ["text", "sarif", "junit", "markdown", "github"])
def test_formats_from_records(scenarios: CheckRun, fmt: str) -> None:
    from tests.check.conftest import run_cli

    result = run_cli(["--from-records", str(scenarios.records), "--root", str(scenarios.root), "--format", fmt])
    assert result.exit_code == 1
    assert "NM910" in result.stdout and "scenarios.py" in result.stdout
