"""Device types listed as data: `device.type in ("cuda", "xpu")`, `SUPPORTED = ["cuda", "cpu"]`,
and tables keyed by device type: `{"xpu": "ccl", "cuda": "nccl"}.get(dev_type, "gloo")`,
`map_location={"cuda:1": "cuda:0"}`.

Renaming the entry would drop CUDA from the list (a program that also runs on GPUs changes
meaning); the fix adds a `"neuron"` entry beside the CUDA one instead, for both targets (the
accelerator target keeps the CUDA entry too, so the literal name is what it needs).

A table key gets `"neuron": <what Neuron needs where CUDA had the value>`: a process-group backend
`"nccl"` becomes `"neuron"` (TorchNeuron's backend), a CUDA device string its `neuron` form
(`"cuda:0"` the bare `"neuron"`; a kept index is unsafe: see `device.explicit_index`). A
`torch.cuda` name as the CUDA entry's value stays; the fix of that name's own rule adds the
`neuron` entry with its rename (`table_value`: `{"cuda": torch.cuda.empty_cache}` gains
`"neuron": torch.neuron.empty_cache`). Other plain values (numbers, `torch.float16`, a string
that names nothing CUDA) are copied, but only as an unsafe fix: that Neuron wants what CUDA wants
there is an assumption. A value that is code or names something CUDA-specific (`"cudnn"`, a
`torch.cuda` name no rule renames) has no automatic fix.
"""

from __future__ import annotations

import ast
import re

from neuron_migrate.findings import Edit, Span
from neuron_migrate.scan.fixes.context import FixContext, FixResult
from neuron_migrate.scan.fixes.device import INDEXED, drops_index, index_title
from neuron_migrate.scan.fixes.syntax import parent_of
from neuron_migrate.scan.matchers.device_strings import held_together
from neuron_migrate.scan.matchers.site import LineIndex, Site

_CONTAINERS = (ast.Tuple, ast.List, ast.Set)


def container_of(site: Site) -> ast.AST | None:
    """The tuple, list or set literal the matched string is an entry of."""
    literal = site.literal
    if literal is None or literal.__class__ is not ast.Constant:
        return None
    parent = parent_of(site.stmt, literal)
    if parent.__class__ not in _CONTAINERS or not any(e is literal for e in parent.elts):  # type: ignore[union-attr]
        return None
    if _concrete(site):
        return None  # `["cuda:0", "cuda:1"]` lists devices to use, not device types: no entry is added
    return None if held_together(parent_of(site.stmt, parent), parent) else parent  # type: ignore[arg-type]


# Why a device-type entry has no fix (a table value that is code or CUDA-specific).
NO_ENTRY = ("a device type listed as data keeps its CUDA entry; add a `neuron` one by hand "
            "(what it maps to on Trainium has no automatic answer)")


def table_of(site: Site) -> ast.Dict | None:
    """The dict literal the matched string is a key of."""
    literal = site.literal
    if literal is None or literal.__class__ is not ast.Constant:
        return None
    parent = parent_of(site.stmt, literal)
    if parent.__class__ is ast.Dict and any(k is literal for k in parent.keys):  # type: ignore[union-attr]
        return parent  # type: ignore[return-value]
    return None


def is_data(site: Site) -> bool:
    if _concrete(site):  # a listed device with its index is a device to use, unless it keys a table
        return table_of(site) is not None
    return site.data or container_of(site) is not None or table_of(site) is not None


def _concrete(site: Site) -> bool:
    literal = site.literal
    return literal.__class__ is ast.Constant and isinstance(literal.value, str) and INDEXED.fullmatch(literal.value) is not None  # type: ignore[union-attr]


def neuron_entry(value: str, token: str) -> str:
    return "neuron" + value[len(token) :]


def has_neuron_entry(container: ast.AST, literal: ast.AST, token: str) -> bool:
    want = neuron_entry(literal.value, token)  # type: ignore[attr-defined]
    return any(e.__class__ is ast.Constant and e.value == want for e in container.elts)  # type: ignore[attr-defined]


def _spelled_like(ctx: FixContext, literal: ast.AST, new: str) -> str | None:
    """`new` written as a string literal with `literal`'s own prefix and quotes."""
    parts = ctx.string_parts(literal)
    if parts is None or "\n" in ctx.text(literal):
        return None
    _span, prefix, quote = parts
    return f"{prefix}{quote}{new}{quote}"


