"""Named fixers for device placement: `accelerator_device_string`, `cuda_method`,
`is_cuda_attribute`."""

from __future__ import annotations

import ast

from neuron_migrate.findings import Edit, Span, Target
from neuron_migrate.scan.fixes.context import FixContext, FixResult
from neuron_migrate.scan.fixes.syntax import comparison_needs_parens
from neuron_migrate.scan.matchers.site import Site

ACCELERATOR = "torch.accelerator.current_accelerator"


def accelerator_type(ctx: FixContext) -> tuple[str, tuple[str, ...]]:
    """`torch.accelerator.current_accelerator().type` as this file spells it."""
    text, add = ctx.spelled(ACCELERATOR)
    return f"{text}().type", add


def accelerator_string_edit(ctx: FixContext, literal: ast.AST, token: str) -> tuple[Edit, tuple[str, ...]] | None:
    """Turn the device type at the start of a string into the current accelerator's type:
    `"cuda"` -> `torch.accelerator.current_accelerator().type`, `"cuda:0"` -> f"{...}:0",
    `f"cuda:{i}"` -> f"{...}:{i}"."""
    expr, add = accelerator_type(ctx)
    if literal.__class__ is ast.JoinedStr:
        edit = ctx.token_edit(literal, token, "{" + expr + "}")
        return (edit, add) if edit is not None else None
    parts = ctx.string_parts(literal)
    if parts is None:
        return None
    span, prefix, quote = parts
    if span.line != span.end_line:
        return None
    line = ctx.lines.line(span.line)
    start = span.col + len(prefix) + len(quote)
    if not line.startswith(token, start):
        return None
    rest = line[start + len(token) : span.end_col]  # the tail of the contents and the closing quote
    if rest == quote:
        return Edit(span, expr), add
    # Anything after the type stays literal text of an f-string (braces doubled for `.format`).
    f_prefix = prefix.replace("u", "").replace("U", "") + "f"
    escaped = rest[: -len(quote)].replace("{", "{{").replace("}", "}}") + quote
    return Edit(span, f"{f_prefix}{quote}{{{expr}}}{escaped}"), add


def accelerator_device_string(site: Site, span: Span, ctx: FixContext, target: Target) -> FixResult | None:
    if site.literal is None:
        return None
    hit = accelerator_string_edit(ctx, site.literal, site.token)
    if hit is None:
        return None
    edit, add = hit
    return FixResult("Use the current accelerator's device type", (edit,), add)


def _index_text(ctx: FixContext, node: ast.AST) -> str | None:
    text = ctx.text(node)
    return None if "\n" in text else text


def cuda_method(site: Site, span: Span, ctx: FixContext, target: Target) -> FixResult | None:
    """`.cuda()` -> `.to("neuron")`, `.cuda(i)` -> `.to(f"neuron:{i}")` (accelerator target:
    `.to(torch.accelerator.current_accelerator())` / `.to(torch.device(<type>, i))`); other
    arguments (`non_blocking=`, `memory_format=`) are kept."""
    call = site.call
    if call is None or call.func.__class__ is not ast.Attribute:
        return None
    device: ast.AST | None = None
    rest: list[str] = []
    for i, a in enumerate(call.args):
        if a.__class__ is ast.Starred:
            return None
        if i == 0:
            device = a
        elif i == 1:  # Tensor.cuda(device, non_blocking): `.to`'s second position is dtype
            rest.append(f"non_blocking={ctx.text(a)}")
        else:
            return None
    for kw in call.keywords:
        if kw.arg == "device":
            device = kw.value
        else:
            rest.append(ctx.text(kw))
    add: tuple[str, ...] = ()
    if target is Target.NEURON:
        if device is None:
            dev = '"neuron"'
        elif device.__class__ is ast.Constant and device.value.__class__ is int:  # type: ignore[attr-defined]
            dev = f'"neuron:{device.value}"'  # type: ignore[attr-defined]
        else:
            index = _index_text(ctx, device)
            if index is None or "{" in index or "}" in index or "\\" in index:
                return None
            quote = '"' if '"' not in index else "'"
            if quote in index:
                return None
            dev = f"f{quote}neuron:{{{index}}}{quote}"
        title = 'Use .to("neuron")'
    else:
        acc, add = ctx.spelled(ACCELERATOR)
        if device is None:
            dev = f"{acc}()"
        else:
            index = _index_text(ctx, device)
            if index is None:
                return None
            torch_device, add2 = ctx.spelled("torch.device")
            add = add + add2
            dev = f"{torch_device}({acc}().type, {index})"
        title = "Use .to(<current accelerator>)"
    func = call.func
    end_line = func.end_lineno or func.lineno
    name_start = ctx.lines.col(end_line, (func.end_col_offset or 0) - len(func.attr.encode("utf-8")))  # type: ignore[attr-defined]
    whole = ctx.span(call)
    edit = Edit(Span(end_line, name_start, whole.end_line, whole.end_col), f"to({', '.join([dev, *rest])})")
    return FixResult(title, (edit,), add)


def is_cuda_attribute(site: Site, span: Span, ctx: FixContext, target: Target) -> FixResult | None:
    """`x.is_cuda` -> `x.is_neuron` (neuron) / `x.device.type == <accelerator type>` (accelerator)."""
    node = site.node
    if node.__class__ is not ast.Attribute:
        return None
    if target is Target.NEURON:
        return FixResult("Use .is_neuron", (Edit(span, "is_neuron"),))
    receiver = ctx.text(node.value)  # type: ignore[attr-defined]
    if "\n" in receiver:
        return None
    if node.value.__class__ not in (ast.Name, ast.Attribute, ast.Call, ast.Subscript):  # type: ignore[attr-defined]
        receiver = f"({receiver})"
    acc, add = accelerator_type(ctx)
    text = f"{receiver}.device.type == {acc}"
    if comparison_needs_parens(site.stmt, node):
        text = f"({text})"
    return FixResult("Compare the device type with the current accelerator's", (ctx.replace(node, text),), add)
