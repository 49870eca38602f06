"""A migration record as one self-contained HTML page for a reader who will not run the tool: inline
CSS and SVG charts (charts.py), no script, no external asset or link target other than in-page
anchors; every piece of text from the record is escaped, and `code` in rule messages is set as code.
Diffs are coloured by line kind."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from neuron_migrate.record import charts, views
from neuron_migrate.record.build import Headline, by_code, by_file, check_extras, remaining_findings, runtime_by_code

if TYPE_CHECKING:
    from neuron_migrate.ruleset.model import RulePack

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d5d9e0;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;width:100%;background:#fff;margin:6px 0 12px}
th,td{border:1px solid #d5d9e0;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}
.card{background:#fff;border:1px solid #d5d9e0;border-radius:6px;padding:10px 14px;min-width:150px}
.card b{display:block;font-size:22px}.card span{color:#5a6272;font-size:12px}
.bad b{color:#b42318}.good b{color:#067647}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre{background:#fff;border:1px solid #d5d9e0;padding:8px;overflow-x:auto;white-space:pre}
.meta td:first-child{width:180px;color:#5a6272}
.sev-error{color:#b42318}.sev-warning{color:#b54708}.sev-info{color:#175cd3}
details{margin:4px 0}summary{cursor:pointer}
.chart{display:block;max-width:100%;height:auto;margin:8px 0 14px;background:#fff}
pre.diff span{display:block}.diff .add{background:#e6f4ea;color:#0b5d1e}.diff .del{background:#fdecea;color:#8a1c12}
.diff .hunk{color:#175cd3;background:#eef4ff}.diff .head{color:#5a6272;font-weight:600}
"""


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


_TICKED = re.compile(r"`([^`]+)`")


def _inline(text: Any) -> str:
    """Escaped text with Markdown code spans (`x`) set as <code> (rule messages use them)."""
    return _TICKED.sub(lambda m: f"<code>{m.group(1)}</code>", _e(text))


def _diff(text: str) -> str:
    """A unified diff with each line classed by kind (added, removed, hunk, file header)."""
    lines = []
    for line in text.splitlines():
        kind = ("head" if line.startswith(("+++", "---")) else "add" if line.startswith("+")
                else "del" if line.startswith("-") else "hunk" if line.startswith("@@") else "")
        klass = f' class="{kind}"' if kind else ""
        lines.append(f"<span{klass}>{_e(line) or ' '}</span>")
    return f'<pre class="diff">{"".join(lines)}</pre>'


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[int] = (),
           cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = []
    for row in rows:
        tds = "".join(
            f'<td class="n">{_e(c)}</td>' if i in numeric else f"<td>{_e(c)}</td>" for i, c in enumerate(row)
        )
        body.append(f"<tr>{tds}</tr>")
    klass = f' class="{_e(cls)}"' if cls else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _card(value: Any, label: str, tone: str = "") -> str:
    klass = f"card {tone}".strip()
    return f'<div class="{klass}"><b>{_e(value)}</b><span>{_e(label)}</span></div>'


def _cards(record: Mapping[str, Any]) -> str:
    h = Headline.from_dict(record["headline"])
    cards = [
        _card(h.sites, "CUDA-specific sites"),
        _card(views.pct(h.auto_fixable_share), f"auto-fixable ({h.auto_fixable})"),
        _card(h.fixed_by_rewrite, "fixed by rewrite", "good"),
        _card(h.needs_person, "left for a person", "bad" if h.needs_person else "good"),
    ]
    if (c := h.check) is not None:
        cards += [
            _card("yes" if c.check_completed else "no", "check completed", "good" if c.check_completed else "bad"),
            _card(c.fallback_ops, "CPU fallback ops", "bad" if c.fallback_ops else "good"),
            _card(c.recompile_hotspots, "recompile hotspots", "bad" if c.recompile_hotspots else "good"),
        ]
    return f'<div class="cards">{"".join(cards)}</div>'


def _left_for_person(record: Mapping[str, Any]) -> str:
    left = remaining_findings(record)
    if not left:
        return "<p>Nothing: the rewrite handled every finding.</p>"
    grouped: dict[str, list[Any]] = defaultdict(list)
    for f in left:
        grouped[f.code].append(f)
    parts = ["<p>Findings a scan of the rewritten code still reports (lines are in the rewritten code).</p>"]
    for code, items in sorted(grouped.items()):
        first = items[0]
        rows = [(f.location(), f.source_line.strip()) for f in items]
        parts.append(
            f'<details><summary><b>{_e(code)}</b> <span class="sev-{_e(first.severity.value)}">'
            f"{_e(first.severity.value)}</span> ({len(items)}): {_inline(first.message)}</summary>"
            f"{_table(['Where', 'Code'], rows)}</details>"
        )
    return "".join(parts)


