"""The migration record, typed: what `build_record` assembles and `headline` derives.

The record's JSON (schema in record/build.py's docstring) is `MigrationRecord.to_dict()`: the keys
are the fields, in their order. A loaded record stays the JSON mapping (`validate` checks what the
views read); `Headline.from_dict` gives the views its headline typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class RecordRewrite:
    """The rewrite of the temporary copy."""

    target: str
    unsafe_fixes: bool
    files: list[dict[str, Any]]  # rewrite --format json `extras.files` entries (FileOutcome.to_dict)
    fixed: list[str]  # fingerprints of the scan findings it fixed
    remaining: list[dict[str, Any]]  # findings (to_dict) a scan of the rewritten copy reports
    idempotent: bool  # a second rewrite changed nothing
    second_run_changed: list[str]  # paths a second run would change (should be [])
    warnings: list[str]
    duration_s: float


@dataclass(frozen=True, slots=True)
class RecordCheck:
    """The check of the rewritten program (`report --run SCRIPT`)."""

    script: str
    args: list[str]
    launcher: str | None
    nproc_per_node: int | None
    exit_code: int | None  # of `neuron-migrate check`; None: it did not start
    duration_s: float
    error: str | None  # why there is no report (the output's tail)
    report: dict[str, Any] | None  # `check --format json`


@dataclass(frozen=True, slots=True)
class Commands:
    report: str  # this invocation, shell-quoted ("" when not from the command line)
    scan: str  # the equivalent single commands
    rewrite: str
    check: str | None  # what ran (None without --run)


@dataclass(frozen=True, slots=True)
class CheckHeadline:
    """The headline of the check of the rewritten program (when `report --run` ran one)."""

    check_completed: bool  # a report, exit 0 or 1, and no finding of a rule that `ends_run`
    check_exit_code: int | None  # of `neuron-migrate check`; None: it did not start
    fallback_ops: int  # distinct ops that fell back to the CPU
    host_syncs: int  # host-sync findings
    recompile_hotspots: int  # call sites that kept compiling
    runtime_findings: int  # every NM9xx finding


@dataclass(frozen=True, slots=True)
class Headline:
    """The numbers a reader wants first (the record's `headline`; its JSON is these fields, flat,
    the check's only when checked)."""

    sites: int  # scan findings
    errors: int
    files_with_findings: int
    files_scanned: int
    auto_fixable: int  # for the record's target
    auto_fixable_safe: int
    auto_fixable_share: float  # 4 places
    fixed_by_rewrite: int
    needs_person: int  # findings a scan of the rewritten copy reports
    rewrite_idempotent: bool
    check: CheckHeadline | None

    @property
    def checked(self) -> bool:
        return self.check is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "check"}
        out["checked"] = self.checked
        if self.check is not None:
            out.update((f.name, getattr(self.check, f.name)) for f in fields(self.check))
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Headline:
        """A loaded record's headline (KeyError when a field is missing: `validate` reports it)."""
        check = CheckHeadline(**{f.name: d[f.name] for f in fields(CheckHeadline)}) if d.get("checked") else None
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name != "check"}, check=check)


@dataclass(frozen=True, slots=True)
class MigrationRecord:
    kind: str  # RECORD_KIND
    schema_version: int
    created: str  # UTC, ISO 8601, seconds
    project: dict[str, str]  # {"path": absolute path as given, "name": its last component}
    target: str
    unsafe_fixes: bool
    versions: dict[str, Any]  # tool, python, torch, rule_pack (build.versions)
    commands: Commands
    scan: dict[str, Any]  # the scan Report's to_dict()
    rewrite: RecordRewrite
    check: RecordCheck | None
    settings: dict[str, Any]  # the effective selection and config (build.effective_settings)
    headline: Headline | None = None  # derived from the rest (build.headline)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Headline):
                value = value.to_dict()
            elif isinstance(value, (RecordRewrite, RecordCheck, Commands)):
                value = asdict(value)
            elif f.name == "headline":
                continue  # not derived yet
            out[f.name] = value
        return out