def entry_fix(site: Site, ctx: FixContext) -> FixResult | None:
    """`("cuda", "xpu")` -> `("cuda", "neuron", "xpu")`, spelled with the entry's own quotes."""
    literal = site.literal
    if literal is None or not literal.value.startswith(site.token):  # type: ignore[attr-defined]
        return None
    table = table_of(site)
    if table is not None:
        return _table_entry(site, table, ctx)
    container = container_of(site)
    if container is None:
        return None
    entry = _spelled_like(ctx, literal, neuron_entry(literal.value, site.token))  # type: ignore[attr-defined]
    if entry is None:
        return None
    edit = ctx.insert_after(literal, f", {entry}")
    other = next((e.value for e in container.elts  # type: ignore[attr-defined]
                  if e.__class__ is ast.Constant and isinstance(e.value, str)
                  and e.value.lower() in _OTHER_LIBRARIES_NAMES), None)
    if other is not None:
        return FixResult(f'Add a "neuron" entry beside the CUDA one (unsafe: the list also names `{other}`, a device of '
                         'another library, which may reject `neuron`)', (edit,), unsafe=True)
    return FixResult('Add a "neuron" entry beside the CUDA one', (edit,))


# Device names PyTorch does not have: a list holding one lists the devices of another library
# (ModelScope's `{"cpu", "cuda", "gpu"}`, Lightning's accelerators), which may reject `neuron`.
_OTHER_LIBRARIES_NAMES = frozenset({"gpu", "tpu"})


# A value naming any of these is CUDA-specific: what Neuron needs instead is for a person to say.
_CUDA_WORDS = re.compile(r"cuda|nccl|cudnn|cublas|cufft|nvidia|nvml|triton|tensorrt|apex", re.IGNORECASE)
_DEVICE_STRING = re.compile(r"^[a-z]+(?::\d+)?$")


def _neuron_value(value: ast.AST, ctx: FixContext, token: str) -> tuple[str, str, bool] | None:
    """(the value the `neuron` entry maps to, what the title adds, whether that is unsafe), or None
    if unknown."""
    if value.__class__ is ast.Constant:
        v = value.value  # type: ignore[attr-defined]
        if isinstance(v, str):
            if v == "nccl":  # the process-group backend: TorchNeuron's is "neuron"
                new = _spelled_like(ctx, value, "neuron")
                return (new, "", False) if new is not None else None
            if v.startswith(token) and _DEVICE_STRING.match(v):  # "cuda:0" -> "neuron", "cuda:1" -> "neuron:1"
                index = v.partition(":")[2] or None
                drop = drops_index(index, ctx)
                new = _spelled_like(ctx, value, "neuron" if drop else neuron_entry(v, token))
                return (new, index_title(index, drop, "neuron"), index is not None and not drop) if new is not None else None
            if _CUDA_WORDS.search(v):
                return None
        elif v.__class__ not in (int, float, bool) and v is not None:
            return None
    else:
        dotted = value
        while dotted.__class__ is ast.Attribute:
            dotted = dotted.value  # type: ignore[attr-defined]
        if dotted.__class__ is not ast.Name or dotted.id not in ctx.aliases.names:  # type: ignore[attr-defined]
            return None  # only a name the file imports (`torch.float16`), never code
        if ctx.aliases.root(dotted.id) != "torch" and not (ctx.aliases.root(dotted.id) or "").startswith("torch."):  # type: ignore[attr-defined]
            return None
    text = ctx.text(value)
    if "\n" in text or _CUDA_WORDS.search(text):
        return None
    return text, " (a copy of the CUDA value)", True


def _table_entry(site: Site, table: ast.Dict, ctx: FixContext) -> FixResult | None:
    """`{"xpu": "ccl", "cuda": "nccl"}` -> `{"xpu": "ccl", "cuda": "nccl", "neuron": "neuron"}`; in a
    dict written one entry per line, the new entry gets its own line."""
    literal = site.literal
    i = next(i for i, k in enumerate(table.keys) if k is literal)
    value = table.values[i]
    key = _spelled_like(ctx, literal, neuron_entry(literal.value, site.token))  # type: ignore[arg-type,union-attr]
    found = _neuron_value(value, ctx, site.token)
    if key is None or found is None:
        return None
    new, note, unsafe = found
    return FixResult('Add a "neuron" entry beside the CUDA one' + note, (_add_entry(ctx, literal, value, key, new),),
                     unsafe=unsafe)


def _add_entry(ctx: FixContext, key_node: ast.AST, value: ast.AST, key: str, new: str) -> Edit:
    """The edit that adds `key: new` after the entry `key_node: value`; in a dict written one
    entry per line, on its own line."""
    k_span, v_span = ctx.span(key_node), ctx.span(value)
    own_line = ctx.lines.line(k_span.line)
    after = ctx.lines.line(v_span.end_line)[v_span.end_col :]
    indent = own_line[: k_span.col]
    if not indent.strip() and after.strip() == ",":  # one entry per line, a comma after each
        line_end = v_span.end_col + len(after)
        return Edit(Span(v_span.end_line, line_end, v_span.end_line, line_end), f"\n{indent}{key}: {new},")
    return ctx.insert_after(value, f", {key}: {new}")


