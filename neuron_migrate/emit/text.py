"""Terminal format: `path:line:col: CODE message` per finding, then the summary."""

from __future__ import annotations

from neuron_migrate.emit.escape import printable
from neuron_migrate.emit.options import EmitOptions
from neuron_migrate.emit.summary import Summary, plural, summarize
from neuron_migrate.findings import Finding, Report, Severity


def _one_line(text: str) -> str:
    return printable(" ".join(text.split()))


def finding_line(f: Finding) -> str:
    return f"{printable(f.location())}: {f.code} {_one_line(f.message)}"


def _counts(pairs: tuple[tuple[str, int], ...]) -> str:
    return ", ".join(f"{name} {n}" for name, n in pairs if n)


def summary_lines(s: Summary) -> list[str]:
    scanned = f"{plural(s.files_scanned, 'file')} scanned in {s.duration_s:.2f} s"
    if s.diff_against:
        scanned += f", only lines changed since {s.diff_against}"
    if not s.total:
        lines = [f"No findings; {scanned}."]
    else:
        severities = ", ".join(
            plural(n, sev.value, "info" if sev is Severity.INFO else None)
            for sev, n in s.by_severity
            if n
        )
        lines = [
            (
                f"Found {plural(s.total, 'finding')} ({severities}) in "
                f"{plural(s.files_with_findings, 'file')}; {scanned}."
            ),
            f"By category: {_counts(s.by_category)}",
            f"By fix class: {_counts(tuple((c.value, n) for c, n in s.by_fix_class))}",
            (
                f"Auto-fixable for target {s.target.value}: {s.fixable} of {s.total} "
                f"({s.fixable_share:.0%}): {s.fixable_safe} safe (rewrite --apply), "
                f"{s.fixable_unsafe} unsafe (rewrite --apply --unsafe-fixes)"
            ),
            "Files with most work:",
            *(f"  {n:>5}  {printable(path)}" for path, n in s.top_files),
        ]
    if s.suppressed:
        lines.append(f"{plural(s.suppressed, 'finding')} suppressed by inline comments.")
    if s.baseline_matched is not None:
        lines.append(
            f"Baseline: {plural(s.baseline_matched, 'known finding')} not shown; "
            f"{plural(len(s.baseline_fixed), 'baseline entry', 'baseline entries')} now fixed"
            + (":" if s.baseline_fixed else ".")
        )
        lines.extend(
            printable(f"  {e.code} {e.path} {e.symbol}".rstrip()) + (f" (x{e.count})" if e.count > 1 else "")
            for e in s.baseline_fixed
        )
    return lines


def emit(report: Report, options: EmitOptions) -> str:
    lines = [finding_line(f) for f in report.findings]
    if options.summary:
        if lines:
            lines.append("")
        lines.extend(summary_lines(summarize(report, options.target, options.top_files)))
    return "\n".join(lines) + "\n" if lines else ""
