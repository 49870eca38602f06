"""Terminal format: `path:line:col: CODE [severity] message` per finding, then the summary.

The severity is on every line because the exit code depends on it (`--fail-on`). `show_source`
adds the source line and a caret under the span (ruff's `--show-source`); `statistics` replaces
the findings with one count per code (ruff's `--statistics`).
"""

from __future__ import annotations

from collections import Counter

from neuron_migrate.emit.escape import printable
from neuron_migrate.emit.options import EmitOptions
from neuron_migrate.emit.summary import Summary, plural, summarize
from neuron_migrate.findings import Finding, Report, Severity


def _one_line(text: str) -> str:
    return printable(" ".join(text.split()))


def finding_line(f: Finding) -> str:
    return f"{printable(f.location())}: {f.code} [{f.severity.value}] {_one_line(f.message)}"


def _shown(text: str) -> str:
    # A tab becomes one space so the caret row lines up whatever the terminal's tab stops.
    return printable(text.replace("\t", " "))


def source_context(f: Finding) -> list[str]:
    """The finding's source line, numbered, with carets under its span (none for a file-level finding)."""
    line = f.source_line
    if not line.strip():
        return []
    start = min(f.span.col, len(line))
    end = f.span.end_col if f.span.end_line == f.span.line else len(line.rstrip())
    end = max(start + 1, min(end, len(line)))
    number = str(f.span.line)
    gutter = " " * len(number)
    carets = " " * len(_shown(line[:start])) + "^" * len(_shown(line[start:end]))
    return [f"{gutter} |", f"{number} | {_shown(line)}".rstrip(), f"{gutter} | {carets}", ""]


def statistics_lines(report: Report, options: EmitOptions) -> list[str]:
    """One line per code, most frequent first: count, code, severity, rule title."""
    counts = Counter(f.code for f in report.findings)
    severity = {f.code: f.severity.value for f in report.findings}
    width = len(str(max(counts.values(), default=0)))
    lines = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        rule = options.pack.get(code) if options.pack is not None else None
        title = _one_line(rule.title) if rule is not None else ""
        lines.append(f"{n:>{width}}  {code:<5}  {'[' + severity[code] + ']':<9}  {title}".rstrip())
    return lines


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
    if report.command == "check":  # runtime findings read by kind, with their details
        from neuron_migrate.emit import check_text

        return check_text.emit(report, options)
    if options.statistics:
        return "".join(line + "\n" for line in statistics_lines(report, options))
    lines: list[str] = []
    for f in report.findings:
        lines.append(finding_line(f))
        if options.show_source:
            lines.extend(source_context(f))
    if lines and not lines[-1]:
        lines.pop()
    if options.summary:
        if lines:
            lines.append("")
        lines.extend(summary_lines(summarize(report, options.target, options.top_files)))
    return "\n".join(lines) + "\n" if lines else ""
