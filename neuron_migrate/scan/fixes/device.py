"""Named fixers for device placement: `accelerator_device_string`, `cuda_method`,
`is_cuda_attribute`."""

from __future__ import annotations

import ast
import re

from neuron_migrate.findings import Edit, Span, Target
from neuron_migrate.scan.fixes.bindings import evidently_torch
from neuron_migrate.scan.fixes.context import FixContext, FixResult
from neuron_migrate.scan.fixes.syntax import comparison_needs_parens, defaults, dotted, parent_of, walk
from neuron_migrate.scan.matchers.site import Site

ACCELERATOR = "torch.accelerator.current_accelerator"


def accelerator_type(ctx: FixContext, quote: str = '"') -> tuple[str, tuple[str, ...]]:
    """The current accelerator's device type, or "cpu" on a machine without one, as this file
    spells it. `current_accelerator()` is None there, so a bare `.type` would fail (at import,
    in a default argument) where the CUDA code ran on the CPU. `quote` writes the string."""
    acc, add = ctx.spelled(ACCELERATOR)
    dev, add2 = ctx.spelled("torch.device")
    return f"({acc}() or {dev}({quote}cpu{quote})).type", add + add2


def compared_accelerator_type(ctx: FixContext, quote: str = '"') -> tuple[str, tuple[str, ...]]:
    """What a device type is compared with: the current accelerator's type, or a text no device
    type equals or contains on a machine without one, so `x.device.type == "cuda"` stays False
    there as it was (a "cpu" fallback would make every CPU tensor match)."""
    acc, add = ctx.spelled(ACCELERATOR)
    return f"getattr({acc}(), {quote}type{quote}, {quote}no accelerator{quote})", add


def _other(quote: str) -> str:
    return "'" if quote[0] == '"' else '"'


def accelerator_string_edit(
    ctx: FixContext, literal: ast.AST, token: str, *, compared: bool = False, drop_index: bool = False
) -> tuple[Edit, tuple[str, ...]] | None:
    """Turn the device type at the start of a string into the current accelerator's type:
    `"cuda"` -> `(torch.accelerator.current_accelerator() or torch.device("cpu")).type`,
    `"cuda:1"` -> f"{...}:1", `f"cuda:{i}"` -> f"{...}:{i}". Inside an f-string the expression
    quotes with the other quote (Python 3.11 cannot nest the same one). `compared`: the string is
    an operand of a comparison (`compared_accelerator_type`). `drop_index`: `"cuda:0"` becomes
    the bare type (see `explicit_index`)."""
    form = compared_accelerator_type if compared else accelerator_type
    parts = ctx.string_parts(literal)
    if parts is None:
        return None
    span, prefix, quote = parts
    if literal.__class__ is ast.JoinedStr:
        expr, add = form(ctx, _other(quote))
        edit = ctx.token_edit(literal, token, "{" + expr + "}")
        return (edit, add) if edit is not None else None
    if span.line != span.end_line:
        return None
    line = ctx.lines.line(span.line)
    start = span.col + len(prefix) + len(quote)
    if not line.startswith(token, start):
        return None
    rest = line[start + len(token) : span.end_col]  # the tail of the contents and the closing quote
    if drop_index and rest == ":0" + quote:
        rest = quote
    if rest == quote:
        expr, add = form(ctx, quote[0])
        return Edit(span, expr), add
    # Anything after the type stays literal text of an f-string (braces doubled for `.format`).
    expr, add = form(ctx, _other(quote))
    f_prefix = prefix.replace("u", "").replace("U", "") + "f"
    escaped = rest[: -len(quote)].replace("{", "{{").replace("}", "}}") + quote
    return Edit(span, f"{f_prefix}{quote}{{{expr}}}{escaped}"), add


_STRING_TESTS = frozenset({"startswith", "endswith"})


