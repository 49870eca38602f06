"""Merging hand-written rank records, the gate's kinds and thresholds, baselines (no subprocess)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.check.advice import bucket_advice, split_variation
from neuron_migrate.check.records import load_dir, merge
from neuron_migrate.errors import ConfigError
from neuron_migrate.pipeline import gate
from neuron_migrate.ruleset.load import load_pack
from tests.check.conftest import run_cli

PROGRAM = "import torch\nx = torch.ones(2, device='neuron')\ny = torch.linalg.qr(x)\nz = model(x)\n"


def _site(root: Path, line: int) -> dict[str, Any]:
    return {"file": str(root / "train.py"), "line": line, "function": "<module>", "autograd_node": None}


def _record(root: Path, rank: int, batch: int) -> dict[str, Any]:
    sig = [[[4], "float32"], [[batch, 16], "float32"], [[16, 4], "float32"]]
    return {
        "schema_version": 1,
        "process": {"pid": 100 + rank, "rank": rank, "local_rank": rank, "world_size": 2, "argv": ["train.py"]},
        "ops": [
            {"name": "aten::linalg_qr.out", "kind": "fallback", "count": 2, "phases": {"fwd": 1, "bwd": 1},
             "signatures": [{"inputs": [[[4, 4], "float32"]], "count": 2}], "first_site": _site(root, 3)},
            {"name": "aten::addmm", "kind": "device", "count": 5, "phases": {"fwd": 5, "bwd": 0},
             "signatures": [{"inputs": sig, "count": 5}], "first_site": _site(root, 4)},
        ],
        "compiles": {"count": 2, "recompiles": 1, "sites": [
            {"site": _site(root, 4), "op": "aten::addmm", "phase": "fwd",
             "signatures": [sig, [[[4], "float32"], [[batch * 2, 16], "float32"], [[16, 4], "float32"]]],
             "recompiles": 1}]},
        "downcasts": [], "host_to_device": [{"site": _site(root, 2), "count": 4, "bytes": 32, "distinct_sources": 1}],
        "pre_init_allocations": {"watched": True, "count": 1, "bytes": 8, "first_site": _site(root, 2),
                                 "process_group_initialized": True},
        "dynamo": None, "exception": None,
    }


@pytest.fixture
def two_ranks(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(PROGRAM)
    records = tmp_path / "records"
    records.mkdir()
    for rank, batch in ((0, 3), (1, 5)):
        (records / f"neuron-emu-{100 + rank}-rank{rank}.json").write_text(json.dumps(_record(tmp_path, rank, batch)))
    return tmp_path


def test_merge_two_ranks(two_ranks: Path) -> None:
    m = merge(load_dir(two_ranks / "records"))
    qr = m.ops["aten::linalg_qr.out"]
    assert (qr.count, qr.fwd, qr.bwd, qr.ranks) == (4, 2, 2, {0, 1})
    assert list(qr.signatures.values()) == [([[[4, 4], "float32"]], 4)]
    (site,) = m.compile_sites.values()
    assert len(site.signatures) == 4 and site.ranks == {0, 1}  # batches 3, 6, 5, 10
    (h2d,) = m.h2d.values()
    assert (h2d["count"], h2d["bytes"], h2d["ranks"]) == (8, 64, {0, 1})
    assert (h2d["processes"], h2d["distinct_sources"]) == (2, 2)  # one constant per rank
    assert m.compiles == 4


def test_report_from_rank_records(two_ranks: Path) -> None:
    out = two_ranks / "r.json"
    result = run_cli(["--from-records", str(two_ranks / "records"), "--root", str(two_ranks),
                      "--output-json", str(out), "-q"])
    report = json.loads(out.read_text())
    found = sorted((f["code"], f["path"], f["span"]["line"]) for f in report["findings"])
    assert found == [("NM901", "train.py", 3), ("NM903", "train.py", 4), ("NM908", "train.py", 2),
                     ("NM911", "train.py", 2), ("NM911", "train.py", 2)]
    (rc,) = [f for f in report["findings"] if f["code"] == "NM903"]
    assert rc["details"]["varied_dimensions"][0]["values"] == [3, 5, 6, 10]
    assert rc["details"]["recompiles"] == 3
    assert result.exit_code == 1  # NM911 is an error


def test_gate_kinds_and_thresholds(two_ranks: Path) -> None:
    base = ["--from-records", str(two_ranks / "records"), "--root", str(two_ranks), "-q", "--format", "json"]
    assert run_cli([*base, "--fail-on", "never"]).exit_code == 0
    assert run_cli([*base, "--fail-on", "never,fallback"]).exit_code == 1
    assert run_cli([*base, "--fail-on", "never,fallback", "--max-fallback-ops", "1"]).exit_code == 0
    assert run_cli([*base, "--fail-on", "never", "--allow-ops", "aten::linalg_qr.out",
                    "--max-fallback-ops", "0"]).exit_code == 0
    assert run_cli([*base, "--fail-on", "never,recompile", "--max-recompiles", "2"]).exit_code == 1
    assert run_cli([*base, "--fail-on", "never,recompile", "--max-recompiles", "3"]).exit_code == 0
    assert run_cli([*base, "--exit-zero"]).exit_code == 0


def test_pyproject_thresholds_and_baseline(two_ranks: Path) -> None:
    (two_ranks / "pyproject.toml").write_text('[tool.neuron-migrate]\nfail-on = "never"\nmax-fallback-ops = 0\n')
    base = ["--from-records", str(two_ranks / "records"), "--root", str(two_ranks), "-q", "--format", "json",
            "--config", str(two_ranks / "pyproject.toml")]
    assert run_cli(base).exit_code == 1  # the configured threshold gates fallbacks
    baseline = two_ranks / "baseline.json"
    assert run_cli([*base, "--write-baseline", str(baseline)]).exit_code == 0
    result = run_cli([*base, "--baseline", str(baseline)])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["findings"] == []


def test_parse_fail_on() -> None:
    pack = load_pack()
    spec = gate.parse_fail_on("warning, fallback,recompile", pack)
    assert (spec.severity, spec.kinds) == ("warning", frozenset({"fallback", "recompile"}))
    with pytest.raises(ConfigError):
        gate.parse_fail_on("error,never", pack)
    with pytest.raises(ConfigError):
        gate.parse_fail_on("fallbacks", pack)


def test_split_variation_separates_calls_on_one_line_from_batch_sizes() -> None:
    def addmm(batch: int, n_in: int, n_out: int) -> list[Any]:
        return [[[n_out], "float32"], [[batch, n_in], "float32"], [[n_in, n_out], "float32"]]

    sigs = [addmm(b, i, o) for b in (3, 5, 8) for i, o in ((16, 32), (32, 4))]  # fc2(fc1(x))
    v = split_variation(sigs)
    assert {p.label(): vals for p, vals in v.varied.items()} == {"input 1 dim 0": [3, 5, 8]}
    assert (v.slots, v.variants, v.recompiles) == (2, 3, 4)


def test_split_variation_reads_only_tensors_in_a_list_input() -> None:
    """The record schema lets a list input nest any way (`[[]]`, found by the report fuzz test):
    only its `[shape, dtype]` items have sizes; an empty or deeper list has none."""
    sigs = [[[[[b, 4], "float32"], [], [[[1], "float32"]]]] for b in (2, 6)]
    v = split_variation(sigs)
    assert {p.label(): vals for p, vals in v.varied.items()} == {"input 0[0] dim 0": [2, 6]}


def test_bucket_advice_fits_observed_sizes() -> None:
    options = {o["strategy"]: (o["buckets"], o["compiles"]) for o in bucket_advice([7, 9, 30, 33, 64, 100, 120])}
    assert options == {"pad": ([120], 1), "powers_of_two": ([8, 16, 32, 64, 128], 5),
                       "fitted": ([9, 33, 64, 120], 4)}
    assert bucket_advice([5]) == []
    # an empty dimension (size 0, found by the report fuzz test) pads nothing: no division by zero
    assert all(0.0 <= o["padding"] <= 1.0 for o in bucket_advice([0, 3, 8, 17]))


def _single(root: Path, **keys: Any) -> Path:
    """A one-process backend record (no child record, as --from-records reads a bare backend run)."""
    rec = {**_record(root, 0, 3), "process": {"pid": 7, "rank": None, "local_rank": None, "world_size": None,
                                              "argv": ["train.py"]}, "pre_init_allocations": None, **keys}
    records = root / "records"
    records.mkdir()
    (records / "neuron-emu-7-rankx.json").write_text(json.dumps(rec))
    return records


def _from_records(root: Path, records: Path) -> dict[str, Any]:
    out = root / "r.json"
    run_cli(["--from-records", str(records), "--root", str(root), "--output-json", str(out), "-q"])
    return json.loads(out.read_text())


def test_host_to_device_new_data_each_copy_is_not_reported(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(PROGRAM)
    copies = [{"site": _site(tmp_path, 2), "count": 5, "bytes": 80, "distinct_sources": 5},  # batches
              {"site": _site(tmp_path, 3), "count": 5, "bytes": 80, "distinct_sources": 2}]  # neither
    report = _from_records(tmp_path, _single(tmp_path, host_to_device=copies))
    assert [f for f in report["findings"] if f["code"] == "NM908"] == []


def test_backend_mismatch_without_child_record_and_a_caught_one(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(PROGRAM)
    mismatch = {"op": "aten::addmm", "argument": "mat1", "argument_device": "cpu", "device": "neuron:0",
                "message": "Expected all tensors to be on the same device, but got mat1 is on cpu, different "
                           "from other tensors on neuron:0 (when checking argument in method wrapper_NEURON_addmm)",
                "site": _site(tmp_path, 4)}
    exception = {"type": "RuntimeError", "message": mismatch["message"], "site": _site(tmp_path, 4),
                 "traceback": [_site(tmp_path, 4)], "op": "aten::addmm", "argument": "mat1", "argument_device": "cpu"}
    report = _from_records(tmp_path, _single(tmp_path, device_mismatch=mismatch, exception=exception))
    (f,) = [f for f in report["findings"] if f["code"] == "NM910"]
    assert (f["symbol"], f["span"]["line"]) == ("`mat1` of aten::addmm is on cpu", 4)
    assert [f for f in report["findings"] if f["code"] == "NM912"] == []
    assert report["extras"]["check"]["caught_device_mismatches"] == []

    caught = tmp_path / "caught"
    caught.mkdir()
    (caught / "train.py").write_text(PROGRAM)
    mismatch["site"] = _site(caught, 4)
    report = _from_records(caught, _single(caught, device_mismatch=mismatch, exception=None))
    assert not [f for f in report["findings"] if f["code"] in ("NM910", "NM912")]
    assert report["extras"]["check"]["caught_device_mismatches"] == [
        {"op": "aten::addmm", "argument": "mat1", "argument_device": "cpu", "device": "neuron:0",
         "site": _site(caught, 4)}]


def test_mismatch_message_parse_is_the_fallback_without_a_record() -> None:
    from neuron_migrate.check.probe import hints

    named = ("Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors "
             "on neuron:0 (when checking argument in method wrapper_NEURON_addmm)")
    assert hints._parse(named) == {"op": "aten::addmm", "argument": "mat1", "argument_device": "cpu",
                                   "device": "neuron:0"}
    iterator = "Expected all tensors to be on the same device, but found at least two devices, neuron:0 and cpu!"
    assert hints._parse(iterator) == {"op": None, "argument": None, "argument_device": "cpu", "device": "neuron:0"}


def test_data_dependent_ops_are_host_work_by_the_op_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from neuron_migrate.check import analyze
    from neuron_migrate.check.records import load_dir as load

    (tmp_path / "train.py").write_text(PROGRAM)
    unique = {"name": "aten::unique_consecutive.default", "kind": "fallback", "count": 1,
              "signatures": [{"inputs": [[[4], "int64"]], "count": 1}], "first_site": _site(tmp_path, 3)}
    records = load(_single(tmp_path, ops=[unique], compiles={}, host_to_device=[]))

    def codes() -> list[str]:
        findings, _ = analyze.analyze(records, load_pack(), tmp_path)
        return [f.code for f in findings if f.symbol.startswith("aten::unique")]

    assert codes() == ["NM902"]  # rules/ops.yaml's data_dependent: host work, not a missing kernel
    table = analyze.load_ops()
    monkeypatch.setattr(analyze, "_op_table", lambda: dataclasses.replace(table, data_dependent=()))
    assert codes() == ["NM901"]
