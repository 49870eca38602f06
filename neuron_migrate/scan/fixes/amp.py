"""Named fixers for automatic mixed precision: `amp_autocast` (torch.cuda.amp.autocast ->
torch.autocast(<device>, ...)) and `amp_grad_scaler` (torch.cuda.amp.GradScaler and
torch.amp.GradScaler without a device or with "cuda" -> torch.amp.GradScaler(<device>, ...))."""

from __future__ import annotations

import ast

from neuron_migrate.findings import Edit, Span, Target
from neuron_migrate.scan.fixes.compute import removed_import
from neuron_migrate.scan.fixes.context import FixContext, FixResult
from neuron_migrate.scan.fixes.device import accelerator_string_edit, accelerator_type
from neuron_migrate.scan.fixes.syntax import call_of, ordered_arguments
from neuron_migrate.scan.matchers.site import Site

# torch.cuda.amp.autocast(enabled, dtype, cache_enabled) -> torch.autocast(device_type, dtype, enabled, ...):
# positional arguments must become keywords.
_AUTOCAST_POSITIONS = ("enabled", "dtype", "cache_enabled")


def _device(ctx: FixContext, target: Target) -> tuple[str, tuple[str, ...]]:
    if target is Target.NEURON:
        return '"neuron"', ()
    return accelerator_type(ctx)


def _insert_first(ctx: FixContext, call: ast.Call, text: str, first_prefix: str = "") -> Edit:
    """Insert `text` as the first argument of `call` (`first_prefix` goes before the old first)."""
    ordered = ordered_arguments(call)
    if not ordered:
        return Edit(ctx.call_end_inside(call), text)
    return ctx.insert_before(ordered[0], f"{text}, {first_prefix}")


_SIMPLE = (ast.Name, ast.Attribute, ast.Call, ast.Constant, ast.Subscript)


def _retarget_call(site: Site, span: Span, ctx: FixContext, target: Target, new_callee: str,
                   positions: tuple[str, ...] | None, *, only_with_accelerator: bool = False) -> FixResult | None:
    """Replace the callee of the call around the matched name and insert the device first;
    `positions` names the old positional parameters that must become keywords.
    `only_with_accelerator` (accelerator target): CUDA autocast disables itself where CUDA is
    missing, while `torch.autocast("cpu")` would turn CPU autocast on, so `enabled` also asks
    `torch.accelerator.is_available()`."""
    call = call_of(site.stmt, site.node)
    if call is None or any(a.__class__ is ast.Starred for a in call.args):
        return None
    if positions is not None and len(call.args) > len(positions):
        return None
    gate = only_with_accelerator and target is Target.ACCELERATOR
    if gate and any(kw.arg is None for kw in call.keywords):
        return None  # `**options` may hold `enabled`: a second one would be a TypeError
    callee, add = ctx.spelled(new_callee)
    device, add2 = _device(ctx, target)
    available, add3 = ctx.spelled("torch.accelerator.is_available") if gate else ("", ())
    edits = [Edit(span, callee)]
    ordered = ordered_arguments(call)
    first = ordered[0] if ordered else None

    def wrap(value: ast.AST) -> tuple[str, str]:
        if value.__class__ in _SIMPLE:
            return "", f" and {available}()"
        return "(", f") and {available}()"

    prefix = ""
    enabled_seen = False
    if positions is not None:
        for i, a in enumerate(call.args):
            opening = ""
            if gate and positions[i] == "enabled":
                enabled_seen = True
                opening, closing = wrap(a)
                edits.append(ctx.insert_after(a, closing))
            if a is first:
                prefix = f"{positions[i]}={opening}"
            else:
                edits.append(ctx.insert_before(a, f"{positions[i]}={opening}"))
    for kw in call.keywords:
        if gate and kw.arg == "enabled":
            enabled_seen = True
            opening, closing = wrap(kw.value)
            if opening:
                edits.append(ctx.insert_before(kw.value, opening))
            edits.append(ctx.insert_after(kw.value, closing))
    if gate and not enabled_seen:
        if ordered:
            edits.append(ctx.insert_after(ordered[-1], f", enabled={available}()"))
        else:
            device = f"{device}, enabled={available}()"
    edits.append(_insert_first(ctx, call, device, prefix))
    return FixResult(f"Use {new_callee}(<device>, ...)", tuple(edits), add + add2 + add3, removed_import(site))


def amp_autocast(site: Site, span: Span, ctx: FixContext, target: Target) -> FixResult | None:
    if site.kind != "qualified_names":
        return None
    return _retarget_call(site, span, ctx, target, "torch.autocast", _AUTOCAST_POSITIONS, only_with_accelerator=True)


def amp_autocast_device(site: Site, span: Span, ctx: FixContext, target: Target) -> FixResult | None:
    """`torch.autocast("cuda", ...)` / `device_type="cuda"`: the device type, and for the
    accelerator target `enabled` gated on an accelerator (see `_retarget_call`)."""
    if site.literal is None or site.call is None:
        return None
    if target is Target.NEURON:
        edit = ctx.token_edit(site.literal, site.token, "neuron")
        return FixResult('Use the "neuron" device', (edit,)) if edit is not None else None
    call = site.call
    if any(a.__class__ is ast.Starred for a in call.args) or any(kw.arg is None for kw in call.keywords):
        return None
    hit = accelerator_string_edit(ctx, site.literal, site.token)
    if hit is None:
        return None
    available, add = ctx.spelled("torch.accelerator.is_available")
    edits = [hit[0]]
    value = call.args[2] if len(call.args) > 2 else next((k.value for k in call.keywords if k.arg == "enabled"), None)
    if value is None:
        edits.append(ctx.insert_after(ordered_arguments(call)[-1], f", enabled={available}()"))
    elif value.__class__ in _SIMPLE:
        edits.append(ctx.insert_after(value, f" and {available}()"))
    else:
        edits += [ctx.insert_before(value, "("), ctx.insert_after(value, f") and {available}()")]
    return FixResult("Use the current accelerator, autocast only with one", tuple(edits), hit[1] + add)


def amp_grad_scaler(site: Site, span: Span, ctx: FixContext, target: Target) -> FixResult | None:
    if site.kind == "qualified_names":  # torch.cuda.amp.GradScaler(...)
        return _retarget_call(site, span, ctx, target, "torch.amp.GradScaler", None)
    if site.kind != "arguments" or site.call is None:
        return None
    if site.literal is not None:  # torch.amp.GradScaler("cuda")
        if target is Target.NEURON:
            edit = ctx.token_edit(site.literal, site.token, "neuron")
            return FixResult('Use the "neuron" device', (edit,)) if edit is not None else None
        hit = accelerator_string_edit(ctx, site.literal, site.token)
        return FixResult("Use the current accelerator", (hit[0],), hit[1]) if hit is not None else None
    if site.arg is None:  # torch.amp.GradScaler() defaults to "cuda"
        device, add = _device(ctx, target)
        return FixResult(f"Pass the device ({device})", (_insert_first(ctx, site.call, device),), add)
    return None
