"""Raw scan results -> the Report every emitter and the gate read.

Order matters and is fixed here (all of it after the cache, which stores raw findings):
  1. inline suppressions on raw findings (+ NM006 for directives that silence nothing);
  2. rule selection (`select`/`ignore`; NM0xx tool diagnostics stay unless ignored, as ruff keeps
     syntax errors), then `per-file-ignores`;
  3. per-code severity overrides (the most specific selector wins);
  4. the baseline (only new findings stay; fixed entries are listed in `extras`);
  5. the diff filter (only findings on changed lines stay);
  6. sorting by (path, cell, line, col, code).
`check` builds its Report from NM9xx findings and reuses `finalize` for steps 2-6.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuron_migrate import __version__
from neuron_migrate.config import PerFileIgnore, Settings
from neuron_migrate.findings import EXTRA_BASELINE, EXTRA_DIFF, EXTRA_SUPPRESSED, Finding, Report, Severity
from neuron_migrate.pipeline.suppress import UNUSED_CODE, apply_directives
from neuron_migrate.ruleset.model import RulePack
from neuron_migrate.ruleset.select import expand, select_codes

if TYPE_CHECKING:
    from neuron_migrate.pipeline.gitdiff import ChangedLines
    from neuron_migrate.scan.result import ScanResult

TOOL_FAMILY = "NM0"


def enabled_codes(pack: RulePack, settings: Settings) -> set[str]:
    ignore = (*settings.ignore, *settings.extend_ignore)
    enabled = select_codes(pack, settings.select, ignore)
    if settings.extend_select:  # widens the selection, explicit or default (some rules are off by default)
        enabled |= select_codes(pack, settings.extend_select, ignore)
    if any(code.startswith(TOOL_FAMILY) for code in pack.rules):
        # The scan's own diagnostics always show; an unused suppression is a lint like any rule,
        # reported only when selected (ruff's RUF100).
        enabled |= select_codes(pack, [TOOL_FAMILY], ignore) - {UNUSED_CODE}
    return enabled


def _severity_overrides(pack: RulePack, settings: Settings) -> dict[str, Severity]:
    out: dict[str, Severity] = {}
    # Apply broad selectors first so that NM201 = "error" beats NM2 = "info".
    for selector, severity in sorted(settings.severity.items(), key=lambda kv: len(kv[0])):
        for code in expand(pack, selector):
            out[code] = severity
    return out


@lru_cache(maxsize=64)
def _spec(glob: str) -> Any:
    import pathspec  # only when per-file-ignores are configured

    return pathspec.PathSpec.from_lines("gitignore", [glob])


def _per_file_ignored(pack: RulePack, rules: Sequence[PerFileIgnore], root: Path) -> Any:
    expanded = [(r, set().union(*(expand(pack, c) for c in r.codes))) for r in rules]

    def ignored(f: Finding) -> bool:
        absolute = root / f.path
        for rule, codes in expanded:
            if f.code not in codes:
                continue
            try:
                rel = absolute.relative_to(rule.base).as_posix()
            except ValueError:
                rel = f.path
            if _spec(rule.glob).match_file(rel):
                return True
        return False

    return ignored


def finalize(
    command: str,
    root: str,
    findings: Iterable[Finding],
    settings: Settings,
    pack: RulePack,
    *,
    files_scanned: int = 0,
    duration_s: float = 0.0,
    extras: dict[str, Any] | None = None,
    changed: ChangedLines | None = None,
) -> Report:
    """Steps 2-6: selection, per-file ignores, severities, baseline, diff filter, sorting."""
    extras = dict(extras or {})
    enabled = enabled_codes(pack, settings)
    kept = [f for f in findings if f.code in enabled]
    if settings.per_file_ignores:
        ignored = _per_file_ignored(pack, settings.per_file_ignores, Path(root))
        kept = [f for f in kept if not ignored(f)]
    overrides = _severity_overrides(pack, settings)
    kept = [f.with_severity(overrides[f.code]) if f.code in overrides else f for f in kept]
    kept.sort(key=lambda f: f.sort_key)

    if settings.baseline is not None:
        from neuron_migrate.pipeline import baseline

        applied = baseline.apply(baseline.load(settings.baseline), kept)
        kept = applied.new
        extras[EXTRA_BASELINE] = {
            "path": str(settings.baseline),
            "matched": applied.matched,
            "fixed": [e.to_dict() for e in applied.fixed],
        }

    if settings.diff_against is not None:
        if changed is None:
            from neuron_migrate.pipeline.gitdiff import changed_lines

            changed = changed_lines(Path(root), settings.diff_against)
        before = len(kept)
        kept = [
            f for f in kept
            if changed.covers(Path(root) / f.path, f.span.line, whole_file=f.cell is not None)
        ]
        extras[EXTRA_DIFF] = {"against": settings.diff_against, "outside": before - len(kept)}

    return Report(
        command=command,
        root=root,
        findings=tuple(kept),
        files_scanned=files_scanned,
        duration_s=duration_s,
        tool_version=__version__,
        pack_version=pack.version,
        extras=extras,
    )


def build_report(
    result: ScanResult,
    settings: Settings,
    pack: RulePack | None = None,
    *,
    changed: ChangedLines | None = None,
) -> Report:
    """The scan Report: suppressions on each file's raw findings, then `finalize`.

    `pack` defaults to the shipped pack plus `settings.extra_rules`; `changed` (tests) replaces
    asking git when `settings.diff_against` is set.
    """
    if pack is None:
        from neuron_migrate.ruleset.load import load_pack

        pack = load_pack(settings.extra_rules)
    findings: list[Finding] = []
    suppressed = 0
    for file in result.files:
        applied = apply_directives(file.path, file.findings, file.directives, pack)
        findings += applied.kept
        findings += applied.unused
        suppressed += applied.suppressed
    return finalize(
        "scan",
        result.root,
        findings,
        settings,
        pack,
        files_scanned=result.files_scanned,
        duration_s=result.duration_s,
        extras={EXTRA_SUPPRESSED: suppressed} if suppressed else {},
        changed=changed,
    )
