"""The adversarial harness, bounded: every test here draws its cases with hypothesis
(derandomized, so CI runs the same cases each time). `NEURON_MIGRATE_FUZZ=N` multiplies every
test's case count by N (e.g. `NEURON_MIGRATE_FUZZ=20 python -m pytest tests/fuzz -n 2` for a long
hunt, which also lets hypothesis pick fresh cases)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

SCALE = max(1, int(os.environ.get("NEURON_MIGRATE_FUZZ", "1") or 1))


def bounded(examples: int) -> settings:
    """Settings for `examples` cases in CI (times NEURON_MIGRATE_FUZZ)."""
    return settings(
        max_examples=examples * SCALE,
        derandomize=SCALE == 1,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                               HealthCheck.data_too_large, HealthCheck.filter_too_much],
        print_blob=True,
    )


class Run:
    def __init__(self, exit_code: int, stdout: str, stderr: str) -> None:
        self.exit_code, self.stdout, self.stderr = exit_code, stdout, stderr

    def __repr__(self) -> str:
        return f"Run(exit_code={self.exit_code}, stdout={self.stdout[-600:]!r}, stderr={self.stderr[-600:]!r})"


def cli(*args: str, cwd: str | os.PathLike[str], env: dict[str, str] | None = None) -> Run:
    """`neuron-migrate ARGS` in-process in `cwd`, with only the NEURON_MIGRATE_* variables of `env`."""
    from typer.testing import CliRunner

    from neuron_migrate.cli import app

    saved = {k: v for k, v in os.environ.items() if k.startswith("NEURON_MIGRATE_") and k != "NEURON_MIGRATE_FUZZ"}
    here = os.getcwd()
    try:
        for k in saved:
            del os.environ[k]
        os.environ.update(env or {})
        os.chdir(cwd)
        result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    finally:
        os.chdir(here)
        for k in env or {}:
            os.environ.pop(k, None)
        os.environ.update(saved)
    return Run(result.exit_code, result.stdout, result.stderr)


def no_crash(run: Run) -> None:
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr + run.stdout, run
