"""Text after a rewrite: what changed (or would), what was skipped or refused, and what still
needs a person, grouped by code with every location. Pure: returns strings, prints nothing."""

from __future__ import annotations

from collections import Counter, defaultdict

from neuron_migrate.findings import Finding, FixClass, cell_label
from neuron_migrate.rewrite.apply import applicable_fix
from neuron_migrate.rewrite.engine import FileOutcome, FileStatus, RewriteResult, finding_key


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def _why_not_fixed(f: Finding, result: RewriteResult, skipped: dict[tuple[object, ...], str]) -> str:
    if finding_key(f) in skipped:
        return skipped[finding_key(f)]
    fix = f.fix_for(result.target)
    if fix is None or fix.applicability in (FixClass.MANUAL, FixClass.NONE) or not fix.edits:
        return "no automatic fix" if f.fix_class is FixClass.NONE else "manual change"
    if fix.applicability is FixClass.UNSAFE and not result.unsafe:
        return "unsafe fix: rerun with --unsafe-fixes after reading the rule's rationale"
    if applicable_fix(f, result.target, unsafe=result.unsafe):
        return "not applied"
    return "manual change"


_DIFF_COLOURS = (("+++", "\x1b[1m"), ("---", "\x1b[1m"), ("@@", "\x1b[36m"), ("+", "\x1b[32m"), ("-", "\x1b[31m"))


def colour_diff(diff: str) -> str:
    """ANSI colours for a terminal: additions green, removals red, hunks cyan, headers bold."""
    out = []
    for line in diff.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        code = next((c for prefix, c in _DIFF_COLOURS if body.startswith(prefix)), "")
        out.append(f"{code}{body}\x1b[0m{line[len(body):]}" if code else line)
    return "".join(out)


def summary_text(result: RewriteResult) -> str:
    lines: list[str] = []
    by_status: dict[FileStatus, list[FileOutcome]] = defaultdict(list)
    for outcome in result.files:
        by_status[outcome.status].append(outcome)
    changed = by_status[FileStatus.CHANGED]
    fixes = sum(len(o.applied) for o in changed)
    target = f"target {result.target.value}"
    if result.apply:
        lines.append(f"Changed {_plural(len(changed), 'file')} ({_plural(fixes, 'fix', 'fixes')}, {target}).")
    elif changed:
        lines.append(
            f"Would change {_plural(len(changed), 'file')} ({_plural(fixes, 'fix', 'fixes')}, {target}); "
            "nothing written: rerun with --apply to write."
        )
    else:
        lines.append(f"Nothing to change ({target}).")
    for o in changed:
        codes = ", ".join(f"{code} x{n}" if n > 1 else code for code, n in sorted(Counter(f.code for f in o.applied).items()))
        lines.append(f"  {o.path}: {codes}")
    for status, title in ((FileStatus.SKIPPED, "Skipped"), (FileStatus.REFUSED, "Refused")):
        if by_status[status]:
            lines.append(f"{title} {_plural(len(by_status[status]), 'file')}:")
            lines.extend(f"  {o.path}: {o.reason}" for o in by_status[status])

    skipped = {finding_key(s.finding): s.reason for o in result.files for s in o.skipped}
    needs = result.remaining if result.apply else result.needs_person
    if not needs:
        lines.append("Nothing left that needs a person.")
        return "\n".join(lines) + "\n"
    lines.append(f"Still needs a person: {_plural(len(needs), 'finding')}.")
    by_code: dict[str, list[Finding]] = defaultdict(list)
    for f in needs:
        by_code[f.code].append(f)
    for code in sorted(by_code):
        group = sorted(by_code[code], key=lambda f: f.sort_key)
        reasons = sorted({_why_not_fixed(f, result, skipped) for f in group})
        lines.append(f"  {code} ({len(group)}, {group[0].severity.value}): {'; '.join(reasons)}")
        lines.append(f"    {' '.join(group[0].message.split())}")
        by_file: dict[str, list[str]] = defaultdict(list)
        for f in group:
            by_file[f.path].append(f"{cell_label(f.cell)}{f.span.line}:{f.span.col + 1}")
        for path in sorted(by_file):
            lines.append(f"    {path}: {', '.join(by_file[path])}")
    return "\n".join(lines) + "\n"

