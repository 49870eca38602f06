"""Named fixer `accelerator_manual_seed` (NM209, accelerator target).

`torch.cuda.manual_seed(s)` / `manual_seed_all(s)` become `torch.manual_seed(s)`, which seeds every
device. Programs usually seed the CPU just before: `torch.manual_seed(0); torch.cuda.manual_seed(0)`
would become two `torch.manual_seed(0)` calls. When the same `torch.manual_seed(s)` already seeds
every device next to the CUDA call (only other seeding in between, so no random number is drawn and
no other seed is set), the CUDA call is removed instead: the generators end in the very state they
did. That holds through an `if torch.cuda.is_available():` around the CUDA call, which then goes
with its emptied block.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from neuron_migrate.findings import Edit, Span, Target
from neuron_migrate.scan.aliases import AliasTable
from neuron_migrate.scan.fixes.context import FixContext, FixResult
from neuron_migrate.scan.fixes.syntax import block_of, if_holding
from neuron_migrate.scan.matchers.site import Site

_SEED_ALL = "torch.manual_seed"
_CUDA_SEEDS = frozenset({"torch.cuda.manual_seed", "torch.cuda.manual_seed_all"})
_OTHER_SEEDS = frozenset({"random.seed", "numpy.random.seed"})  # seed other generators only
# What a guard around the CUDA call may ask without drawing a random number or running code.
_QUESTIONS = frozenset({"is_available", "device_count", "is_initialized"})


def _seed_call(stmt: ast.AST, aliases: AliasTable) -> tuple[str, str] | None:
    """(callee, arguments) of a statement that is one seeding call."""
    if stmt.__class__ is not ast.Expr or stmt.value.__class__ is not ast.Call:  # type: ignore[attr-defined]
        return None
    call = stmt.value  # type: ignore[attr-defined]
    name = aliases.qualified(call.func)
    if name is None or name not in (_SEED_ALL, *_CUDA_SEEDS, *_OTHER_SEEDS):
        return None
    return name, "|".join(ast.dump(a) for a in (*call.args, *call.keywords))


def _asks_only(test: ast.AST) -> bool:
    for node in ast.walk(test):
        if node.__class__ is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            leaf = func.attr if func.__class__ is ast.Attribute else getattr(func, "id", "")
            if leaf not in _QUESTIONS:
                return False
        elif node.__class__ in (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Lambda):
            return False
    return True


def _holder(tree: ast.AST, block: list[ast.stmt]) -> ast.If | None:
    node = if_holding(tree, block)
    return node if node is not None and _asks_only(node.test) else None


def _neighbours(tree: ast.AST, stmt: ast.stmt, step: int) -> Iterator[ast.stmt]:
    """The statements run just before (`step` -1) or after (+1) `stmt`, leaving a block only through
    an `if` that asks questions (`if torch.cuda.is_available():`)."""
    while True:
        block = block_of(tree, stmt)
        if block is None:
            return
        i = next(i for i, s in enumerate(block) if s is stmt) + step
        while 0 <= i < len(block):
            yield block[i]
            i += step
        holder = _holder(tree, block)
        if holder is None:
            return
        stmt = holder


def redundant(stmt: ast.AST, tree: ast.AST, aliases: AliasTable) -> bool:
    """A CUDA seeding statement next to the same `torch.manual_seed(...)`, with only seeding of the
    same value or of other generators in between."""
    own = _seed_call(stmt, aliases)
    if own is None or own[0] not in _CUDA_SEEDS:
        return False
    for step in (-1, 1):
        for other in _neighbours(tree, stmt, step):  # type: ignore[arg-type]
            seen = _seed_call(other, aliases)
            if seen is None or (seen[0] not in _OTHER_SEEDS and seen[1] != own[1]):
                break  # a draw, other code, or another seed: the order matters
            if seen[0] == _SEED_ALL:
                return True
    return False


def accelerator_manual_seed(site: Site, span: Span, ctx: FixContext, target: Target) -> FixResult | None:
    from neuron_migrate.scan.fixes.compute import remove_statement_edits, removed_import

    stmt = site.stmt
    called = stmt.__class__ is ast.Expr and getattr(stmt.value, "func", None) is site.node  # type: ignore[attr-defined]
    if called and redundant(stmt, ctx.tree, ctx.aliases):
        # Every redundant CUDA seed of the block goes, so an emptied guard goes with them.
        removed = ctx.removed.setdefault(target.value, set())
        removed.update(id(s) for s in block_of(ctx.tree, stmt) or () if redundant(s, ctx.tree, ctx.aliases))  # type: ignore[arg-type]
        edits = remove_statement_edits(site, ctx, target)
        if edits is not None:
            return FixResult(f"Remove it: `{_SEED_ALL}` next to it already seeds every device", edits,
                             remove_imports=removed_import(site))
    text, add = ctx.spelled(_SEED_ALL)
    return FixResult(f"Use `{_SEED_ALL}`", (Edit(span, text),), add, removed_import(site))
