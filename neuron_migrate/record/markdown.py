"""A migration record as Markdown: headline numbers, tables by code and by file, what is left for a
person, the check of the rewritten program, versions and command lines."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from neuron_migrate.record import views
from neuron_migrate.record.build import by_code, by_file, remaining_findings, runtime_by_code

if TYPE_CHECKING:
    from neuron_migrate.ruleset.model import RulePack


def cell(text: Any) -> str:
    """Text safe inside a table cell: one line, pipes escaped, no raw HTML."""
    s = " ".join(str(text).split())
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[int] = ()) -> list[str]:
    align = ["---:" if i in numeric else "---" for i in range(len(header))]
    out = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def code_block(text: str) -> list[str]:
    fence = "```"
    while fence in text:
        fence += "`"
    return [fence, text.rstrip("\n"), fence, ""]


def render(record: Mapping[str, Any], pack: RulePack | None = None) -> str:
    out = [f"# {cell(views.title(record))}", ""]
    out += table(["", ""], views.provenance(record))
    out += ["## Headline", ""]
    out += table(["Measure", "Value"], views.headline_rows(record))

    out += ["## By code", ""]
    rows = [(r.code, r.title, r.severity, r.fix_class, r.found, r.fixed, r.remaining,
             views.balance(r.found, r.fixed, r.remaining)) for r in by_code(record, pack)]
    out += table(["Code", "Rule", "Severity", "Fix", "Found", "Fixed", "Left", "Note"], rows, numeric=(4, 5, 6)) \
        if rows else ["No CUDA-specific code found.", ""]

    out += ["## By file", ""]
    files = [(f.path, f.found, f.fixed, f.remaining, f.status or "not touched") for f in by_file(record)]
    out += table(["File", "Found", "Fixed", "Left", "Rewrite"], files, numeric=(1, 2, 3)) if files \
        else ["No file has findings.", ""]

    left = remaining_findings(record)
    out += ["## Left for a person", ""]
    if left:
        out += ["Findings a scan of the rewritten code still reports (lines are in the rewritten code).", ""]
    else:
        out += ["Nothing: the rewrite handled every finding.", ""]
    grouped: dict[str, list[str]] = defaultdict(list)
    messages: dict[str, str] = {}
    for f in left:
        grouped[f.code].append(f"`{cell(f.location())}`")
        messages.setdefault(f.code, f.message)
    for code, locations in sorted(grouped.items()):
        out.append(f"- **{code}** ({len(locations)}): {cell(messages[code])}  ")
        out.append(f"  {', '.join(locations)}")
    if grouped:
        out.append("")

    out += _check_section(record)

    out += ["## Commands", ""]
    out += code_block("\n".join(f"# {name}\n{cmd}" for name, cmd in views.commands(record)))
    return "\n".join(out)


def _check_section(record: Mapping[str, Any]) -> list[str]:
    check = record.get("check")
    out = ["## Check of the rewritten program", ""]
    if check is None:
        return out + ["Not run: pass `--run SCRIPT` to run the rewritten program on the emulated device.", ""]
    launcher = f" under `{check['launcher']} --nproc-per-node {check['nproc_per_node']}`" if check.get("launcher") else ""
    out += [f"`{cell(check['script'])}`{launcher}: exit {check['exit_code']}, {check['duration_s']:.1f} s.", ""]
    if check.get("error"):
        out += ["check produced no report:", ""] + code_block(check["error"])
        return out
    fallbacks = views.fallback_rows(record)
    out += ["### CPU fallback ops", ""]
    out += table(["Op", "Calls", "Where"], fallbacks, numeric=(1,)) if fallbacks else ["None.", ""]
    recompiles = views.recompile_rows(record)
    out += ["### Recompile hotspots", ""]
    out += table(["Call site", "Code", "Signatures", "What varied", "Advice"], recompiles, numeric=(2,)) \
        if recompiles else ["None.", ""]
    runtime = runtime_by_code(record)
    out += ["### Runtime findings by code", ""]
    out += table(["Code", "Severity", "Count"], runtime, numeric=(2,)) if runtime else ["None.", ""]
    summary = views.run_summary_rows(record)
    if summary:
        out += ["### Run summary", ""] + table(["Measure", "Value"], summary)
    return out