def compared(root: ast.AST, literal: ast.AST) -> bool:
    """The string is what a device type is compared with: an operand of a comparison, or the
    argument of `str.startswith`/`endswith` (`device.startswith("cuda")`)."""
    parent = parent_of(root, literal)
    if parent.__class__ is ast.Compare:
        return True
    return (parent.__class__ is ast.Call and parent.func.__class__ is ast.Attribute  # type: ignore[union-attr]
            and parent.func.attr in _STRING_TESTS and any(a is literal for a in parent.args))  # type: ignore[union-attr]


def backend_choice(root: ast.AST, literal: ast.AST) -> bool:
    """Whether the string is a value of something named a backend, not a device (`backend =
    "cuda"`, `if kernel_backend == "cuda"`, `f(x, backend="cuda")`): often a choice of kernels
    (`"cuda"` vs `"triton"`) that code dispatches on, where `"neuron"` matches no branch. A
    process-group backend (`"nccl"`) is the backend itself: `"neuron"` is its counterpart."""
    if _nccl(literal):
        return False
    parent = parent_of(root, literal)
    if parent.__class__ is ast.IfExp:  # `backend = "cuda" if ok else "triton"`
        parent = parent_of(root, parent)
    if parent.__class__ is ast.keyword:
        names = [parent.arg or ""]  # type: ignore[attr-defined]
    elif parent.__class__ is ast.Compare:
        names = [_name(n) for n in (parent.left, *parent.comparators)]  # type: ignore[attr-defined]
    elif parent.__class__ in (ast.Assign, ast.AnnAssign):
        names = [_name(t) for t in getattr(parent, "targets", None) or [parent.target]]  # type: ignore[attr-defined]
    else:
        return False
    return any("backend" in n and "device" not in n for n in map(str.lower, names))


def _name(node: ast.AST) -> str:
    return node.id if node.__class__ is ast.Name else node.attr if node.__class__ is ast.Attribute else ""  # type: ignore[attr-defined]


def explicit_index(site: Site) -> str | None:
    """The index of a plain `"cuda:<i>"` string that picks a device (not one a device is compared
    with, nor an f-string's).

    Under a launcher TorchNeuron gives local rank r the one device `neuron:r`, where every CUDA
    rank can address GPU 0: `torch.load(f, map_location="cuda:0")` on every rank works on CUDA,
    and `"neuron:0"` raises on rank 1. The bare `"neuron"` is each process's own device (the same
    `neuron:0` in a single process), so index 0 becomes the bare type (`drops_index`); a fix that
    keeps an index is unsafe."""
    literal = site.literal
    if literal is None or literal.__class__ is not ast.Constant or not isinstance(literal.value, str):  # type: ignore[attr-defined]
        return None
    kind, colon, index = literal.value.partition(":")  # type: ignore[attr-defined]
    if kind != site.token or not colon or not (index.isascii() and index.isdigit()) or compared(site.stmt, literal):
        return None
    return index


def drops_index(index: str | None, ctx: FixContext) -> bool:
    """Whether the fix writes the bare device type for this explicit index: for 0, unless the file
    takes device strings apart (`reads_device_indices`), where the index is kept and the fix is
    unsafe, as it is for any other index (another rank owns it under a launcher)."""
    return index == "0" and not ctx.reads_device_indices


def index_title(index: str | None, drop: bool, new: str) -> str:
    if index is None:
        return ""
    if drop:
        return f" (each process's own device: `{new}:0` in a single process)"
    return f" (keeps index {index}: under a launcher only local rank {index} owns `{new}:{index}`)"


_SPLITS = frozenset({"split", "rsplit", "partition", "rpartition"})


_MAY_READ = re.compile(r"\.\s*index\b|(?:split|partition|set_device(?:_index)?)\s*\(")
# Calls that need a device's index: a device string passed to one (mmdet3d's `device='cuda:0'`
# ... `torch.cuda.set_device(device)`) raises without it.
_SETS_INDEX = frozenset({"set_device", "set_device_index"})
# A device string cut at the length of CUDA's spelling (`self.device[:4]` for "cuda", `dev[5:]`
# past "cuda:"; LivePortrait's `autocast(device_type=self.device[:4])`): "neuron" is longer.
_DEVICE_SLICE = re.compile(r"dev\w*\)?\s*\[\s*(?:(?:0\s*)?:\s*[45]|[45]\s*:)\s*\]", re.IGNORECASE)


