"""Baselines keyed by content fingerprints: stable when lines shift, a multiset, fixed entries listed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from neuron_migrate.errors import ConfigError
from neuron_migrate.findings import Finding
from neuron_migrate.pipeline import baseline


def _roundtrip(findings: list[Finding], tmp_path: Path) -> baseline.Baseline:
    path = tmp_path / "baseline.json"
    path.write_text(baseline.dumps(baseline.from_findings(findings), "0.1.0"), encoding="utf-8")
    return baseline.load(path)


def test_shifted_lines_keep_the_baseline_valid(make_finding: Callable[..., Finding], tmp_path: Path) -> None:
    before = [make_finding("NM201", "train.py", 10, 4, source_line="    torch.cuda.synchronize()",
                           symbol="torch.cuda.synchronize"),
              make_finding("NM101", "train.py", 3, 18, source_line="m = Net().to('cuda')", symbol="cuda")]
    loaded = _roundtrip(before, tmp_path)
    # 25 lines inserted above, and the indentation changed: same findings, new positions
    after = [make_finding("NM201", "train.py", 35, 8, source_line="        torch.cuda.synchronize()",
                          symbol="torch.cuda.synchronize"),
             make_finding("NM101", "train.py", 28, 18, source_line="m = Net().to('cuda')", symbol="cuda")]
    applied = baseline.apply(loaded, after)
    assert applied.new == [] and applied.matched == 2 and applied.fixed == []


def test_new_and_fixed_findings(make_finding: Callable[..., Finding], tmp_path: Path) -> None:
    old = [make_finding("NM201", "a.py", 1, source_line="torch.cuda.synchronize()", symbol="s"),
           make_finding("NM201", "a.py", 5, source_line="torch.cuda.synchronize()", symbol="s"),
           make_finding("NM101", "b.py", 2, source_line="x.to('cuda')", symbol="cuda")]
    loaded = _roundtrip(old, tmp_path)
    assert [e.count for e in loaded.entries] == [2, 1]  # a multiset: same line twice in a.py
    fresh = make_finding("NM701", "c.py", 1, source_line="import flash_attn", symbol="flash_attn")
    now = [old[0], fresh]  # one synchronize and the device string were fixed
    applied = baseline.apply(loaded, now)
    assert applied.new == [fresh] and applied.matched == 1
    assert sorted((e.code, e.path, e.count) for e in applied.fixed) == [("NM101", "b.py", 1), ("NM201", "a.py", 1)]


def test_changed_source_is_a_new_finding(make_finding: Callable[..., Finding], tmp_path: Path) -> None:
    loaded = _roundtrip([make_finding("NM101", "a.py", 1, source_line="x.to('cuda')", symbol="cuda")], tmp_path)
    changed = make_finding("NM101", "a.py", 1, source_line="y.to('cuda')", symbol="cuda")
    assert baseline.apply(loaded, [changed]).new == [changed]


def test_file_is_versioned_and_readable(make_finding: Callable[..., Finding]) -> None:
    data = json.loads(baseline.dumps(baseline.from_findings([make_finding("NM101", "a.py", 1, symbol="cuda")])))
    assert data["format"] == "neuron-migrate-baseline" and data["version"] == baseline.BASELINE_VERSION
    (entry,) = data["entries"]
    assert {"fingerprint", "code", "path", "symbol", "count"} <= set(entry)
    assert "line" not in entry


@pytest.mark.parametrize("content, problem", [
    ("{not json", "not valid JSON"),
    ('{"format": "other"}', "not a neuron-migrate baseline"),
    ('{"format": "neuron-migrate-baseline", "version": 99, "entries": []}', "version 99"),
    ('{"format": "neuron-migrate-baseline", "version": 1, "entries": [{"code": "NM101"}]}', "entry 0"),
])
def test_bad_baseline_names_the_file(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=problem) as info:
        baseline.load(path)
    assert str(path) in str(info.value)


def test_missing_baseline(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        baseline.load(tmp_path / "nope.json")
