"""The ONE place where a report becomes an exit code (ruff's contract, for every format and mode):

    0  nothing at or above `fail-on` (or `--exit-zero`, or `--write-baseline` just recorded it all)
    1  at least one finding at or above `fail-on`, a failing kind (check), or a regression (diff)
    2  usage, configuration or internal error: raised as NeuronMigrateError, mapped at the CLI edge

`check --fail-on` also takes finding kinds (the `kind` of each NM9xx rule, listed in
rules/pack.yaml `runtime_kinds`):

    --fail-on error                   findings at or above a severity (the default: error)
    --fail-on fallback,recompile      also fail on these kinds; thresholds: a kind fails when its
                                      count exceeds --max-fallback-ops (distinct ops) or
                                      --max-recompiles (recompiles in all), otherwise on any finding
    --fail-on never,fallback          only the kinds

A threshold given on its own (CLI or `[tool.neuron-migrate]`) gates its kind too.

Emitters and commands never compute exit codes themselves, so no output format can swallow a
failure (semgrep #2748, ruff #4093).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from neuron_migrate.config import FailOn
from neuron_migrate.errors import ConfigError
from neuron_migrate.findings import Finding, Report, Severity

if TYPE_CHECKING:
    from neuron_migrate.config import Settings
    from neuron_migrate.ruleset.model import RulePack

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2

_THRESHOLD: dict[FailOn, int | None] = {
    FailOn.ERROR: Severity.ERROR.rank,
    FailOn.WARNING: Severity.WARNING.rank,
    FailOn.INFO: Severity.INFO.rank,
    FailOn.NEVER: None,
}
FALLBACK, RECOMPILE = "fallback", "recompile"  # the kinds with a threshold


@dataclass(frozen=True, slots=True)
class FailOnSpec:
    severity: str | None  # a FailOn value, or None: keep the configured one
    kinds: frozenset[str]


def parse_fail_on(text: str | None, pack: RulePack) -> FailOnSpec:
    if not text:
        return FailOnSpec(None, frozenset())
    severity, kinds = None, set()
    levels = {f.value for f in FailOn}
    for item in (t.strip().lower() for t in text.split(",") if t.strip()):
        if item in levels:
            if severity is not None and severity != item:
                raise ConfigError(f"--fail-on: two severity levels ({severity}, {item})")
            severity = item
        elif item in pack.kinds:
            kinds.add(item)
        else:
            raise ConfigError(
                f"--fail-on: {item!r} is neither a severity ({', '.join(levels)}) "
                f"nor a kind ({', '.join(pack.kinds)})"
            )
    return FailOnSpec(severity, frozenset(kinds))


def failing(report: Report, fail_on: FailOn) -> list[Finding]:
    """The findings at or above `fail_on`."""
    threshold = _THRESHOLD[fail_on]
    if threshold is None:
        return []
    return [f for f in report.findings if f.severity.rank >= threshold]


def recompiles(report: Report, pack: RulePack) -> int:
    """Recompiles in the report: eager ones per call site (a finding's `recompiles` detail), and
    one for each other recompile finding (torch.compile recompiles, the limit)."""
    return sum(int(f.details.get("recompiles", 1)) for f in report.findings
               if f.code in pack.codes_of_kind(RECOMPILE))


def kind_failures(report: Report, settings: Settings, kinds: frozenset[str], pack: RulePack) -> list[str]:
    """Why the kinds gate fails (empty: it passes)."""
    wanted = set(kinds)
    if settings.max_fallback_ops is not None:
        wanted.add(FALLBACK)
    if settings.max_recompiles is not None:
        wanted.add(RECOMPILE)
    reasons = []
    for kind in sorted(wanted):
        found = [f for f in report.findings if f.code in pack.codes_of_kind(kind)]
        if kind == FALLBACK:
            ops = sorted({f.symbol for f in found})
            limit = settings.max_fallback_ops or 0
            if len(ops) > limit:
                reasons.append(f"{len(ops)} CPU fallback op(s) > {limit} allowed: {', '.join(ops)}")
        elif kind == RECOMPILE:
            n, limit = recompiles(report, pack), settings.max_recompiles or 0
            if n > limit:
                reasons.append(f"{n} recompile(s) > {limit} allowed")
        elif found:
            reasons.append(f"{len(found)} {kind} finding(s)")
    return reasons


def failures(report: Report, settings: Settings, pack: RulePack) -> list[str]:
    """Why the run fails (empty: it passes): findings at or above `fail-on`, then failing kinds."""
    if settings.exit_zero or settings.write_baseline is not None:
        return []
    reasons = kind_failures(report, settings, settings.fail_on_kinds, pack)
    severe = failing(report, settings.fail_on)
    if severe:
        reasons.insert(0, f"{len(severe)} finding(s) at or above {settings.fail_on.value}")
    return reasons


def exit_code(report: Report, settings: Settings, pack: RulePack) -> int:
    return EXIT_FINDINGS if failures(report, settings, pack) else EXIT_OK


def regression_exit(regression: bool) -> int:
    """`diff`: a regression between two records fails like a finding."""
    return EXIT_FINDINGS if regression else EXIT_OK


def record_exit_code(check_requested: bool, check_completed: bool) -> int:
    """`report`: 1 when it was asked to check the rewritten program and that check did not complete
    (did not start, crashed, raised, timed out); the findings themselves are `diff`'s to gate."""
    return EXIT_FINDINGS if check_requested and not check_completed else EXIT_OK
