"""The README's quickstart is what CI runs: keep the two in step."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quickstart_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quickstart", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "README quickstart has no bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_quickstart_has_exactly_two_commands() -> None:
    commands = _quickstart_commands()
    assert len(commands) == 2
    # Both pin the local CPU build: a bare `torch` requirement could pull a multi-GB CUDA build.
    assert all("torch==2.13.0" in c for c in commands)
    assert "neuron-migrate" in commands[0]
    assert "pytest" in commands[1] and ".[test]" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _quickstart_commands()[1] in ci.splitlines()


def test_package_requirement_is_the_torchneuron_range() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"torch>=2.13,<2.15"' in pyproject


def test_ci_lints_and_type_checks_with_pinned_tools() -> None:
    import tomllib

    command = _quickstart_commands()[1]
    assert "ruff check ." in command and "&& mypy &&" in command
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["tool"]["ruff"] and project["tool"]["mypy"]["files"]
    extras = project["project"]["optional-dependencies"]["test"]
    for tool in ("ruff", "mypy"):  # rules change between minor releases: CI pins the series
        assert any(r.startswith(tool + ">=") and ",<" in r for r in extras), tool
