"""`check` says how to get torch when the Python that would run the program has none, or an
unsupported release, instead of failing inside the child (scan and rewrite never need it)."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError
from pathlib import Path
from typing import Any

import pytest

from neuron_migrate.check import torch_requirement


def _torch_version(value: str | None) -> Callable[[str], str]:
    def version(name: str) -> str:
        if name == "torch" and value is not None:
            return value
        raise PackageNotFoundError(name)

    return version


@pytest.mark.parametrize(("installed", "problem"), [
    (None, "torch is not installed"),
    ("2.9.1", "torch 2.9.1 is installed"),
    ("2.15.0+cpu", "torch 2.15.0+cpu is installed"),
    ("2.13.0+cpu", None),
    ("2.14.1", None),
])
def test_torch_problem(monkeypatch: pytest.MonkeyPatch, installed: str | None, problem: str | None) -> None:
    monkeypatch.setattr(torch_requirement, "version", _torch_version(installed))
    found = torch_requirement.torch_problem()
    assert found is None if problem is None else (found or "").startswith(problem)


def test_check_without_torch_is_a_usage_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cli: Callable[..., Any]
) -> None:
    monkeypatch.setattr(torch_requirement, "version", _torch_version(None))
    script = tmp_path / "train.py"
    script.write_text("print('never runs')\n", encoding="utf-8")
    run = cli("check", str(script))
    assert run.exit_code == 2, run
    assert "torch is not installed" in run.stderr and "neuron-migrate[check]" in run.stderr
    assert "Traceback" not in run.stderr and "never runs" not in run.stdout + run.stderr
