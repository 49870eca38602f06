"""A tiny project whose findings have known severities, and a runner for the real CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from neuron_migrate.cli import app

# NM101 (a "cuda" device string) is an error; NM206 (torch.cuda.synchronize) a warning.
ERROR_PY = 'import torch\n\nx = torch.zeros(2).to("cuda")\n'
WARNING_PY = "import torch\n\ntorch.cuda.synchronize()\n"
CLEAN_PY = 'print("nothing to migrate")\n'


@pytest.fixture
def project(tmp_path: Path) -> Callable[..., Path]:
    """make(error=True, warning=True, clean=True) -> a fresh project directory."""

    def make(*, error: bool = True, warning: bool = True, clean: bool = True, name: str = "proj") -> Path:
        root = tmp_path / name
        root.mkdir()
        for wanted, file, text in ((error, "err.py", ERROR_PY), (warning, "warn.py", WARNING_PY),
                                   (clean, "clean.py", CLEAN_PY)):
            if wanted:
                (root / file).write_text(text, encoding="utf-8")
        return root

    return make


class Run:
    def __init__(self, exit_code: int, stdout: str, stderr: str) -> None:
        self.exit_code, self.stdout, self.stderr = exit_code, stdout, stderr

    def __repr__(self) -> str:
        return f"Run(exit_code={self.exit_code}, stdout={self.stdout[-800:]!r}, stderr={self.stderr[-800:]!r})"


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Run]:
    """cli(*args, cwd=dir) runs `neuron-migrate ARGS` in-process, with a clean environment."""
    for name in [n for n in __import__("os").environ if n.startswith("NEURON_MIGRATE_")]:
        monkeypatch.delenv(name)

    def run(*args: str, cwd: Path | None = None) -> Run:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        result = CliRunner().invoke(app, list(args), catch_exceptions=False)
        return Run(result.exit_code, result.stdout, result.stderr)

    return run