def slices_device_strings(source: str) -> bool:
    """Whether the file cuts a device string by position anywhere (its text, skipped functions
    too): a fix that respells the device type changes what the cut gives."""
    return _DEVICE_SLICE.search(source) is not None


INDEX_READS = frozenset({"index", *_SPLITS, *_SETS_INDEX})  # the words of such a read (`scan.parse`: skipped regions)


def reads_device_indices(tree: ast.Module, source: str) -> bool:
    """`x.split(":")` (and `rsplit`/`partition`), a read of an `.index` attribute, or a value that
    is no literal passed to `set_device` anywhere (the text is looked at first: most files have
    none of these words)."""
    if _MAY_READ.search(source) is None:
        return False
    called: set[int] = set()
    indexed: list[ast.AST] = []
    for node in walk(tree):
        if node.__class__ is ast.Attribute and node.attr == "index":  # type: ignore[attr-defined]
            indexed.append(node)
        elif node.__class__ is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            called.add(id(func))
            if func.__class__ is ast.Attribute and func.attr in _SPLITS and any(
                    a.__class__ is ast.Constant and a.value == ":" for a in node.args):  # type: ignore[attr-defined]
                return True
            if func.__class__ is ast.Attribute and func.attr in _SETS_INDEX and any(
                    a.__class__ is not ast.Constant for a in node.args):  # type: ignore[attr-defined]
                return True
    return any(id(n) not in called for n in indexed)


def index_argument(site: Site, ctx: FixContext) -> ast.Constant | None:
    """The literal index of `torch.device("cuda", 0)`, the other spelling of `"cuda:0"`."""
    literal = site.literal
    call = parent_of(site.stmt, literal) if literal is not None else None
    if call.__class__ is not ast.Call or call.keywords or len(call.args) != 2 or call.args[0] is not literal:  # type: ignore[union-attr]
        return None
    index = call.args[1]  # type: ignore[union-attr]
    if index.__class__ is not ast.Constant or index.value.__class__ is not int:  # type: ignore[attr-defined]
        return None
    return index if ctx.aliases.qualified(call.func) == "torch.device" else None  # type: ignore[union-attr, return-value]


def _indexed(site: Site, ctx: FixContext) -> tuple[str | None, bool, tuple[Edit, ...]]:
    """(the explicit index, whether the fix drops it, the edit that drops `torch.device`'s index
    argument)."""
    index = explicit_index(site)
    argument = index_argument(site, ctx) if index is None else None
    if argument is not None:
        index = str(argument.value)
    drop = (drops_index(index, ctx) and not _indexed_alternative(site) and not _among_devices(site)
            and not _compared_later(site, ctx))
    if argument is None or not drop:
        return index, drop, ()
    end = ctx.span(site.literal)  # type: ignore[arg-type]
    stop = ctx.span(argument)
    return index, drop, (Edit(Span(end.end_line, end.end_col, stop.end_line, stop.end_col), ""),)


INDEXED = re.compile(r"[a-z]+:\d+")  # a device type with its index


def _compared_later(site: Site, ctx: FixContext) -> bool:
    """`device = torch.device("cuda:0")` ... `assert x.device == device`: the name the device is
    assigned to is compared in the same function, where `torch.device("neuron")` (no index) is
    not equal to a tensor's `neuron:0` (poutyne's tests)."""
    stmt = site.stmt
    if stmt.__class__ is not ast.Assign or len(stmt.targets) != 1 or stmt.targets[0].__class__ is not ast.Name:  # type: ignore[attr-defined]
        return False
    name = stmt.targets[0].id  # type: ignore[attr-defined]
    scope = ctx.function_of(stmt)
    return scope is not None and any(
        n.__class__ is ast.Compare and any(o.__class__ in (ast.Eq, ast.NotEq) for o in n.ops)  # type: ignore[attr-defined]
        and any(v.__class__ is ast.Name and v.id == name for v in (n.left, *n.comparators))  # type: ignore[attr-defined]
        for n in walk(scope))


