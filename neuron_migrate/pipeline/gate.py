"""The ONE place where a report becomes an exit code (ruff's contract, for every format and mode):

    0  nothing at or above `fail-on` (or `--exit-zero`, or `--write-baseline` just recorded it all)
    1  at least one finding at or above `fail-on`
    2  usage, configuration or internal error: raised as NeuronMigrateError, mapped at the CLI edge

Emitters and commands never compute exit codes themselves, so no output format can swallow a
failure (semgrep #2748, ruff #4093).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuron_migrate.config import FailOn
from neuron_migrate.findings import Finding, Report, Severity

if TYPE_CHECKING:
    from neuron_migrate.config import Settings

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2

_THRESHOLD: dict[FailOn, int | None] = {
    FailOn.ERROR: Severity.ERROR.rank,
    FailOn.WARNING: Severity.WARNING.rank,
    FailOn.INFO: Severity.INFO.rank,
    FailOn.NEVER: None,
}


def failing(report: Report, fail_on: FailOn) -> list[Finding]:
    """The findings at or above `fail_on`."""
    threshold = _THRESHOLD[fail_on]
    if threshold is None:
        return []
    return [f for f in report.findings if f.severity.rank >= threshold]


def exit_code(report: Report, settings: Settings) -> int:
    if settings.exit_zero or settings.write_baseline is not None:
        return EXIT_OK
    return EXIT_FINDINGS if failing(report, settings.fail_on) else EXIT_OK
