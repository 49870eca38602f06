"""Records -> the check Report, through the same pipeline as scan (selection, severities, baseline)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from neuron_migrate.check.analyze import analyze
from neuron_migrate.check.records import Records
from neuron_migrate.config import Settings
from neuron_migrate.findings import EXTRA_CHECK, Report
from neuron_migrate.pipeline.finalize import finalize
from neuron_migrate.ruleset.model import RulePack


def build_report(
    records: Records,
    settings: Settings,
    pack: RulePack,
    *,
    root: Path,
    program: str,
    duration_s: float = 0.0,
    timeout: dict[str, Any] | None = None,
    crash: dict[str, Any] | None = None,
    parity: dict[str, Any] | None = None,
    survivors: tuple[dict[str, Any], ...] = (),
) -> Report:
    findings, summary = analyze(records, pack, root, allow_ops=settings.allow_ops, timeout=timeout, crash=crash,
                                parity=parity, survivors=survivors)
    files = {f.path for f in findings}
    return finalize("check", str(root), findings, settings, pack, files_scanned=len(files),
                    duration_s=duration_s, extras={EXTRA_CHECK: replace(summary, program=program).to_dict()})