def _among_devices(site: Site) -> bool:
    """`["cuda:0", "cuda:1"]`, `[torch.device("cuda:0"), torch.device("cuda:1")]`: one of several
    devices a list gives by index. Bare, `neuron` would leave its partners' indexes counting other
    devices (compressed-tensors' conversion workers), so each keeps its index (an unsafe fix)."""
    node: ast.AST | None = site.literal
    parent = parent_of(site.stmt, node) if node is not None else None
    if parent.__class__ is ast.Call:
        node, parent = parent, parent_of(site.stmt, parent)
    if parent.__class__ not in (ast.List, ast.Tuple, ast.Set):
        return False
    return any(e is not node and INDEXED.fullmatch(_device_text(e) or "") for e in parent.elts)  # type: ignore[union-attr]


def _device_text(node: ast.AST) -> str | None:
    """The string of `"cuda:1"` or of `torch.device("cuda:1")`."""
    if node.__class__ is ast.Call and node.args:  # type: ignore[attr-defined]
        node = node.args[0]  # type: ignore[attr-defined]
    return node.value if node.__class__ is ast.Constant and isinstance(node.value, str) else None  # type: ignore[attr-defined]


def _indexed_alternative(site: Site) -> bool:
    """`"cuda:0" if gpu else "cpu:0"`: the other choice names its index too, so the code reading
    the result expects one (d3rlpy takes `cuda:<i>` apart in another file)."""
    literal = site.literal
    parent = parent_of(site.stmt, literal) if literal is not None else None
    if parent.__class__ is not ast.IfExp:
        return False
    other = parent.orelse if parent.body is literal else parent.body  # type: ignore[union-attr]
    return other.__class__ is ast.Constant and isinstance(other.value, str) and INDEXED.fullmatch(other.value) is not None  # type: ignore[attr-defined]


def device_string(site: Site, ctx: FixContext, new: str) -> FixResult | None:
    """The device type inside the string becomes `new`; `"cuda:0"` (`torch.device("cuda", 0)`)
    becomes the bare `new`."""
    if site.literal is None:
        return None
    index, drop, dropped = _indexed(site, ctx)
    edit = ctx.token_edit(site.literal, f"{site.token}:0" if drop and not dropped else site.token, new)
    if edit is None:
        return None
    # (a compile or process-group backend given by keyword is no device: `backend="inductor"`)
    noun = "backend" if site.arg.__class__ is ast.keyword and "backend" in (site.arg.arg or "") else "device"  # type: ignore[union-attr]
    title = f"Use {noun} `{new}`" + index_title(index, drop, new)
    why = _caution(site, ctx)
    if why is not None:
        return FixResult(f"{title} (unsafe: {why})", (edit, *dropped), unsafe=True)
    if _nccl(site.literal) and ctx.tests_backend:
        return FixResult(f"{title} (unsafe: this file tests the backend by name, `get_backend()` or `Backend.NCCL`, "
                         "and its NCCL branches do not see `neuron`)", (edit, *dropped), unsafe=True)
    return FixResult(title, (edit, *dropped), unsafe=(index is not None and not drop) or backend_choice(
        site.stmt, site.literal) or ctx.slices_device_strings)


def _caution(site: Site, ctx: FixContext) -> str | None:
    """Why renaming the string may change more than the device (a capability it tests for, a
    device its caller gives), or None."""
    if _expects_error(site):
        return _EXPECTS
    if _falls_back(site, ctx):
        return _FALLS_BACK
    if _with_dtype(site):
        return _WITH_DTYPE
    if _paired_with_member(site):
        return _MEMBER
    return None


