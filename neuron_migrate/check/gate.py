"""check's gate: `--fail-on` takes a severity level (as in scan) and/or finding kinds.

    --fail-on error                   findings at or above a severity (the default: error)
    --fail-on fallback,recompile      also fail on these kinds; thresholds: a kind fails when its
                                      count exceeds --max-fallback-ops (distinct ops) or
                                      --max-recompiles (recompiles in all), otherwise on any finding
    --fail-on never,fallback          only the kinds

A threshold given on its own (CLI or `[tool.neuron-migrate]`) gates its kind too. The severity part
is `neuron_migrate.pipeline.gate`'s, so exit codes mean the same as in scan: 0 pass, 1 fail, 2 error.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuron_migrate.config import FailOn, Settings
from neuron_migrate.errors import ConfigError
from neuron_migrate.findings import Report
from neuron_migrate.pipeline import gate

KINDS: dict[str, tuple[str, ...]] = {
    "fallback": ("NM901",),
    "host-sync": ("NM902",),
    "recompile": ("NM903", "NM905", "NM906"),
    "graph-break": ("NM904",),
    "placement": ("NM907", "NM908", "NM910", "NM911", "NM914"),
    "dtype": ("NM909",),
    "parity": ("NM915",),
    "exception": ("NM912", "NM913"),
}


@dataclass(frozen=True, slots=True)
class FailOnSpec:
    severity: str | None  # a FailOn value, or None: keep the configured one
    kinds: frozenset[str]


def parse_fail_on(text: str | None) -> FailOnSpec:
    if not text:
        return FailOnSpec(None, frozenset())
    severity, kinds = None, set()
    levels = {f.value for f in FailOn}
    for item in (t.strip().lower() for t in text.split(",") if t.strip()):
        if item in levels:
            if severity is not None and severity != item:
                raise ConfigError(f"--fail-on: two severity levels ({severity}, {item})")
            severity = item
        elif item in KINDS:
            kinds.add(item)
        else:
            raise ConfigError(
                f"--fail-on: {item!r} is neither a severity ({', '.join(levels)}) "
                f"nor a kind ({', '.join(KINDS)})"
            )
    return FailOnSpec(severity, frozenset(kinds))


def recompiles(report: Report) -> int:
    """Recompiles in the report: eager ones per call site, torch.compile recompiles, and the
    limit (counted once each)."""
    total = 0
    for f in report.findings:
        if f.code == "NM903":
            total += int(f.details.get("recompiles", 1))
        elif f.code in ("NM905", "NM906"):
            total += 1
    return total


def kind_failures(report: Report, settings: Settings, kinds: frozenset[str]) -> list[str]:
    """Why the kinds gate fails (empty: it passes)."""
    kinds = set(kinds)
    if settings.max_fallback_ops is not None:
        kinds.add("fallback")
    if settings.max_recompiles is not None:
        kinds.add("recompile")
    reasons = []
    for kind in sorted(kinds):
        found = [f for f in report.findings if f.code in KINDS[kind]]
        if kind == "fallback":
            ops = sorted({f.symbol for f in found})
            limit = settings.max_fallback_ops or 0
            if len(ops) > limit:
                reasons.append(f"{len(ops)} CPU fallback op(s) > {limit} allowed: {', '.join(ops)}")
        elif kind == "recompile":
            n, limit = recompiles(report), settings.max_recompiles or 0
            if n > limit:
                reasons.append(f"{n} recompile(s) > {limit} allowed")
        elif found:
            reasons.append(f"{len(found)} {kind} finding(s)")
    return reasons


def exit_code(report: Report, settings: Settings, kinds: frozenset[str]) -> tuple[int, list[str]]:
    if settings.exit_zero or settings.write_baseline is not None:
        return gate.EXIT_OK, []
    reasons = kind_failures(report, settings, kinds)
    severe = gate.failing(report, settings.fail_on)
    if severe:
        reasons.insert(0, f"{len(severe)} finding(s) at or above {settings.fail_on.value}")
    return (gate.EXIT_FINDINGS if reasons else gate.EXIT_OK), reasons
