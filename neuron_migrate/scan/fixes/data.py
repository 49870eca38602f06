"""Device types listed as data: `device.type in ("cuda", "xpu")`, `SUPPORTED = ["cuda", "cpu"]`.

Renaming the entry would drop CUDA from the list (a program that also runs on GPUs changes
meaning); the fix adds a `"neuron"` entry beside the CUDA one instead, for both targets (the
accelerator target keeps the CUDA entry too, so the literal name is what it needs).
"""

from __future__ import annotations

import ast

from neuron_migrate.scan.fixes.context import FixContext, FixResult
from neuron_migrate.scan.matchers.site import Site

_CONTAINERS = (ast.Tuple, ast.List, ast.Set)


def container_of(site: Site, ctx: FixContext) -> ast.AST | None:
    """The tuple, list or set literal the matched string is an entry of."""
    literal = site.literal
    if literal is None or literal.__class__ is not ast.Constant:
        return None
    parent = ctx.parent(site.stmt, literal)
    if parent.__class__ in _CONTAINERS and any(e is literal for e in parent.elts):  # type: ignore[union-attr]
        return parent
    return None


def neuron_entry(value: str, token: str) -> str:
    return "neuron" + value[len(token) :]


def has_neuron_entry(container: ast.AST, literal: ast.AST, token: str) -> bool:
    want = neuron_entry(literal.value, token)  # type: ignore[attr-defined]
    return any(e.__class__ is ast.Constant and e.value == want for e in container.elts)  # type: ignore[attr-defined]


def entry_fix(site: Site, ctx: FixContext) -> FixResult | None:
    """`("cuda", "xpu")` -> `("cuda", "neuron", "xpu")`, spelled with the entry's own quotes."""
    container = container_of(site, ctx)
    if container is None or not site.literal.value.startswith(site.token):  # type: ignore[union-attr]
        return None
    text = ctx.text(site.literal)  # type: ignore[arg-type]
    parts = ctx.string_parts(site.literal)  # type: ignore[arg-type]
    if parts is None or "\n" in text:
        return None
    _span, prefix, quote = parts
    body = text[len(prefix) + len(quote) : len(text) - len(quote)]
    if not body.startswith(site.token):
        return None
    entry = f"{prefix}{quote}{neuron_entry(body, site.token)}{quote}"
    return FixResult('Add a "neuron" entry beside the CUDA one', (ctx.insert_after(site.literal, f", {entry}"),))  # type: ignore[arg-type]


def already_listed(site: Site, ctx: FixContext) -> bool:
    """The entry's container (or the table it keys) lists the `neuron` form too: nothing left to
    port (and reporting it would make the fix add the entry again on every run)."""
    container = container_of(site, ctx)
    if container is not None:
        return has_neuron_entry(container, site.literal, site.token)  # type: ignore[arg-type]
    if not site.data or site.literal is None:
        return False
    table = ctx.parent(site.stmt, site.literal)
    if table.__class__ is not ast.Dict:
        return False
    want = neuron_entry(site.literal.value, site.token)  # type: ignore[attr-defined]
    return any(k.__class__ is ast.Constant and k.value == want for k in table.keys)  # type: ignore[attr-defined]