# Assertions that a call raises: `pytest.raises`, `self.assertRaises`, `assertRaisesRegex`.
_RAISES = frozenset({"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp"})
_EXPECTS = "the branch it tests for expects an error of CUDA's, which the accelerator need not raise"


def _expects_error(site: Site) -> bool:
    """sbi's `if dev.type == "cuda": with pytest.raises(NotImplementedError): histogram(...)`: a
    branch that asserts what CUDA lacks; renamed, the test claims Neuron lacks it too."""
    stmt, literal = site.stmt, site.literal
    if stmt.__class__ is not ast.If or not any(n is literal for n in walk(stmt.test)):  # type: ignore[attr-defined]
        return False
    return any(n.__class__ is ast.Call and (getattr(n.func, "attr", None) or getattr(n.func, "id", None)) in _RAISES  # type: ignore[attr-defined]
               for branch in (stmt.body, stmt.orelse) for top in branch for n in walk(top))  # type: ignore[attr-defined]


_MEMBER = "it is paired with a `CUDA` member (an enum's), which stays: renamed, that member would stand for Neuron"


def _paired_with_member(site: Site) -> bool:
    """Thunder's `{DeviceType.CUDA: "cuda"}`: the string names what a `CUDA` member stands for, a
    project's own table, not a device choice. (A check that returns the member, `if s == "cuda":
    return DeviceType.CUDA`, is held by the guard rule: the member is a CUDA word it guards.)"""
    literal = site.literal
    parent = parent_of(site.stmt, literal) if literal is not None else None
    return parent.__class__ is ast.Dict and any(
        v is literal and k.__class__ is ast.Attribute and k.attr == "CUDA"  # type: ignore[attr-defined]
        for k, v in zip(parent.keys, parent.values, strict=True))  # type: ignore[union-attr]


_WITH_DTYPE = ("it is tested with a dtype, a kernel's gap or feature on CUDA (no bfloat16 kthvalue), "
               "which Neuron need not share")
_DTYPES = frozenset({"float16", "half", "bfloat16", "float32", "float", "float64", "double", "float8_e4m3fn",
                     "float8_e5m2", "int8", "uint8"})


def _with_dtype(site: Site) -> bool:
    """brevitas' `(dtype == torch.float16 and 'cpu' in device) or (dtype == torch.bfloat16 and
    'cuda' in device)`: a device test and-ed with a dtype test is a table of what CUDA's kernels
    lack or have; renamed, it claims the same of Neuron and drops CUDA's entry. (Climbs from the
    string to its `and`: a walk of a large statement for every string was quadratic.)"""
    stmt, node = site.stmt, site.literal
    parent = None
    for _ in range(4):  # the string, its comparison (or `startswith` call, tuple), then the `and`
        parent = parent_of(stmt, node) if node is not None else None
        if parent.__class__ is ast.BoolOp or parent.__class__ not in _TEST_PARTS:
            break
        node = parent
    if parent.__class__ is not ast.BoolOp or parent.op.__class__ is not ast.And:  # type: ignore[union-attr]
        return False
    return any(o is not node and o.__class__ is ast.Compare and any(
        n.__class__ is ast.Attribute and n.attr in _DTYPES and (dotted(n) or "").startswith("torch.")  # type: ignore[attr-defined]
        for n in (o.left, *o.comparators))  # type: ignore[attr-defined]
        for o in parent.values)  # type: ignore[union-attr]


# What lies between a string and the `and` it is tested in.
_TEST_PARTS = (ast.Compare, ast.Call, ast.Attribute, ast.Tuple, ast.List, ast.Set, ast.UnaryOp)


_FALLS_BACK = ("a device given as `cuda` is no longer checked for CUDA (where CUDA is missing it fell back, "
               "returned or stopped): keep this clause and add one for the accelerator beside it")


