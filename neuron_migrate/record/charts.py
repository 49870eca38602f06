"""Inline SVG charts for the HTML record: pure functions from numbers and labels to markup.

No script, no external asset, every label escaped; each chart carries a <title> and an aria label
so a screen reader (and a test) can read what it shows. Sizes are fixed in user units and scale
with the page (viewBox), so the page prints and mails as it looks.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

DEVICE = "#2e7d32"
CPU = "#c62828"
FOUND = "#455a64"
FIXED = "#2e7d32"
LEFT = "#ef6c00"
BAR = "#1565c0"
_FONT = 'font-family="system-ui,sans-serif" font-size="12"'


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _svg(width: int, height: int, label: str, body: Sequence[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-label="{_e(label)}">'
            f"<title>{_e(label)}</title>{''.join(body)}</svg>")


def _legend(x: int, y: int, items: Sequence[tuple[str, str]]) -> list[str]:
    out = []
    for name, colour in items:
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{x + 14}" y="{y}" {_FONT}>{_e(name)}</text>')
        x += 24 + 7 * len(name)
    return out


def device_share(device_ops: int, cpu_ops: int, *, width: int = 640) -> str:
    """One stacked bar: op calls that ran on the device vs fell back to the CPU."""
    total = device_ops + cpu_ops
    label = f"Op calls: {device_ops} on the device, {cpu_ops} on the CPU"
    if total == 0:
        return _svg(width, 40, label, [f'<text x="0" y="24" {_FONT}>No op ran on the device or the CPU.</text>'])
    inner = width - 2
    on_device = round(inner * device_ops / total)
    body = [
        f'<rect x="1" y="4" width="{on_device}" height="24" fill="{DEVICE}"/>',
        f'<rect x="{1 + on_device}" y="4" width="{inner - on_device}" height="24" fill="{CPU}"/>',
        *_legend(1, 48, [(f"device {device_ops} ({device_ops / total:.1%})", DEVICE),
                         (f"CPU fallback {cpu_ops} ({cpu_ops / total:.1%})", CPU)]),
    ]
    return _svg(width, 56, label, body)


def findings_by_code(rows: Sequence[tuple[str, int, int, int]], *, width: int = 640) -> str:
    """Grouped bars per code: (code, found, fixed, left after the rewrite)."""
    label = "Findings by code: found, fixed by the rewrite, left"
    if not rows:
        return _svg(width, 30, label, [f'<text x="0" y="20" {_FONT}>No findings.</text>'])
    top = max(max(found, fixed, left) for _, found, fixed, left in rows) or 1
    name_w, row_h, bar_h = 70, 34, 9
    scale = (width - name_w - 40) / top
    body: list[str] = []
    for i, (code, found, fixed, left) in enumerate(rows):
        y = 8 + i * row_h
        body.append(f'<text x="0" y="{y + 17}" {_FONT}>{_e(code)}</text>')
        for j, (value, colour) in enumerate(((found, FOUND), (fixed, FIXED), (left, LEFT))):
            by = y + j * (bar_h + 1)
            body.append(f'<rect x="{name_w}" y="{by}" width="{max(value * scale, 0.5):.1f}" height="{bar_h}" '
                        f'fill="{colour}"><title>{_e(code)}: {value}</title></rect>')
            body.append(f'<text x="{name_w + value * scale + 4:.1f}" y="{by + 8}" font-size="9" '
                        f'font-family="system-ui,sans-serif">{value}</text>')
    height = 8 + len(rows) * row_h + 14
    body += _legend(name_w, height - 2, [("found", FOUND), ("fixed", FIXED), ("left", LEFT)])
    return _svg(width, height + 4, label, body)


def recompiles_by_site(rows: Sequence[tuple[str, int]], *, width: int = 640) -> str:
    """Horizontal bars: distinct compiled signatures per call site (one is no recompile)."""
    label = "Compiled signatures per call site"
    if not rows:
        return _svg(width, 30, label, [f'<text x="0" y="20" {_FONT}>No call site recompiled.</text>'])
    top = max(n for _, n in rows) or 1
    name_w, row_h = 260, 22
    scale = (width - name_w - 40) / top
    body: list[str] = []
    for i, (site, n) in enumerate(rows):
        y = 6 + i * row_h
        shown = site if len(site) <= 40 else "…" + site[-39:]
        body.append(f'<text x="0" y="{y + 13}" {_FONT}><title>{_e(site)}</title>{_e(shown)}</text>')
        body.append(f'<rect x="{name_w}" y="{y}" width="{n * scale:.1f}" height="16" fill="{BAR}"/>')
        body.append(f'<text x="{name_w + n * scale + 4:.1f}" y="{y + 13}" {_FONT}>{n}</text>')
    return _svg(width, 6 + len(rows) * row_h + 4, label, body)
