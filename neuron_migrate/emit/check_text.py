"""check's text report: findings grouped by kind (the sections of rules/pack.yaml `runtime_kinds`)
with the details a person acts on, then the run summary. Rendered with rich; plain text (no colour
codes) unless `options.color`."""

from __future__ import annotations

import io
from typing import Any

from neuron_migrate.emit.options import EmitOptions
from neuron_migrate.findings import EXTRA_CHECK, Finding, Report

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
MAX_SIGNATURES = 3


def detail_lines(f: Finding) -> list[str]:
    d: dict[str, Any] = dict(f.details)
    lines: list[str] = []
    if f.code in ("NM901", "NM902"):
        for s in d.get("signatures", [])[:MAX_SIGNATURES]:
            lines.append(f"{s['count']:>6}x {s['shapes']}")
        more = len(d.get("signatures", [])) - MAX_SIGNATURES
        if more > 0:
            lines.append(f"       … {more} more signatures")
    elif f.code == "NM903":
        for op in d.get("ops", []):
            varied = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in op["varied"].items())
            dtypes = "; ".join(f"{k}: {' then '.join(v)}" for k, v in op.get("dtypes", {}).items())
            lines.append(f"{op['op']} ({op['phase']}): {op['signatures']} compiles"
                         + (f", varied {varied}" if varied else "") + (f", dtype {dtypes}" if dtypes else ""))
        for dim in d.get("varied_dimensions", []):
            for o in dim["options"]:
                lines.append(f"→ {o['advice']} (padding {o['padding']:.0%})")
    elif f.code in ("NM910", "NM912") and d.get("frames"):
        lines.append("Traceback (user frames):")
        for fr in d["frames"]:
            lines.append(f'  File "{fr["file"]}", line {fr["line"]}, in {fr["function"]}')
            if fr.get("source"):
                lines.append(f"    {fr['source']}")
        lines.append(f"{d['type']}: {d['message']}")
        if d.get("mismatch", {}) and d["mismatch"].get("hint"):
            lines.append(f"hint: {d['mismatch']['hint']}")
    elif f.code == "NM913" and d.get("frames"):
        lines.append("Where it was:")
        lines += [f'  File "{fr["file"]}", line {fr["line"]}, in {fr["function"]}' for fr in d["frames"]]
    elif f.code == "NM908" and "bytes_per_copy" in d:
        lines.append(f"{d['bytes_per_copy']} bytes per copy")
    return lines


def summary_lines(report: Report) -> list[str]:
    s: dict[str, Any] = dict(report.extras.get(EXTRA_CHECK, {}))
    if not s:
        return []
    ops = s.get("ops", {})
    share = ops.get("device_share")
    lines = [f"Program: {s.get('program', '')} ({s.get('processes', 0)} process"
             f"{'es' if s.get('processes', 0) != 1 else ''}"
             + (f", ranks {', '.join(map(str, s['ranks']))}" if s.get("ranks") else "") + ")"]
    exits = ", ".join(f"{e['status']} ({e.get('signal') or e.get('code', 0)})" for e in s.get("exit", [])) or "unknown"
    lines.append(f"Exit: {exits}; user code ran {s.get('wall_s', 0.0):.2f} s, check took {report.duration_s:.2f} s")
    if share is not None:
        lines.append(f"Ops: {ops['device']} on the device, {ops['cpu_fallback']} on the CPU "
                     f"({share:.1%} on the device)"
                     + (f"; {ops['host_syncs']} host syncs (value reads)" if ops.get("host_syncs") else ""))
    c = s.get("compiles", {})
    lines.append(f"Compiles: {c.get('eager', 0)} eager ({c.get('eager_recompiles', 0)} recompiles); "
                 f"torch.compile: {c.get('dynamo_graphs', 0)} graphs, {c.get('dynamo_graph_breaks', 0)} "
                 f"graph breaks, {c.get('dynamo_recompiles', 0)} recompiles")
    for mm in s.get("caught_device_mismatches", []):
        where = f" at {mm['site']['file']}:{mm['site']['line']}" if mm.get("site") else ""
        lines.append(f"Device mismatch caught by the program: {mm.get('op')} argument {mm.get('argument')} "
                     f"on {mm.get('argument_device')}{where}")
    if s.get("allowed_ops"):
        lines.append(f"Allowed fallbacks (not reported): {', '.join(s['allowed_ops'])}")
    int64 = {k: v for k, v in s.get("narrowed_64bit", {}).items() if k.endswith("int64")}
    if int64:
        lines.append(f"int64 narrowed to int32 (indices, labels): {sum(int64.values())} op calls")
    parity = s.get("parity")
    if parity:
        first = parity.get("first_divergence")
        where = (f"; they part at {first['site']['file']}:{first['site']['line']}" if first else "; no divergence")
        lines.append(f"Parity: {parity.get('compared', 0)} values in {parity.get('reads', 0)} reads compared with the "
                     f"CPU reference, max relative difference {parity.get('max_rel_diff', 0):.3g}"
                     if isinstance(parity.get("max_rel_diff"), float) else
                     f"Parity: {parity.get('compared', 0)} values compared, max relative difference "
                     f"{parity.get('max_rel_diff')}")
        lines[-1] += where
        if parity.get("note"):
            lines.append(f"Parity: {parity['note']}")
    lines += [f"Note: {p}" for p in s.get("problems", [])]
    return lines


def emit(report: Report, options: EmitOptions) -> str:
    from rich.console import Console
    from rich.markup import escape

    from neuron_migrate.ruleset.load import load_pack

    pack = options.pack or load_pack()
    color, summary, width = options.color, options.summary, options.width

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, color_system="standard" if color else None,
                      width=width, highlight=False, soft_wrap=True, emoji=False)
    by_kind: dict[str, list[Finding]] = {}
    last = next(reversed(pack.kinds), "")  # findings of no known kind go with the last section
    for f in report.findings:
        rule = pack.get(f.code)
        by_kind.setdefault(rule.kind if rule is not None and rule.kind else last, []).append(f)
    for kind, title in pack.kinds.items():
        found = by_kind.get(kind)
        if not found:
            continue
        console.print(f"[bold]{escape(title)}[/bold]")
        for f in found:
            style = _SEVERITY_STYLE.get(f.severity.value, "")
            console.print(f"{escape(f.location())}: [{style}]{f.code}[/{style}] "
                          f"{escape(f'[{f.severity.value}]')} {escape(f.message)}")
            for line in detail_lines(f):
                console.print(f"    {escape(line)}")
        console.print()
    if summary:
        if not report.findings:
            console.print("No runtime findings.")
        for line in summary_lines(report):
            console.print(escape(line))
    return buf.getvalue()