def _falls_back(site: Site, ctx: FixContext) -> bool:
    """sparseml's `def fallback_to_cpu(device): if "cuda" in device and not torch.cuda.is_available():
    return "cpu"`, lama-cleaner's tests' `if device == "cuda" and not torch.cuda.is_available():
    return` under a parametrized `"cuda"` (kept, a `"neuron"` added beside it): a check of a device
    its caller gives (a parameter, `args.device`). Renamed, a caller's `cuda` (its command line's,
    its docs', the test's parameter) passes where CUDA is missing."""
    stmt, literal = site.stmt, site.literal
    if stmt.__class__ is not ast.If or stmt.test.__class__ is not ast.BoolOp or stmt.test.op.__class__ is not ast.And:  # type: ignore[attr-defined]
        return False
    operands = stmt.test.values  # type: ignore[attr-defined]
    tested = next((o for o in operands if any(n is literal for n in walk(o))), None)
    if tested is None or not any(o.__class__ is ast.UnaryOp and o.op.__class__ is ast.Not  # type: ignore[attr-defined]
                                 and (dotted(getattr(o.operand, "func", o.operand)) or "").endswith("is_available")  # type: ignore[attr-defined]
                                 for o in operands):
        return False
    # The device compared comes from elsewhere unless the function binds its name itself (a
    # parameter comes from the caller).
    called = {id(n.func) for n in walk(tested) if n.__class__ is ast.Call}  # type: ignore[attr-defined]
    names = {n.id for n in walk(tested) if n.__class__ is ast.Name and id(n) not in called}  # type: ignore[attr-defined]
    scope = ctx.function_of(stmt) or ctx.tree
    bound = {n.id for n in walk(scope) if n.__class__ is ast.Name and n.ctx.__class__ is ast.Store}  # type: ignore[attr-defined]
    return any(name not in bound and name not in _rows_of(scope) for name in names)


def _rows_of(function: ast.AST) -> set[str]:
    """The parameters a `pytest.mark.parametrize` of several names gives (skorch's `"device_from,
    device_to"`): its rows are renamed whole, so no `"cuda"` reaches the test (a list of one name's
    device types keeps its `"cuda"` beside the added `"neuron"`)."""
    out: set[str] = set()
    for d in getattr(function, "decorator_list", ()):
        if d.__class__ is ast.Call and getattr(d.func, "attr", None) == "parametrize" and d.args:  # type: ignore[attr-defined]
            first = d.args[0]  # type: ignore[attr-defined]
            spelled = first.value if first.__class__ is ast.Constant and isinstance(first.value, str) else None
            names = [n.strip() for n in spelled.split(",")] if spelled is not None else []
            if len(names) > 1:
                out.update(names)
    return out


# The file tests the process-group backend by name (Transformer-XL's `all_reduce_item` dispatches on
# `get_backend()`: NCCL, Gloo, else it raises): a backend renamed to `neuron` takes none of its branches.
_BACKEND_TEST = re.compile(r"get_backend\s*\(|Backend\.NCCL\b")


def tests_backend(source: str) -> bool:
    """Whether the file tests the process-group backend by name anywhere (its text, skipped
    functions too)."""
    return _BACKEND_TEST.search(source) is not None


def _nccl(literal: ast.AST) -> bool:
    return literal.__class__ is ast.Constant and str(literal.value).lower() == "nccl"  # type: ignore[attr-defined]


def accelerator_device_string(site: Site, span: Span, ctx: FixContext, target: Target) -> FixResult | None:
    if site.literal is None:
        return None
    index, drop, dropped = _indexed(site, ctx)
    hit = accelerator_string_edit(ctx, site.literal, site.token, compared=compared(site.stmt, site.literal),
                                  drop_index=drop and not dropped)
    if hit is None:
        return None
    edit, add = hit
    title = "Use the current accelerator's device type" + index_title(index, drop, "<accelerator>")
    why = _caution(site, ctx)
    if why is not None:
        return FixResult(f"{title} (unsafe: {why})", (edit, *dropped), add, unsafe=True)
    return FixResult(title, (edit, *dropped), add, unsafe=(index is not None and not drop) or backend_choice(
        site.stmt, site.literal) or ctx.slices_device_strings)


