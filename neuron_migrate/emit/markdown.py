"""A Markdown summary fit for a pull-request comment: totals, a table by code, the files with
most work, and every finding in a collapsed `<details>` block (capped, to fit GitHub's limit)."""

from __future__ import annotations

from neuron_migrate.emit.escape import code_span, printable
from neuron_migrate.emit.options import EmitOptions
from neuron_migrate.emit.summary import plural, summarize
from neuron_migrate.findings import Finding, Report


def _cell(text: str) -> str:
    """Text safe inside a table cell or list item: one line, no pipes, no stray HTML."""
    return printable(" ".join(text.split())).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _finding_item(f: Finding) -> str:
    return f"- {code_span(f.location())} **{f.code}** {_cell(f.message)}"


def emit(report: Report, options: EmitOptions) -> str:
    s = summarize(report, options.target, options.top_files)
    out = [f"## neuron-migrate {report.command}", ""]
    scope = f" on lines changed since `{s.diff_against}`" if s.diff_against else ""
    if not s.total:
        out.append(f"No findings{scope} in {plural(s.files_scanned, 'file')} scanned. :white_check_mark:")
    else:
        severities = ", ".join(f"{n} {sev.value}" for sev, n in s.by_severity if n)
        out += [
            (
                f"**{plural(s.total, 'finding')}** ({severities}) in "
                f"{plural(s.files_with_findings, 'file')}{scope}; {s.files_scanned} scanned."
            ),
            "",
            (
                f"Auto-fixable for target `{s.target.value}`: **{s.fixable} of {s.total}** "
                f"({s.fixable_share:.0%}): {s.fixable_safe} safe (`neuron-migrate rewrite --apply`), "
                f"{s.fixable_unsafe} unsafe (`--unsafe-fixes`)."
            ),
            "",
            "| Code | Rule | Severity | Fix | Count |",
            "|---|---|---|---|---:|",
        ]
        for code, n in s.by_code:
            rule = options.pack.get(code) if options.pack else None
            sample = next(f for f in report.findings if f.code == code)
            title = _cell(rule.title) if rule else ""
            out.append(f"| {code} | {title} | {sample.severity.value} | {sample.fix_class.value} | {n} |")
        out += ["", "**Files with most work**", ""]
        out += [f"- {code_span(path)}: {n}" for path, n in s.top_files]
    if s.suppressed:
        out += ["", f"{plural(s.suppressed, 'finding')} suppressed by inline comments."]
    if s.baseline_matched is not None:
        out += [
            "",
            (
                f"Baseline: {plural(s.baseline_matched, 'known finding')} not shown; "
                f"{plural(len(s.baseline_fixed), 'baseline entry', 'baseline entries')} now fixed."
            ),
        ]
        for e in s.baseline_fixed:
            entry = " ".join(p for p in (e.code, code_span(e.path), _cell(e.symbol)) if p)
            out.append(f"- ~~{entry}~~" + (f" (x{e.count})" if e.count > 1 else ""))
    if s.total:
        shown = report.findings[: options.markdown_max_details]
        out += ["", f"<details><summary>All findings ({s.total})</summary>", ""]
        out += [_finding_item(f) for f in shown]
        if len(report.findings) > len(shown):
            out.append(f"- … and {len(report.findings) - len(shown)} more (see the full report)")
        out += ["", "</details>"]
    return "\n".join(out) + "\n"