def _diffs(record: Mapping[str, Any]) -> str:
    parts = []
    for outcome in record["rewrite"]["files"]:
        label = f"{outcome['path']}: {outcome['status']}"
        if outcome.get("reason"):
            label += f" ({outcome['reason']})"
        body = _diff(outcome["diff"]) if outcome.get("diff") else ""
        parts.append(f"<details><summary>{_e(label)}</summary>{body}</details>")
    return "".join(parts) or "<p>No file needed a change.</p>"


def _check(record: Mapping[str, Any]) -> str:
    check = record.get("check")
    if check is None:
        return "<p>Not run: pass <code>--run SCRIPT</code> to run the rewritten program on the emulated device.</p>"
    launcher = f" under {check['launcher']} --nproc-per-node {check['nproc_per_node']}" if check.get("launcher") else ""
    out = [(f"<p><code>{_e(check['script'])}</code>{_e(launcher)}: exit {_e(check['exit_code'])}, "
            f"{_e(format(check['duration_s'], '.1f'))} s.</p>")]
    if check.get("error"):
        return "".join(out) + f"<p>check produced no report:</p><pre>{_e(check['error'])}</pre>"
    ops = check_extras(record).get("check", {}).get("ops", {})
    if isinstance(ops, Mapping) and {"device", "cpu_fallback"} <= ops.keys():
        out.append("<h3>Where the ops ran</h3>")
        out.append(charts.device_share(int(ops["device"]), int(ops["cpu_fallback"])))
    fallbacks = views.fallback_rows(record)
    out.append("<h3>CPU fallback ops</h3>")
    out.append(_table(["Op", "Calls", "Where"], fallbacks, numeric=(1,)) if fallbacks else "<p>None.</p>")
    recompiles = views.recompile_rows(record)
    out.append("<h3>Recompile hotspots</h3>")
    if recompiles:
        out.append(charts.recompiles_by_site([(r[0], int(r[2])) for r in recompiles]))
        out.append(_table(["Call site", "Code", "Signatures", "What varied", "Advice"], recompiles, numeric=(2,)))
    else:
        out.append("<p>None.</p>")
    runtime = runtime_by_code(record)
    out.append("<h3>Runtime findings by code</h3>")
    out.append(_table(["Code", "Severity", "Count"], runtime, numeric=(2,)) if runtime else "<p>None.</p>")
    summary = views.run_summary_rows(record)
    if summary:
        out.append("<h3>Run summary</h3>" + _table(["Measure", "Value"], summary, cls="meta"))
    return "".join(out)


def render(record: Mapping[str, Any], pack: RulePack | None = None) -> str:
    rows = by_code(record, pack)
    codes = [(r.code, r.title, r.severity, r.fix_class, r.found, r.fixed, r.remaining,
              views.balance(r.found, r.fixed, r.remaining)) for r in rows]
    files = [(f.path, f.found, f.fixed, f.remaining, f.status or "not touched") for f in by_file(record)]
    body = [
        f"<h1>{_e(views.title(record))}</h1>",
        _table(["", ""], views.provenance(record), cls="meta"),
        _cards(record),
        "<h2>Headline</h2>",
        _table(["Measure", "Value"], views.headline_rows(record), cls="meta"),
        "<h2>By code</h2>",
        charts.findings_by_code([(r.code, r.found, r.fixed, r.remaining) for r in rows]) if rows else "",
        _table(["Code", "Rule", "Severity", "Fix", "Found", "Fixed", "Left", "Note"], codes, numeric=(4, 5, 6))
        if codes else "<p>No CUDA-specific code found.</p>",
        "<h2>By file</h2>",
        _table(["File", "Found", "Fixed", "Left", "Rewrite"], files, numeric=(1, 2, 3))
        if files else "<p>No file has findings.</p>",
        "<h2>Left for a person</h2>",
        _left_for_person(record),
        "<h2>Rewrite</h2>",
        _diffs(record),
        "<h2>Check of the rewritten program</h2>",
        _check(record),
        "<h2>Commands</h2>",
        _table(["Step", "Command"], views.commands(record)),
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(views.title(record))}</title><style>{_CSS}</style></head>"
        f"<body><main>{''.join(body)}</main></body></html>\n"
    )