def _index_text(ctx: FixContext, node: ast.AST) -> str | None:
    text = ctx.text(node)
    return None if "\n" in text else text


def _quote_inside(site: Site, node: ast.AST, ctx: FixContext) -> str:
    """The quote a string written at `node` may use: inside an f-string (`f"{x.cuda()}"`), the
    other one than the f-string's (Python 3.11 cannot nest the same quote)."""
    for outer in ast.walk(site.stmt):
        if outer.__class__ is ast.JoinedStr and any(n is node for n in ast.walk(outer)):
            parts = ctx.string_parts(outer)
            if parts is not None:
                return _other(parts[2])
    return '"'


# What `.cuda(...)` passes on that `.to(...)` takes too.
_TO_KEYWORDS = frozenset({"non_blocking", "memory_format"})


def cuda_method(site: Site, span: Span, ctx: FixContext, target: Target) -> FixResult | None:
    """`.cuda()` -> `.to("neuron")`, `.cuda(i)` -> `.to(f"neuron:{i}")` (accelerator target:
    `.to(torch.accelerator.current_accelerator())` / `.to(torch.device(<type>, i))`); other
    arguments (`non_blocking=`, `memory_format=`) are kept. `.cuda(0)` is `.cuda()`: each
    process's own device (`explicit_index`)."""
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
        elif kw.arg in _TO_KEYWORDS:
            rest.append(ctx.text(kw))
        else:  # `**kwargs`, or a keyword `.to` does not take (an old `.cuda(device_id=...)`, an object's own)
            return None
    if device.__class__ is ast.Constant and device.value.__class__ is int and device.value == 0:  # type: ignore[union-attr]
        device = None
    add: tuple[str, ...] = ()
    q = _quote_inside(site, call, ctx)
    if device is not None and _device_object(device, call, ctx):
        # `gpu = torch.device(args.device)` ... `.cuda(gpu)`: the device itself, no index; the
        # device string it was made from is a finding of its own.
        dev, title = ctx.text(device), f"Use .to({ctx.text(device)})"
    elif target is Target.NEURON:
        if device is None:
            dev = f"{q}neuron{q}"
        elif device.__class__ is ast.Constant and device.value.__class__ is int:  # type: ignore[attr-defined]
            dev = f"{q}neuron:{device.value}{q}"  # type: ignore[attr-defined]
        elif _none_by_default(device, call, ctx):
            # `def cuda(self, device=None): ... .cuda(device)`: "neuron:None" would not parse as a device
            torch_device, add = ctx.spelled("torch.device")
            dev = f"{torch_device}({q}neuron{q}, {ctx.text(device)})"
        else:
            index = _index_text(ctx, device)
            if index is None or "{" in index or "}" in index or "\\" in index:
                return None
            quote = q if q not in index and q == "'" else ('"' if '"' not in index else "'")
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
            kind, add3 = accelerator_type(ctx)
            add = add + add2 + add3
            dev = f"{torch_device}({kind}, {index})"
        title = "Use .to(<current accelerator>)"
    func = call.func
    if _may_be_storage(func.value, site):  # type: ignore[attr-defined]
        # A storage's `.to` takes its device by keyword only (`storage.to("neuron")` raises a
        # TypeError); a tensor's and a module's take it so too.
        dev, title = f"device={dev}", title.replace(".to(", ".to(device=", 1)
    end_line = func.end_lineno or func.lineno
    name_start = ctx.lines.col(end_line, (func.end_col_offset or 0) - len(func.attr.encode("utf-8")))  # type: ignore[attr-defined]
    whole = ctx.span(call)
    edit = Edit(Span(end_line, name_start, whole.end_line, whole.end_col), f"to({', '.join([dev, *rest])})")
    # `.to(...)` means the same only on a tensor or module; any other object's `.cuda()` is its own.
    receiver = func.value  # type: ignore[attr-defined]
    evident = evidently_torch(receiver, ctx.aliases) or (
        receiver.__class__ is ast.Call and receiver.func.__class__ is ast.Name and ctx.module_class(receiver.func.id))
    return FixResult(title, (edit,), add, unsafe=not evident)


