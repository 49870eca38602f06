"""`check --pytest`: the `neuron_allow_ops` marker is honoured as `pytest --neuron-emulate` honours
it, and a failing test is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.check.conftest import run_cli

pytestmark = pytest.mark.slow

TESTS = '''
import pytest
import torch


@pytest.mark.neuron_allow_ops("aten::normal_")
def test_random_init_is_allowed_here():
    assert torch.randn(4, 4, device="neuron").shape == (4, 4)


def test_that_fails():
    assert torch.ones(2, device="neuron").sum().item() == 3
'''


def test_marker_allows_the_op_and_the_failing_test_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "test_sample.py").write_text(TESTS)
    monkeypatch.chdir(tmp_path)
    report = tmp_path / "report.json"
    result = run_cli(["--output-json", str(report), "-q", "--pytest", "test_sample.py", "--", "-q",
                      "-p", "no:cacheprovider"])
    findings = json.loads(report.read_text())["findings"]
    assert not [f for f in findings if f["code"] == "NM901" and f["symbol"] == "aten::normal_"]
    assert "aten::normal_" in json.loads(report.read_text())["extras"]["check"]["allowed_ops"]
    [failed] = [f for f in findings if f["code"] == "NM912"]
    assert "test_sample.py::test_that_fails" in failed["message"]
    assert failed["details"]["failed_tests"] == ["test_sample.py::test_that_fails"]
    assert result.exit_code == 1


def test_an_op_used_outside_the_marked_test_is_still_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "test_sample.py").write_text(TESTS + '''

def test_random_elsewhere():
    assert torch.randn(2, device="neuron").numel() == 2
''')
    monkeypatch.chdir(tmp_path)
    report = tmp_path / "report.json"
    run_cli(["--output-json", str(report), "-q", "--pytest", "test_sample.py", "--", "-q", "-p", "no:cacheprovider"])
    [normal] = [f for f in json.loads(report.read_text())["findings"] if f["symbol"] == "aten::normal_"]
    assert normal["details"]["count"] == 1  # the marked test's call is allowed, this one's is not


CRASHING = '''
import os
import time

import torch


def test_crashes_the_process():
    x = torch.ones(4, 4, device="neuron")
    q, r = torch.linalg.qr(x)
    for _ in range(30):
        y = (x @ x).sum()
        time.sleep(0.05)
    os._exit(5)
'''


def test_a_test_that_kills_the_process_leaves_what_it_recorded(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The running test's tracker checkpoints the records too: the crash is at a line of the test,
    and the fallback recorded before it is reported."""
    (tmp_path / "test_crash.py").write_text(CRASHING)
    monkeypatch.chdir(tmp_path)
    report = tmp_path / "report.json"
    result = run_cli(["--output-json", str(report), "-q", "--pytest", "test_crash.py", "--", "-q",
                      "-p", "no:cacheprovider"])
    assert result.exit_code == 1
    findings = json.loads(report.read_text())["findings"]
    [crash] = [f for f in findings if f["code"] == "NM912"]
    assert crash["details"]["returncode"] == 5 and crash["details"]["last_site_from"] == "checkpoint"
    assert (crash["path"], crash["span"]["line"] in (11, 12, 13)) == ("test_crash.py", True)  # the loop
    assert [f["span"]["line"] for f in findings if f["code"] == "NM901"] == [10]  # qr, before the crash
