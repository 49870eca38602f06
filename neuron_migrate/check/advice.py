"""Recompile analysis: which dimensions varied at a call site, and shape buckets that would stop it.

A call site's signatures for one op mix two things: several calls of the op on the same line
(`fc2(relu(fc1(x)))` runs addmm twice with different weights: "slots") and the variation across
executions that causes recompiles (the batch size). When the compiles carry the pass of their site
(check.passes), a recompile's varied dimensions are those where it differs from the closest
signature compiled before it (`changed_positions`). Without passes, `split_variation` guesses from
the shapes alone, choosing the set of varying positions that explains the signatures most
compactly; two calls with fixed shapes can then look like variation.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_SEARCH_POSITIONS = 12  # 2**12 subsets: beyond that, every varying position counts as varied
MAX_BUCKETS = 4


@dataclass(frozen=True, slots=True)
class Position:
    """One dimension of one tensor input: (input index, index inside a tensor list or -1, dim)."""

    input: int
    item: int
    dim: int

    def label(self) -> str:
        inner = f"[{self.item}]" if self.item >= 0 else ""
        return f"input {self.input}{inner} dim {self.dim}"

    def key(self) -> tuple[int, int, int]:
        return (self.input, self.item, self.dim)


def _tensor_inputs(sig: list[Any]) -> Iterator[tuple[int, int, Any]]:
    """(input index, index inside a tensor list or -1, [shape, dtype]) of every tensor input and
    every tensor of a list input (a list nested deeper, or empty, has none: the record schema
    allows any nesting)."""
    for i, inp in enumerate(sig):
        if inp is None:
            continue
        if _is_tensor(inp):
            yield i, -1, inp
        else:
            yield from ((i, j, t) for j, t in enumerate(inp) if _is_tensor(t))


def _is_tensor(t: Any) -> bool:
    return isinstance(t, list) and len(t) == 2 and isinstance(t[1], str)


def _dims(sig: list[Any]) -> dict[Position, int]:
    """Position -> size for one signature (`_structure` tells signatures of other ranks apart)."""
    return {Position(i, j, d): int(n) for i, j, t in _tensor_inputs(sig) for d, n in enumerate(t[0])}


def _structure(sig: list[Any]) -> str:
    def one(t: Any) -> str:
        if t is None:
            return "-"
        if len(t) == 2 and isinstance(t[1], str):
            return f"{len(t[0])}{t[1]}"
        return "[" + ",".join(one(x) for x in t) + "]"

    return "|".join(one(t) for t in sig)


@dataclass(frozen=True, slots=True)
class Variation:
    varied: dict[Position, list[int]]  # position -> sorted distinct observed sizes
    slots: int  # distinct calls of the op on this line
    variants: int  # distinct values of the varied positions: compiles per slot
    signatures: int

    @property
    def recompiles(self) -> int:
        return self.signatures - self.slots


def changed_positions(sig: list[Any], earlier: list[list[Any]]) -> dict[Position, tuple[int, int]]:
    """Position -> (new size, earlier size) against the closest earlier signature of the same
    structure (fewest differing dimensions; the latest on ties); {} when none has its structure
    (a new rank or dtype: nothing to pad)."""
    dims, structure = _dims(sig), _structure(sig)
    best: dict[Position, tuple[int, int]] | None = None
    for other in reversed(earlier):
        if _structure(other) != structure:
            continue
        odims = _dims(other)
        diff = {p: (n, odims[p]) for p, n in dims.items() if odims.get(p) != n}
        if best is None or len(diff) < len(best):
            best = diff
    return best or {}


def _tensors(sig: list[Any]) -> dict[str, tuple[int, str]]:
    """Input label -> (rank, dtype) of every tensor input."""
    return {f"input {i}" + (f"[{j}]" if j >= 0 else ""): (len(t[0]), t[1]) for i, j, t in _tensor_inputs(sig)}


def changed_dtypes(sig: list[Any], earlier: list[list[Any]]) -> dict[str, tuple[str, str]]:
    """Input label -> (new dtype, earlier dtype) against the latest earlier signature with the same
    tensor inputs and ranks but other dtypes (an op run inside and outside an autocast region)."""
    tensors = _tensors(sig)
    for other in reversed(earlier):
        old = _tensors(other)
        if old.keys() != tensors.keys() or any(old[k][0] != r for k, (r, _) in tensors.items()):
            continue
        diff = {k: (d, old[k][1]) for k, (_, d) in tensors.items() if old[k][1] != d}
        if diff:
            return diff
    return {}


def split_variation(signatures: list[list[Any]]) -> Variation:
    groups: dict[str, list[dict[Position, int]]] = {}
    for sig in signatures:
        groups.setdefault(_structure(sig), []).append(_dims(sig))
    varied: dict[Position, set[int]] = {}
    slots = variants = 0
    for sigs in groups.values():
        positions = sorted({p for s in sigs for p in s}, key=lambda p: (p.input, p.item, p.dim))
        candidates = [p for p in positions if len({s[p] for s in sigs}) > 1]
        best = _best_split(sigs, candidates)
        slots += len({tuple(s[p] for p in positions if p not in best) for s in sigs})
        variants = max(variants, len({tuple(s[p] for p in best) for s in sigs}))
        for p in best:
            varied.setdefault(p, set()).update(s[p] for s in sigs)
    return Variation({p: sorted(v) for p, v in varied.items()}, slots, max(variants, 1), len(signatures))


def _best_split(sigs: list[dict[Position, int]], candidates: list[Position]) -> tuple[Position, ...]:
    """The varying positions V minimising the values needed to describe the signatures as
    slots x variants; ties go to fewer slots, then fewer positions."""
    if len(candidates) > MAX_SEARCH_POSITIONS:
        return tuple(candidates)
    best: tuple[tuple[int, int, int], tuple[Position, ...]] | None = None
    for r in range(len(candidates) + 1):
        for subset in itertools.combinations(candidates, r):
            rest = [p for p in candidates if p not in subset]
            slots = len({tuple(s[p] for p in rest) for s in sigs})
            variants = len({tuple(s[p] for p in subset) for s in sigs})
            score = (slots * len(rest) + variants * len(subset), slots, len(subset))
            if best is None or score < best[0]:
                best = (score, subset)
    return best[1] if best else ()


# -- buckets -----------------------------------------------------------------------------------
def _pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(n))) if n > 0 else 0


def _padding(values: list[int], buckets: list[int]) -> float:
    """Mean share of padded (wasted) elements along the dimension when each value is padded up to
    the smallest bucket that holds it."""
    holding = [min(b for b in buckets if b >= v) for v in values]
    # An empty dimension (size 0) sits in an empty bucket and pads nothing.
    waste = [(b - v) / b if b else 0.0 for b, v in zip(holding, values, strict=True)]
    return sum(waste) / len(waste) if waste else 0.0


def _optimal_buckets(values: list[int], k: int) -> list[int]:
    """k buckets (each the largest value of a contiguous run of sorted values) minimising padding."""
    vals = sorted(set(values))
    n = len(vals)
    cost = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i, n):
            cost[i][j] = sum((vals[j] - v) / vals[j] for v in vals[i : j + 1]) if vals[j] else 0.0
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(k + 1)]
    cut = [[0] * (n + 1) for _ in range(k + 1)]
    best[0][0] = 0.0
    for b in range(1, k + 1):
        for j in range(1, n + 1):
            for i in range(b - 1, j):
                c = best[b - 1][i] + cost[i][j - 1]
                if c < best[b][j]:
                    best[b][j], cut[b][j] = c, i
    buckets, j = [], n
    for b in range(k, 0, -1):
        buckets.append(vals[j - 1])
        j = cut[b][j]
    return sorted(buckets)


def bucket_advice(values: list[int]) -> list[dict[str, Any]]:
    """Concrete options for a varying dimension: pad to the maximum, round up to powers of two, or a
    small set of buckets fitted to the observed sizes; each with the compiles it would leave."""
    vals = sorted(set(values))
    if len(vals) < 2:
        return []
    options: list[dict[str, Any]] = [{
        "strategy": "pad", "buckets": [vals[-1]], "compiles": 1,
        "padding": round(_padding(vals, [vals[-1]]), 3),
        "advice": f"pad to {vals[-1]}: 1 compile instead of {len(vals)}",
    }]
    pow2 = sorted({_pow2(v) for v in vals})
    if len(pow2) < len(vals):
        options.append({
            "strategy": "powers_of_two", "buckets": pow2, "compiles": len(pow2),
            "padding": round(_padding(vals, pow2), 3),
            "advice": f"pad up to the next power of two ({', '.join(map(str, pow2))}): "
                      f"{len(pow2)} compiles instead of {len(vals)}",
        })
    k = min(MAX_BUCKETS, len(vals) - 1)
    if k >= 2:
        fitted = _optimal_buckets(vals, k)
        if fitted != pow2:
            options.append({
                "strategy": "fitted", "buckets": fitted, "compiles": len(fitted),
                "padding": round(_padding(vals, fitted), 3),
                "advice": f"pad up to one of {', '.join(map(str, fitted))}: "
                          f"{len(fitted)} compiles instead of {len(vals)}",
            })
    return options


_GENERATE = re.compile(r"\.generate\s*\(")
# attention's ops: a KV cache that grows makes their shapes change every step
_ATTENTION = re.compile(r"^aten::(bmm|baddbmm|matmul|_softmax|softmax|_scaled_dot_product\w*|scaled_dot_product\w*)(\.|$)")


def cache_advice(source: str, ops: list[dict[str, Any]]) -> str | None:
    """Advice for recompiles driven by a library's generation loop at the user's line: HF
    `generate()` grows its default (dynamic) KV cache by one token per step, so attention runs at
    a new shape every step; a static cache keeps the decode step at one shape (what is left, the
    output ids growing, is cheap bookkeeping)."""
    if not _GENERATE.search(source):
        return None
    if not any(_ATTENTION.match(op["op"]) and op.get("varied") and op.get("recompiles") for op in ops):
        return None
    return ("generate() grows its KV cache one token per step, a new graph each: use a static cache, "
            "generate(..., cache_implementation=\"static\") (one prefill and one decode graph)")
