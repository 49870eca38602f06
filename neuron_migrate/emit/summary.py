"""Counts shared by the text and Markdown summaries (and the JSON `summary` object)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from neuron_migrate.findings import EXTRA_BASELINE, EXTRA_DIFF, EXTRA_SUPPRESSED, FixClass, Report, Severity, Target

# Keys of `Report.extras` written by the pipeline and read here.


@dataclass(frozen=True, slots=True)
class FixedEntry:
    code: str
    path: str
    symbol: str
    count: int


@dataclass(frozen=True, slots=True)
class Summary:
    total: int
    files_with_findings: int
    files_scanned: int
    duration_s: float
    by_severity: tuple[tuple[Severity, int], ...]  # every severity, most severe first
    by_category: tuple[tuple[str, int], ...]  # most findings first
    by_fix_class: tuple[tuple[FixClass, int], ...]  # every class, in enum order
    by_code: tuple[tuple[str, int], ...]  # by code
    fixable_safe: int  # a safe fix exists for the target: `rewrite --apply` does it
    fixable_unsafe: int  # an unsafe fix exists: needs `--unsafe-fixes`
    top_files: tuple[tuple[str, int], ...]
    target: Target
    suppressed: int
    baseline_matched: int | None  # None: no baseline in use
    baseline_fixed: tuple[FixedEntry, ...]
    diff_against: str | None

    @property
    def fixable(self) -> int:
        return self.fixable_safe + self.fixable_unsafe

    @property
    def fixable_share(self) -> float:
        return self.fixable / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "files_with_findings": self.files_with_findings,
            "by_severity": {s.value: n for s, n in self.by_severity},
            "by_category": dict(self.by_category),
            "by_fix_class": {c.value: n for c, n in self.by_fix_class},
            "by_code": dict(self.by_code),
            "fixable": {
                "target": self.target.value,
                "safe": self.fixable_safe,
                "unsafe": self.fixable_unsafe,
                "share": round(self.fixable_share, 4),
            },
            "top_files": [{"path": p, "count": n} for p, n in self.top_files],
        }


def _most_first(counter: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def summarize(report: Report, target: Target = Target.NEURON, top: int = 5) -> Summary:
    findings = report.findings
    severities = Counter(f.severity for f in findings)
    classes = Counter(f.fix_class for f in findings)
    applicable = Counter(fix.applicability for f in findings if (fix := f.fix_for(target)))
    per_file = Counter(f.path for f in findings)
    baseline = report.extras.get(EXTRA_BASELINE)
    diff = report.extras.get(EXTRA_DIFF)
    return Summary(
        total=len(findings),
        files_with_findings=len(per_file),
        files_scanned=report.files_scanned,
        duration_s=report.duration_s,
        by_severity=tuple((s, severities[s]) for s in sorted(Severity, key=lambda s: -s.rank)),
        by_category=_most_first(Counter(f.category for f in findings)),
        by_fix_class=tuple((c, classes[c]) for c in FixClass),
        by_code=tuple(sorted(Counter(f.code for f in findings).items())),
        fixable_safe=applicable[FixClass.SAFE],
        fixable_unsafe=applicable[FixClass.UNSAFE],
        top_files=_most_first(per_file)[:top],
        target=target,
        suppressed=int(report.extras.get(EXTRA_SUPPRESSED, 0)),
        baseline_matched=int(baseline["matched"]) if baseline else None,
        baseline_fixed=tuple(
            FixedEntry(e["code"], e["path"], e.get("symbol", ""), int(e.get("count", 1)))
            for e in (baseline or {}).get("fixed", ())
        ),
        diff_against=diff["against"] if diff else None,
    )


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"
