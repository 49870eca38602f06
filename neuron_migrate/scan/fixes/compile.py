"""Named fixer `compile_backend`: give `torch.compile(...)` / `@torch.compile` the Neuron backend."""

from __future__ import annotations

from neuron_migrate.findings import Edit, Span, Target
from neuron_migrate.scan.fixes.context import FixContext, FixResult
from neuron_migrate.scan.fixes.syntax import ordered_arguments
from neuron_migrate.scan.matchers.site import Site

_BACKEND = 'backend="neuron"'


def compile_backend(site: Site, span: Span, ctx: FixContext, target: Target) -> FixResult | None:
    """Add `backend="neuron"` after the last argument, or before the first keyword of a call with
    keywords only: either way, removing another keyword (an unsupported `mode=`) in the same run
    cannot leave a dangling comma. No accelerator-target fix: the right backend differs per device."""
    if target is not Target.NEURON:
        return None
    title = 'Compile with backend="neuron"'
    if site.decorator:  # bare `@torch.compile`
        return FixResult(title, (ctx.insert_after(site.node, f"({_BACKEND})"),))
    call = site.call
    if call is None:
        return None
    ordered = ordered_arguments(call)
    if not ordered:
        return FixResult(title, (Edit(ctx.call_end_inside(call), _BACKEND),))
    if not call.args:
        return FixResult(title, (ctx.insert_before(ordered[0], f"{_BACKEND}, "),))
    return FixResult(title, (ctx.insert_after(ordered[-1], f", {_BACKEND}"),))