_TEXT_TEST_LINES = 40


def table_value(site: Site, lines: LineIndex) -> tuple[ast.Dict, ast.Constant, ast.AST] | None:
    """(the table, its CUDA key, the value) when the matched name is the value of a table keyed by
    device type (`{"cuda": torch.cuda.empty_cache}`, `{"cuda": torch.cuda.device_count()}`): the
    CUDA entry's own value, data like the key. The statement's text up to the value's first line is
    looked at first (the `{` and the key come before the value): most hold no quoted `cuda` key, and
    the tree is not walked for them. Not the whole statement: a site in an `if` or `with` header has
    the whole block as its statement. A long one (a table of thousands of sites) has its parents
    mapped once instead of its text read again for each site."""
    first, last = site.stmt_line, site.node.lineno  # type: ignore[attr-defined]
    if last - first < _TEXT_TEST_LINES:
        text = lines.line(first) if first == last else "\n".join(lines.line(n) for n in range(first, last + 1))
        if "{" not in text or ('"cuda' not in text and "'cuda" not in text):
            return None
    value = site.node
    parent = parent_of(site.stmt, value)
    if parent.__class__ is ast.Call and parent.func is value:  # type: ignore[union-attr]
        value, parent = parent, parent_of(site.stmt, parent)  # type: ignore[assignment]
    if parent.__class__ is not ast.Dict:
        return None
    i = next((i for i, v in enumerate(parent.values) if v is value), None)  # type: ignore[union-attr]
    key = parent.keys[i] if i is not None else None  # type: ignore[union-attr]
    if key.__class__ is not ast.Constant or not isinstance(key.value, str) or key.value.partition(":")[0] != "cuda":  # type: ignore[union-attr]
        return None
    return parent, key, value  # type: ignore[return-value]


def table_value_fix(site: Site, span: Span, ctx: FixContext, fix: FixResult) -> FixResult | None:
    """`fix` (the rule's fix of the matched name) where the name is no CUDA table entry's value;
    where it is, `{"cuda": torch.cuda.empty_cache}` -> `{"cuda": torch.cuda.empty_cache, "neuron":
    torch.neuron.empty_cache}`: the CUDA entry keeps its value, and the `neuron` entry gets the
    value as `fix` (one edit of the name's span) would write it; None when it cannot."""
    found = table_value(site, ctx.lines)
    if found is None:
        return fix
    if len(fix.edits) != 1 or fix.edits[0].span != span:  # the CUDA value keeps its import
        return None
    _table, key_node, value = found
    key = _spelled_like(ctx, key_node, neuron_entry(key_node.value, "cuda"))
    text, matched = ctx.text(value), ctx.text(site.node)
    if key is None or "\n" in text or not text.startswith(matched):
        return None
    edit = _add_entry(ctx, key_node, value, key, fix.edits[0].replacement + text[len(matched):])
    return FixResult('Add a "neuron" entry beside the CUDA one', (edit,), fix.add_imports, unsafe=fix.unsafe)


def _has_key(table: ast.Dict, key: str) -> bool:
    return any(k.__class__ is ast.Constant and k.value == key for k in table.keys)  # type: ignore[union-attr]


def already_listed(site: Site, lines: LineIndex) -> bool:
    """The entry's container (or the table it keys, or the table whose value it is) lists the
    `neuron` form too: nothing left to port (and reporting it would make the fix add the entry
    again on every run)."""
    container = container_of(site)
    if container is not None:
        return has_neuron_entry(container, site.literal, site.token)  # type: ignore[arg-type]
    if site.kind == "qualified_names":
        found = table_value(site, lines)
        return found is not None and _has_key(found[0], neuron_entry(found[1].value, "cuda"))
    if site.literal is None:
        return False
    table = parent_of(site.stmt, site.literal)
    if table.__class__ is not ast.Dict:
        return False
    keys = table.keys  # type: ignore[attr-defined]
    if any(k is site.literal for k in keys):
        return _has_key(table, neuron_entry(site.literal.value, site.token))  # type: ignore[arg-type,attr-defined]
    # `"nccl"` under `"cuda"` in a table that has its `"neuron"` entry: CUDA's own value, ported.
    key = next((k for k, v in zip(keys, table.values, strict=True) if v is site.literal), None)  # type: ignore[attr-defined]
    if key.__class__ is not ast.Constant or not isinstance(key.value, str):  # type: ignore[union-attr]
        return False
    kind, colon, index = key.value.partition(":")  # type: ignore[union-attr]
    return kind == "cuda" and _has_key(table, f"neuron{colon}{index}")  # type: ignore[arg-type]