_STORAGE_GETTERS = frozenset({"untyped_storage", "storage", "_typed_storage"})


def _may_be_storage(receiver: ast.AST, site: Site) -> bool:
    """Whether `.cuda()` may be called on a storage: one a tensor gives (`t.untyped_storage()`),
    one constructed (`torch.UntypedStorage(n)`), a name that says so, or the first parameter of a
    lambda (`torch.load`'s `map_location=lambda storage, loc: storage.cuda()`)."""
    if receiver.__class__ is ast.Call:
        func = receiver.func  # type: ignore[attr-defined]
        name = func.attr if func.__class__ is ast.Attribute else func.id if func.__class__ is ast.Name else ""
        return name in _STORAGE_GETTERS or name.endswith("Storage")
    if receiver.__class__ is not ast.Name:
        return False
    ident = receiver.id  # type: ignore[attr-defined]
    if "storage" in ident.lower():
        return True
    return any(node.__class__ is ast.Lambda and node.args.args and node.args.args[0].arg == ident  # type: ignore[attr-defined]
               and site.call is not None and any(n is site.call for n in ast.walk(node.body))  # type: ignore[attr-defined]
               for node in ast.walk(site.stmt))


def _none_by_default(arg: ast.AST, call: ast.AST, ctx: FixContext) -> bool:
    """Whether `arg` is a parameter of the function around `call` that defaults to None."""
    if arg.__class__ is not ast.Name:
        return False
    scope = ctx.function_of(call)
    return scope is not None and any(name == arg.id and d.__class__ is ast.Constant and d.value is None  # type: ignore[attr-defined]
                                     for name, d in defaults(scope.args))


def _device_object(arg: ast.AST, call: ast.AST, ctx: FixContext) -> bool:
    """Whether `arg` is a name the function around `call` binds only to `torch.device(...)` (its
    own local: the region of a function is parsed whole)."""
    if arg.__class__ is not ast.Name:
        return False
    scope = ctx.function_of(call)
    if scope is None:
        return False
    values = [n.value for n in walk(scope) if n.__class__ is ast.Assign  # type: ignore[attr-defined]
              and any(t.__class__ is ast.Name and t.id == arg.id for t in n.targets)]  # type: ignore[attr-defined]
    return bool(values) and all(v.__class__ is ast.Call and ctx.aliases.qualified(v.func) == "torch.device"  # type: ignore[attr-defined]
                                for v in values)


def is_cuda_attribute(site: Site, span: Span, ctx: FixContext, target: Target) -> FixResult | None:
    """`x.is_cuda` -> `x.is_neuron` (neuron) / `x.device.type == <accelerator type>` (accelerator)."""
    node = site.node
    if node.__class__ is not ast.Attribute:
        return None
    if target is Target.NEURON:
        return FixResult("Use .is_neuron", (Edit(span, "is_neuron"),))
    if node.ctx.__class__ is not ast.Load:  # type: ignore[attr-defined]
        return None  # `self.is_cuda = ...`: a comparison cannot be assigned to (the program's own attribute)
    receiver = ctx.text(node.value)  # type: ignore[attr-defined]
    if "\n" in receiver:
        return None
    if node.value.__class__ not in (ast.Name, ast.Attribute, ast.Call, ast.Subscript):  # type: ignore[attr-defined]
        receiver = f"({receiver})"
    acc, add = compared_accelerator_type(ctx)
    text = f"{receiver}.device.type == {acc}"
    if comparison_needs_parens(site.stmt, node):
        text = f"({text})"
    return FixResult("Compare the device type with the current accelerator's", (ctx.replace(node, text),), add)
