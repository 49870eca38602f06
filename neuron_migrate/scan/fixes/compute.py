"""One `Fix` per rewrite target of a rule, for one matched site.

Generic kinds (see `ruleset.model.TargetFix`):
  rename         the matched dotted name (`{name}` stands for its last component), spelled through
                 the file's own `import torch [as th]`, else in full with `import torch` added; for a
                 method, attribute, keyword or env-var match, the matched identifier / string text
  device_string  the device type inside the matched string; quotes, prefix, `:index`, f-string parts
                 stay
  replace        the matched node's source text (an argument's value, a string, a dotted name)
  remove_argument   the matched argument with its comma
  remove_statement  the statement holding the match (`pass` when its block would become empty)
  fixer          a named fixer from `registry.FIXERS`
"""

from __future__ import annotations

import ast
import re
from typing import assert_never

from neuron_migrate.findings import Edit, Fix, FixClass, Span, Target
from neuron_migrate.ruleset.model import FixKind, Rule, TargetFix
from neuron_migrate.scan.fixes.context import FixContext, FixResult
from neuron_migrate.scan.fixes.data import table_value_fix
from neuron_migrate.scan.fixes.device import device_string
from neuron_migrate.scan.fixes.flow import decided_here
from neuron_migrate.scan.fixes.registry import FIXERS
from neuron_migrate.scan.fixes.syntax import block_of, dotted, if_holding, parent_of, walk
from neuron_migrate.scan.matchers.device_strings import device_like_name
from neuron_migrate.scan.matchers.site import Site

__all__ = ["FixContext", "fixes_for", "neuron_branch", "remove_statement_edits", "removed_import"]


def fixes_for(rule: Rule, site: Site, span: Span, ctx: FixContext) -> tuple[Fix, ...]:
    if rule.fix.queries and _asked(site, rule.fix.queries):
        return ()
    if site.kind == "qualified_names" and any(tf.kind is FixKind.RENAME for tf in rule.fix.targets.values()) and (
            getattr(site.node, "ctx", None).__class__ in (ast.Store, ast.Del)
            or (site.qualified and ctx.replaced(site.qualified) and not _called(site))):
        # `torch.cuda.is_available = lambda: True` replaces CUDA's own function, and `saved =
        # torch.cuda.is_available` keeps it to put it back: no rename says that
        return ()
    out: list[Fix] = []
    for target, tf in rule.fix.targets.items():
        result = _compute(tf, site, span, ctx, target)
        if result is not None and site.kind == "qualified_names":
            result = table_value_fix(site, span, ctx, result)  # a CUDA table entry's own value stays
        if result is not None and result.edits:
            cls, title = rule.fix.fix_class, result.title
            if cls is FixClass.SAFE and rule.condition and _leaves_file(site, ctx):
                cls, title = FixClass.UNSAFE, f"{title} (unsafe: the value decides code outside this file)"
            option = _option_named_otherwise(site) if cls is FixClass.SAFE and site.kind == "device_strings" else None
            if option is not None:
                cls, title = FixClass.UNSAFE, f"{title} (unsafe: the option `{option}` is not named as a device)"
            compared = _comparison(site) if cls is FixClass.SAFE and site.kind == "device_strings" else None
            if cls is FixClass.SAFE and ctx.mentions_other_devices and _for_other_device(site, ctx):
                cls, title = FixClass.UNSAFE, f"{title} (unsafe: {_OTHER_DEVICE_NOTE})"
            elif compared is not None and _states(site.stmt) and not _in_test(site.stmt, ctx):
                cls, title = FixClass.UNSAFE, f"{title} (unsafe: it asserts a CUDA device, which the code after it may need)"
            elif compared is not None and not decided_here(site.stmt, compared) and ctx.flow.leaves_file(compared):
                cls, title = FixClass.UNSAFE, f"{title} (unsafe: the comparison's value decides code outside this file)"
            picked = _picked_value(site, ctx) if cls is FixClass.SAFE and rule.condition else None
            if cls is FixClass.SAFE and rule.condition and picked is None:
                picked = _missing_where_placed(site) or _sets_gpus(site)
            if picked is not None:
                cls, title = FixClass.UNSAFE, f"{title} (unsafe: {picked})"
            if cls is FixClass.SAFE and ctx.mocks_cuda:
                cls, title = FixClass.UNSAFE, f"{title} (unsafe: {_MOCKED_NOTE})"
            if cls is FixClass.SAFE and (result.unsafe or _through_rebound_name(site, ctx)):
                cls = FixClass.UNSAFE
            out.append(Fix(target, cls, title, result.edits,
                           tuple(dict.fromkeys(result.add_imports)), tuple(dict.fromkeys(result.remove_imports))))
    return tuple(out)


def _called(site: Site) -> bool:
    return _checked(site)[0] is not site.node


def _checked(site: Site) -> tuple[ast.AST, ast.AST | None]:
    """The value a condition rule's match gives (`torch.cuda.is_available()`, the call when it is
    called) and the node that holds it."""
    node: ast.AST = site.node
    parent = parent_of(site.stmt, node)
    if parent.__class__ is ast.Call and parent.func is node:  # type: ignore[union-attr]
        return parent, parent_of(site.stmt, parent)
    return node, parent


def neuron_branch(site: Site, ctx: FixContext) -> int | None:
    """The line where the function around the site looks for Neuron itself, if it does: it then
    has a branch for each device (sentence-transformers' `get_device_name`: CUDA first, then
    `if hasattr(torch, "neuron") and torch.neuron.is_available(): return "neuron"`), and renaming
    its CUDA branch takes CUDA away and puts an unguarded `torch.neuron` first. Only a test a
    rewrite never writes counts (`hasattr(torch, "neuron")`, `torch_neuronx`), so the tool's own
    edits never make a function look like one."""
    node = ctx.function_of(site.stmt)
    if node is None:
        return None
    key = id(node)
    if key not in ctx.neuron_tests:
        ctx.neuron_tests[key] = next((n.lineno for n in walk(node) if _tests_for_neuron(n)), None)  # type: ignore[attr-defined]
    return ctx.neuron_tests[key]


_NEURON_MODULES = frozenset({"torch_neuronx", "torch_neuron", "neuronx_distributed"})
_ACCELERATOR_TEST = re.compile(r"""\b(?:has|get)attr\(\s*torch\s*,\s*["']accelerator["']""")


def old_torch_branch(site: Site, ctx: FixContext) -> int | None:
    """The line of the `if hasattr(torch, "accelerator"):` whose other branch holds the site, if
    one does: that branch runs only on a torch without `torch.accelerator` (before 2.6), never on
    TorchNeuron's (langchain's fallback `accelerator_device_count = torch.cuda.device_count()`), and
    renamed it would raise where it runs (such a torch has no `torch.neuron`)."""
    if ctx.asks_for_accelerator is None:
        ctx.asks_for_accelerator = _ACCELERATOR_TEST.search(ctx.source) is not None
    if not ctx.asks_for_accelerator:
        return None
    node: ast.AST = site.node
    parent = parent_of(ctx.tree, node)
    while parent is not None:
        if parent.__class__ is ast.If or parent.__class__ is ast.IfExp:
            test = parent.test  # type: ignore[attr-defined]
            negated = test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not
            if _asks_for_accelerator(test.operand if negated else test):
                fallback = parent.body if negated else parent.orelse  # type: ignore[attr-defined]
                if node is fallback or (fallback.__class__ is list and any(node is s for s in fallback)):
                    return parent.lineno  # type: ignore[attr-defined]
        node, parent = parent, parent_of(ctx.tree, parent)
    return None


def _asks_for_accelerator(test: ast.AST) -> bool:
    """`hasattr(torch, "accelerator")`, `getattr(torch, "accelerator", None)`."""
    return _asks_for(test, "accelerator") and test.args[0].__class__ is ast.Name and test.args[0].id == "torch"  # type: ignore[attr-defined]


def _tests_for_neuron(node: ast.AST) -> bool:
    return _asks_for(node, "neuron") or (node.__class__ is ast.Name and node.id in _NEURON_MODULES)  # type: ignore[attr-defined]


def _asks_for(node: ast.AST, name: str) -> bool:
    """`hasattr(x, name)`, `getattr(x, name, ...)`."""
    if node.__class__ is not ast.Call:
        return False
    func, args = node.func, node.args  # type: ignore[attr-defined]
    return (func.__class__ is ast.Name and func.id in ("hasattr", "getattr") and len(args) >= 2
            and args[1].__class__ is ast.Constant and args[1].value == name)


def _asked(site: Site, queries: tuple[str, ...]) -> bool:
    """The match is an argument of a call to one of `queries` (`x.is_contiguous(memory_format=...)`)."""
    node = site.node
    parent = parent_of(site.stmt, node)
    if parent.__class__ is ast.keyword:
        parent = parent_of(site.stmt, parent)
    if parent.__class__ is not ast.Call or parent.func is node:  # type: ignore[union-attr]
        return False
    func = parent.func  # type: ignore[union-attr]
    leaf = func.attr if func.__class__ is ast.Attribute else func.id if func.__class__ is ast.Name else None
    return leaf in queries


def _through_rebound_name(site: Site, ctx: FixContext) -> bool:
    """The match goes through a name that is not only the import (`bindings`)."""
    if site.kind != "qualified_names":
        return False
    from neuron_migrate.scan.fixes.bindings import leftmost_name

    name = leftmost_name(site.node)
    return name is not None and ctx.rebound(name)


def _leaves_file(site: Site, ctx: FixContext) -> bool:
    """The condition's value reaches code this file does not show (`flow`)."""
    node = site.node
    if decided_here(site.stmt, node):
        return False  # the common case, decided without mapping the file
    parent = parent_of(ctx.tree, node)
    if parent.__class__ is ast.Call and parent.func is node:  # type: ignore[union-attr]
        node = parent  # the value is the call's: `torch.cuda.is_available()`
    return ctx.flow.leaves_file(node)


# A number of GPUs asked for (Ray's `num_gpus`, Lightning's `gpus`, `gpus_per_node`), not a count
# of the devices there are (`n_gpu`, which names the devices the program then uses).
_GPU_REQUEST = re.compile(r"(?:^|_)gpus(?:$|_per)", re.IGNORECASE)


def _option_named_otherwise(site: Site) -> str | None:
    """The option an argparse `default=`/`choices=` device string belongs to, when its name says
    nothing of a device: stanza's `--profile_sort` (`default='cuda'`) picks the profiler's sort
    key, which a rename would change (`'neuron'` sorts by CPU time)."""
    call = site.call
    if call is None or call.func.__class__ is not ast.Attribute or call.func.attr != "add_argument":  # type: ignore[attr-defined]
        return None
    dest = next((k.value.value for k in call.keywords if k.arg == "dest" and k.value.__class__ is ast.Constant), None)  # type: ignore[attr-defined]
    flags = [a.value for a in call.args if a.__class__ is ast.Constant and isinstance(a.value, str)]  # type: ignore[attr-defined]
    name = dest if isinstance(dest, str) else max(flags, key=lambda f: (f.startswith("--"), len(f)), default=None)
    if name is None or device_like_name(name.lstrip("-").replace("-", "_")):
        return None
    return name


def _for_other_device(site: Site, ctx: FixContext) -> bool:
    """Whether the site runs only for another vendor's device: in the branch a test for one opens
    (`if torch.version.hip:`, `if device_type == "npu":`, the `x if is_rocm else y` ternary's
    first value), or beside one in a chain (`torch.cuda.is_available() and torch.version.hip`,
    `not is_rocm or not torch.cuda.is_available()`). ROCm's devices are `cuda` too, and an NPU
    branch's `"cuda"` is a label of its own (ColossalAI counts NPU memory under it): renamed, they
    stop working there. The CUDA side of the same test (`else`, `and not is_rocm`) is an
    ordinary site."""
    node: ast.AST = site.node
    parent = parent_of(ctx.tree, node)
    while parent is not None and parent.__class__ not in _SCOPE_NODES:
        cls = parent.__class__
        if cls is ast.BoolOp:
            wanted = 1 if parent.op.__class__ is ast.And else -1  # type: ignore[attr-defined]
            if any(_other_device_test(v) == wanted for v in parent.values if v is not node):  # type: ignore[attr-defined]
                return True
        elif cls in (ast.If, ast.IfExp, ast.While) and node is not parent.test:  # type: ignore[attr-defined]
            sign = _other_device_test(parent.test)  # type: ignore[attr-defined]
            body = parent.body  # type: ignore[attr-defined]
            in_body = node is body or (body.__class__ is list and any(node is b for b in body))
            if sign and (sign > 0) == in_body:
                return True
        node, parent = parent, parent_of(ctx.tree, parent)
    return False


# sahi's test mocks `torch.cuda.is_available` and expects `select_device().type == "cuda"`: renamed,
# the expectation (or the check the mock stands in for) no longer meets the mock.
_MOCKED_NOTE = "the file mocks `torch.cuda`, whose stand-in answers stay CUDA's"
_OTHER_DEVICE_NOTE = "it runs only for another device, ROCm's or another vendor's, whose code names `cuda` for its own"
_SCOPE_NODES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module})
# Other vendors' devices and ROCm (HIP, AMD's Instinct MI200/MI300 parts), as words of a name
# (`torch.version.hip`, `is_rocm`, `is_npu_available()`, `torch.backends.mps`) or device types.
_OTHER_WORD = re.compile(r"(?:^|_)(?:hip|rocm|mi[23]\d\d|npu|xpu|mlu|hpu|musa|mps)(?:$|_)", re.IGNORECASE)
_OTHER_TYPES = frozenset({"hip", "rocm", "npu", "xpu", "mlu", "hpu", "musa", "mps"})
_CUDA_TYPES = frozenset({"cuda", "gpu", "nccl"})
_NEGATIVE = (ast.NotEq, ast.IsNot, ast.NotIn)


def _other_device_test(test: ast.AST) -> int:
    """1 for a test true only on another vendor's device (`torch.version.hip`, `is_rocm`,
    `is_MI300()`, `x == "npu"`, `torch.version.hip is not None`), -1 for its negation, else 0.
    A comparison that also names CUDA (`x in ("cuda", "npu")`) is none."""
    cls = test.__class__
    if cls is ast.UnaryOp and test.op.__class__ is ast.Not:  # type: ignore[attr-defined]
        return -_other_device_test(test.operand)  # type: ignore[attr-defined]
    if cls is ast.BoolOp:  # `x and is_rocm`: true only there; `not is_rocm or x`: false only there
        signs = [_other_device_test(v) for v in test.values]  # type: ignore[attr-defined]
        wanted = 1 if test.op.__class__ is ast.And else -1  # type: ignore[attr-defined]
        return wanted if wanted in signs else 0
    if cls is ast.Compare and len(test.ops) == 1:  # type: ignore[attr-defined]
        right = test.comparators[0]  # type: ignore[attr-defined]
        negative = test.ops[0].__class__ in _NEGATIVE  # type: ignore[attr-defined]
        values = [test.left, right, *(getattr(right, "elts", ()))]  # type: ignore[attr-defined]
        texts = {v.value.split(":")[0].lower() for v in values if v.__class__ is ast.Constant and isinstance(v.value, str)}  # type: ignore[attr-defined]
        if texts:
            if texts & _CUDA_TYPES or not texts & _OTHER_TYPES:
                return 0
            return -1 if negative else 1
        if any(v.__class__ is ast.Constant and v.value is None for v in values):  # type: ignore[attr-defined]
            negative = not negative  # `torch.version.hip is not None`: true on ROCm
        return (-1 if negative else 1) if any(_names_other(n) for n in walk(test)) else 0
    return 1 if any(_names_other(n) for n in walk(test)) else 0


def _names_other(n: ast.AST) -> bool:
    cls = n.__class__
    if cls is ast.Attribute:
        return _OTHER_WORD.search(n.attr) is not None  # type: ignore[attr-defined]
    if cls is ast.Name:
        return _OTHER_WORD.search(n.id) is not None  # type: ignore[attr-defined]
    return cls is ast.Constant and n.value in _OTHER_TYPES  # type: ignore[attr-defined]


def _states(stmt: ast.AST) -> bool:
    """An assert, or an `if` whose only statement raises (liger-kernel's `if x.device.type !=
    "cuda": raise ValueError("x must be a CUDA tensor")`): a requirement the code after it relies on."""
    if stmt.__class__ is ast.Assert:
        return True
    return stmt.__class__ is ast.If and len(stmt.body) == 1 and stmt.body[0].__class__ is ast.Raise and not stmt.orelse  # type: ignore[attr-defined]


def _in_test(stmt: ast.AST, ctx: FixContext) -> bool:
    """Whether the statement is in a test function (`test_*`), whose asserts check what the test
    did on the device it chose, not what the code after them needs."""
    node = ctx.function_of(stmt)
    return node is not None and node.name.startswith("test")


def _comparison(site: Site) -> ast.Compare | None:
    """The comparison the device string is compared in (`device.type == "cuda"`, `x.type in
    ("cpu", "cuda")`), if it is. Its fix is unsafe where the comparison's value, a condition,
    reaches code this file does not show: renamed, it turns true on Trainium there (TorchRL's
    `is_cuda = device.type == "cuda"` returned to pick CUDA graphs, kornia's `non_blocking=... and
    device.type == "cuda"`, LAVIS's `cuda_enabled` property), as a flipped
    `torch.cuda.is_available()` would; and where an `assert` states it (optimum-quanto's `assert
    data.device.type == "cuda"` before packing for a CUDA kernel): a precondition, not a choice
    (in a test function it checks what the test did, and moves with the test's device)."""
    parent = parent_of(site.stmt, site.literal) if site.literal is not None else None
    if parent.__class__ in (ast.Tuple, ast.List, ast.Set):
        held, parent = parent, parent_of(site.stmt, parent)  # type: ignore[arg-type]
        if parent.__class__ is not ast.Compare or held not in parent.comparators:  # type: ignore[union-attr]
            return None
    return parent if parent.__class__ is ast.Compare else None  # type: ignore[return-value]


def _picked_value(site: Site, ctx: FixContext) -> str | None:
    """Why a check that picks between two values may not move, or None. The branch it picks when
    true is taken on Trainium once it is flipped to Neuron:
    - MONAI's `map_location = None if torch.cuda.is_available() else torch.device("cpu")`: `None`
      makes `torch.load` put each tensor where it was saved, CUDA for a GPU checkpoint;
    - TorchRL's `{"num_gpus": 0.2 if torch.cuda.is_available() else None}`: a GPU request (a key,
      keyword or name such as `num_gpus`), which a Trainium host never meets;
    - a TorchServe handler's `torch.device(loc + ":" + str(properties.get("gpu_id"))) if
      torch.cuda.is_available() else ...`: the server assigns no GPU there, `"neuron:None"`."""
    node, parent = _checked(site)
    negated = parent.__class__ is ast.UnaryOp and parent.op.__class__ is ast.Not  # type: ignore[union-attr]
    if negated:
        node, parent = parent, parent_of(site.stmt, parent)  # type: ignore[arg-type, assignment]
    if parent.__class__ is ast.If and parent.test is node:  # type: ignore[union-attr]
        chosen, skipped = (parent.orelse, parent.body) if negated else (parent.body, parent.orelse)  # type: ignore[union-attr]
        return _loads_where_saved(chosen) or _flagged_load(chosen, skipped, ctx.function_of(parent))  # type: ignore[arg-type]
    if parent.__class__ is not ast.IfExp or parent.test is not node:  # type: ignore[union-attr]
        return None
    taken = parent.orelse if negated else parent.body  # type: ignore[union-attr]
    if _given_device(taken, site.stmt, parent):  # type: ignore[arg-type]
        return ("on Trainium it now takes the device it is given (from data or the command line), which a "
                "CUDA host chose: it used to fall back to the CPU")
    if any(_assigned_gpu(n) for n in walk(taken)):
        return ("on Trainium it now takes the branch that reads `gpu_id`, the GPU a model server assigned, "
                "which a Trainium host does not assign (None)")
    if taken.__class__ is not ast.Constant:
        return None
    name = _holder_name(site.stmt, parent)  # type: ignore[arg-type]
    if taken.value is None and "map_location" in name:  # type: ignore[attr-defined]
        return f"on Trainium it now picks `map_location=None`, {_WHERE_SAVED}"
    if taken.value and _GPU_REQUEST.search(name.rpartition(".")[2]):  # type: ignore[attr-defined]
        return f"on Trainium it now asks for GPUs (`{name}`), which a Trainium host does not have"
    return None


# Loaders of a checkpoint that put each tensor where it was saved unless given `map_location`.
_LOADERS = frozenset({"torch.load", "load_state_dict_from_url", "load_url"})
_WHERE_SAVED = "which loads each tensor to the device it was saved from, CUDA for a GPU checkpoint"


def _loads_where_saved(branch: list[ast.stmt]) -> str | None:
    """torchmultimodal's `if not torch.cuda.is_available(): torch.load(p, map_location="cpu") else:
    torch.load(p)`: the branch an `if` takes once the check is Neuron's loads a checkpoint with no
    `map_location` (or sets `map_location = None`)."""
    for n in (n for top in branch for n in walk(top)):
        if n.__class__ is ast.Call:
            name = dotted(n.func)  # type: ignore[attr-defined]
            if name is not None and (name in _LOADERS or name.rpartition(".")[2] in _LOADERS) and not any(
                    k.arg in ("map_location", None) for k in n.keywords) and len(n.args) < 2:  # type: ignore[attr-defined]
                return f"on Trainium it now calls `{name}` with no `map_location`, {_WHERE_SAVED}"
        elif n.__class__ is ast.Assign and n.value.__class__ is ast.Constant and n.value.value is None and any(  # type: ignore[attr-defined]
                "map_location" in (dotted(t) or "") for t in n.targets):  # type: ignore[attr-defined]
            return f"on Trainium it now picks `map_location=None`, {_WHERE_SAVED}"
    return None


def _flagged_load(taken: list[ast.stmt], skipped: list[ast.stmt], function: ast.AST | None) -> str | None:
    """terratorch's `if not torch.cuda.is_available(): self.CPU_ONLY = True else: ... False`, then
    `if self.CPU_ONLY: torch.load(p, map_location="cpu") else: torch.load(p)` in the function: the
    flags the branch taken on Trainium sets (and the opposite of those only the skipped branch
    sets), followed to the loads they choose."""
    if function is None:
        return None
    flags = {**{k: not v for k, v in _bool_flags(skipped).items()}, **_bool_flags(taken)}
    if not flags:
        return None
    for n in walk(function):
        if n.__class__ is ast.If:
            test, flip = n.test, False  # type: ignore[attr-defined]
            if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:  # type: ignore[attr-defined]
                test, flip = test.operand, True  # type: ignore[attr-defined]
            value = flags.get(dotted(test))
            if value is not None:
                found = _loads_where_saved(n.body if value != flip else n.orelse)  # type: ignore[attr-defined]
                if found is not None:
                    return found
    return None


def _bool_flags(branch: list[ast.stmt]) -> dict[str, bool]:
    """The names and attribute chains a branch sets to True or False."""
    flags = {dotted(t): s.value.value for s in branch if s.__class__ is ast.Assign  # type: ignore[attr-defined]
             and s.value.__class__ is ast.Constant and isinstance(s.value.value, bool) for t in s.targets}  # type: ignore[attr-defined]
    return {k: v for k, v in flags.items() if k is not None}


def _missing_where_placed(site: Site) -> str | None:
    """Why `not torch.cuda.is_available() and x.device.type != "cpu"` may not move, or None: with
    a test of where a value is, it asks whether that value's device, CUDA for what a GPU run saved,
    is missing here (chemprop rebuilds a checkpoint's metric then). Renamed, it asks about Neuron,
    which is there on Trainium, and the CUDA-placed value is no longer rebuilt."""
    _, parent = _checked(site)
    if parent.__class__ is not ast.UnaryOp or parent.op.__class__ is not ast.Not:  # type: ignore[attr-defined]
        return None
    chain = parent_of(site.stmt, parent)
    if chain.__class__ is not ast.BoolOp or chain.op.__class__ is not ast.And:  # type: ignore[attr-defined]
        return None
    for operand in chain.values:  # type: ignore[attr-defined]
        placed = next((n for n in walk(operand) if _placement(n)), None) if operand is not parent else None
        if placed is not None:
            return (f"with `{ast.unparse(placed)}` it asks whether the device that value is on, CUDA for what "
                    "a GPU run saved, is missing here; Neuron is there on Trainium")
    return None


# A setting that names the GPUs a program uses, or counts them (`opt.gpu_ids`, `args.n_gpu`).
_GPU_SETTING = re.compile(r"(?:^|_)(?:gpu_ids|device_ids|gpus|n_?gpus?|num_gpus)$", re.IGNORECASE)


def _sets_gpus(site: Site) -> str | None:
    """Why a check whose `if` sets the GPUs a program uses may not move, or None: controlnet-aux's
    `if not torch.cuda.is_available(): opt.gpu_ids = []` readies options that another module turns
    into CUDA devices (`init_net` asserts CUDA for a non-empty list); renamed, a Trainium host keeps
    the GPU ids."""
    node, parent = _checked(site)
    while parent.__class__ in (ast.UnaryOp, ast.BoolOp, ast.Compare):
        node, parent = parent, parent_of(site.stmt, parent)
    if parent.__class__ is not ast.If or parent.test is not node:  # type: ignore[union-attr]
        return None
    for stmt in (*parent.body, *parent.orelse):  # type: ignore[union-attr]
        for target in getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]:
            name = dotted(target) if target is not None else None
            if name is not None and _GPU_SETTING.search(name.rpartition(".")[2]):
                return f"it decides `{name}`, the GPUs the program uses, which a Trainium host does not have"
    return None


def _placement(node: ast.AST) -> bool:
    """Where a value is: `x.device` (not `torch.device`), `x.is_cuda`."""
    if node.__class__ is not ast.Attribute or node.attr not in ("device", "is_cuda"):  # type: ignore[attr-defined]
        return False
    owner = node.value  # type: ignore[attr-defined]
    return not (owner.__class__ is ast.Name and owner.id == "torch")


# The GPU a model server hands a worker (TorchServe's `properties.get("gpu_id")`).
_ASSIGNED_GPU = frozenset({"gpu_id"})


def _assigned_gpu(node: ast.AST) -> bool:
    cls = node.__class__
    return ((cls is ast.Constant and node.value in _ASSIGNED_GPU)  # type: ignore[attr-defined]
            or (cls is ast.Attribute and node.attr in _ASSIGNED_GPU))  # type: ignore[attr-defined]


def _given_device(taken: ast.AST, stmt: ast.AST, choice: ast.AST) -> bool:
    """Ax's `torch.device(json["device"]) if torch.cuda.is_available() else torch.device("cpu")`,
    `device = args.device if torch.cuda.is_available() else "cpu"`: the device the check picks is
    no CUDA literal this fix renames but a value given from elsewhere (`"cuda"` in a saved
    experiment, a default)."""
    if taken.__class__ is ast.Call and dotted(taken.func) in ("torch.device", "device"):  # type: ignore[attr-defined]
        args = taken.args  # type: ignore[attr-defined]
        return bool(args) and args[0].__class__ not in (ast.Constant, ast.JoinedStr, ast.BinOp)
    return taken.__class__ in (ast.Name, ast.Attribute, ast.Subscript) and any(
        device_like_name(part) for part in _holder_name(stmt, choice).replace(".", " ").split())


def _holder_name(stmt: ast.AST, value: ast.AST) -> str:
    """The keyword, dict key or assigned name that `value` is given as ("" when none)."""
    holder = parent_of(stmt, value)
    if holder.__class__ is ast.keyword:
        return holder.arg or ""  # type: ignore[union-attr]
    if holder.__class__ is ast.Dict:
        for key, v in zip(holder.keys, holder.values, strict=True):  # type: ignore[union-attr]
            if v is value and key.__class__ is ast.Constant and isinstance(key.value, str):  # type: ignore[union-attr]
                return key.value  # type: ignore[union-attr, no-any-return]
        return ""
    if holder is stmt and holder.__class__ in (ast.Assign, ast.AnnAssign):
        targets = getattr(holder, "targets", None) or [holder.target]  # type: ignore[attr-defined]
        return " ".join(dotted(t) or "" for t in targets).strip()
    return ""


def _compute(tf: TargetFix, site: Site, span: Span, ctx: FixContext, target: Target) -> FixResult | None:
    kind = tf.kind
    if kind is FixKind.RENAME:
        return _rename(tf.value, site, span, ctx)
    if site.kind == "device_strings" and kind in (FixKind.DEVICE_STRING, FixKind.FIXER):
        from neuron_migrate.scan.fixes.data import entry_fix, is_data

        if is_data(site):  # a listed device type or a table key is data: add, never rename
            return entry_fix(site, ctx)
    if kind is FixKind.DEVICE_STRING:
        return device_string(site, ctx, tf.value)
    if kind is FixKind.REPLACE:
        return FixResult(f"Replace with `{tf.value}`", (Edit(span, tf.value),))
    if kind is FixKind.REMOVE_ARGUMENT:
        if site.call is None or site.arg is None:
            return None
        edit = remove_argument_edit(site.call, site.arg, ctx)
        return FixResult("Remove the argument", (edit,))
    if kind is FixKind.REMOVE_STATEMENT:
        edits = remove_statement_edits(site, ctx, target)
        return FixResult("Remove the statement", edits) if edits is not None else None
    if kind is FixKind.FIXER:
        return FIXERS[tf.value](site, span, ctx, target)
    assert_never(kind)


def removed_import(site: Site) -> tuple[str, ...]:
    """The import the matched expression went through, when a fix may leave it unused
    (`from torch.cuda import amp` -> "torch.cuda.amp"; never a plain `import torch [as th]`)."""
    return (site.root_spec,) if "." in site.root_spec else ()


def _rename(value: str, site: Site, span: Span, ctx: FixContext) -> FixResult | None:
    leaf = (site.qualified or site.symbol).rsplit(".", 1)[-1]
    new = value.replace("{name}", leaf)
    if site.kind == "qualified_names":
        text, add = ctx.spelled(new, site.node)
        top = new.partition(".")[0]
        if add and not ctx.imported_at_top(top):
            # sktime's `empty_cache = _safe_import("torch.cuda.empty_cache")`, a method's `from
            # torch.cuda import empty_cache`: torch is optional there, and the fix's import is not
            return FixResult(f"Use `{new}` (unsafe: it adds `import {top}` at the top of a module that imports it only "
                             "where it is used)", (Edit(span, text),), add, removed_import(site), unsafe=True)
        return FixResult(f"Use `{new}`", (Edit(span, text),), add, removed_import(site))
    if site.kind in ("methods", "attributes"):
        node = site.call.func if site.call is not None else site.node  # type: ignore[attr-defined]
        name_span = ctx.lines.span_at(_attr_pos(node))
        return FixResult(f"Use `.{new}`", (Edit(name_span, new),))
    if site.kind == "env_vars":
        if site.literal is not None:
            edit = ctx.token_edit(site.literal, site.token, new)
            return FixResult(f"Use `{new}`", (edit,)) if edit is not None else None
        return FixResult(f"Use `{new}`", (Edit(span, new),))
    if site.kind == "arguments" and site.arg.__class__ is ast.keyword:
        kw = site.arg
        s = ctx.span(kw)  # type: ignore[arg-type]
        return FixResult(f"Use `{new}=`", (Edit(Span(s.line, s.col, s.line, s.col + len(kw.arg)), new),))  # type: ignore[union-attr,arg-type]
    return None


def _attr_pos(node: ast.Attribute) -> tuple[int, int, int, int]:
    end_line = node.end_lineno or node.lineno
    end = node.end_col_offset or 0
    return (end_line, end - len(node.attr.encode("utf-8")), end_line, end)


def remove_argument_edit(call: ast.Call, arg: ast.AST, ctx: FixContext) -> Edit:
    """Delete one argument with the comma that separates it from its neighbour."""
    args: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    ordered = sorted(args, key=lambda a: (a.lineno, a.col_offset))
    i = next(i for i, a in enumerate(ordered) if a is arg)
    own = ctx.span(arg)
    if i + 1 < len(ordered):
        nxt = ctx.span(ordered[i + 1])
        return Edit(Span(own.line, own.col, nxt.line, nxt.col), "")
    if i > 0:
        prev = ctx.span(ordered[i - 1])
        return Edit(Span(prev.end_line, prev.end_col, own.end_line, own.end_col), "")
    return Edit(own, "")


def remove_statement_edits(site: Site, ctx: FixContext, target: Target) -> tuple[Edit, ...] | None:
    """The edits removing the statement that sets or calls what matched; none where it is only
    read (espnet's `add_argument("--cudnn_enabled", default=torch.backends.cudnn.enabled)`: the
    option would go with it, and the configurations that set it would no longer load)."""
    stmt = site.stmt
    if not isinstance(stmt, ast.stmt) or not _sets_or_calls(stmt, site.node):
        return None
    return _remove_edits(stmt, ctx, target)


def _sets_or_calls(stmt: ast.stmt, node: ast.AST) -> bool:
    if stmt.__class__ in (ast.Assign, ast.AugAssign, ast.AnnAssign):
        targets = stmt.targets if stmt.__class__ is ast.Assign else [stmt.target]  # type: ignore[attr-defined]
        return any(n is node for t in targets for n in ast.walk(t))
    if stmt.__class__ is ast.Expr:
        value = stmt.value  # type: ignore[attr-defined]
        return value is node or (value.__class__ is ast.Call and value.func is node)
    return stmt.__class__ not in (ast.If, ast.While, ast.Return, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)


def _emptied_guard(ctx: FixContext, block: list[ast.stmt]) -> ast.If | None:
    """The `if <guard>:` (no else) whose whole body is `block`, when its test only asks questions
    (names, comparisons, torch calls): removing it with its body leaves no `if ...: pass`."""
    node = if_holding(ctx.tree, block)
    if node is None or node.body is not block or node.orelse or not _questions_only(node.test, ctx):
        return None
    return node


def _questions_only(test: ast.AST, ctx: FixContext) -> bool:
    from neuron_migrate.scan.fixes.bindings import leftmost_name

    for node in ast.walk(test):
        if node.__class__ is ast.Call:
            name = leftmost_name(node.func)  # type: ignore[attr-defined]
            root = ctx.aliases.root(name) if name else None
            if root is None or not (root == "torch" or root.startswith("torch.")):
                return False
        elif node.__class__ in (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Lambda):
            return False
    return True


_NEEDS_NO_PARENS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Compare, ast.Constant)


def _inverted_guard(ctx: FixContext, block: list[ast.stmt]) -> tuple[Edit, ...] | None:
    """`if <test>:` whose whole body `block` goes, with an `else:` block: `if not <test>:` followed
    by the else block, instead of `if <test>: pass` (`if not <test>:` loses its `not`). Only for
    the plain layout: the header, the body, `else:` and the else block each on their own lines.
    An `elif` chain after the body is nested under `if not <test>:` (`_nested_chain`)."""
    node = if_holding(ctx.tree, block)
    if node is None or node.body is not block or not node.orelse:
        return None
    test, orelse = node.test, node.orelse  # type: ignore[attr-defined]
    header = ctx.lines.line(node.lineno)
    keyword = "elif" if header.startswith("elif", node.col_offset) else "if"
    other = orelse[0]
    if block[0].lineno <= (test.end_lineno or test.lineno) or not header.startswith(keyword, node.col_offset):
        return None
    if other.__class__ is ast.If and ctx.lines.line(other.lineno).startswith("elif", other.col_offset):
        chain = _nested_chain(ctx, node, other)  # type: ignore[arg-type]
        if chain is None:
            return None
        drop: tuple[Edit, ...] = (Edit(Span(block[0].lineno, 0, other.lineno, 0), ""), *chain)  # the body
    else:
        between = [ctx.lines.line(n).strip() for n in range(block[-1].end_lineno + 1, other.lineno)]  # type: ignore[operator]
        elses = [t for t in between if t and not t.startswith("#")]
        if len(elses) != 1 or elses[0].split("#")[0].replace(" ", "") != "else:":
            return None
        drop = (Edit(Span(block[0].lineno, 0, other.lineno, 0), ""),)  # the body and the `else:` line
    t = ctx.span(test)
    start = Span(node.lineno, ctx.span(node).col, t.line, t.col)  # the keyword up to the test
    if test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:  # type: ignore[attr-defined]
        operand = ctx.span(test.operand)  # type: ignore[attr-defined]
        return (Edit(Span(start.line, start.col, operand.line, operand.col), f"{keyword} "), *drop)
    if test.__class__ in _NEEDS_NO_PARENS:
        return (Edit(start, f"{keyword} not "), *drop)
    close = Edit(Span(t.end_line, t.end_col, t.end_line, t.end_col), ")")
    return (Edit(start, f"{keyword} not ("), close, *drop)


def _nested_chain(ctx: FixContext, node: ast.If, chained: ast.If) -> tuple[Edit, ...] | None:
    """`if a: <gone> / elif b: X / else: Y` -> `if not a: / if b: X / else: Y` nested one level:
    the chain's lines are indented by the body's indentation step and its `elif` becomes `if`.
    None where indenting would change the program: a string spanning lines would gain the
    indentation in its text."""
    body = node.body[0]
    outer = ctx.lines.line(node.lineno)[: node.col_offset]
    inner = ctx.lines.line(body.lineno)[: body.col_offset]
    step = inner[len(outer):]
    if not inner.startswith(outer) or not step or step.strip():
        return None
    first, last = chained.lineno, node.end_lineno or node.lineno
    if any(n.__class__ in (ast.Constant, ast.JoinedStr) and (n.end_lineno or n.lineno) > n.lineno >= first  # type: ignore[attr-defined]
           for n in ast.walk(chained)):
        return None
    edits = [Edit(Span(first, 0, first, chained.col_offset + len("elif")), f"{step}{outer}if")]
    # blank lines stay as they are; inside brackets more indentation changes nothing
    edits += [Edit(Span(n, 0, n, 0), step) for n in range(first + 1, last + 1) if ctx.lines.line(n).strip()]
    return tuple(edits)


def _remove_edits(stmt: ast.stmt, ctx: FixContext, target: Target) -> tuple[Edit, ...] | None:
    block = block_of(ctx.tree, stmt)
    if block is None:
        return None
    removed = ctx.removed.get(target.value, set())
    if all(id(s) in removed for s in block):
        guard = _emptied_guard(ctx, block)
        if guard is not None:  # every statement of the guarded block goes: the guard goes too
            removed.add(id(guard))
            return _remove_edits(guard, ctx, target)
        inverted = _inverted_guard(ctx, block)
        if inverted is not None:  # every statement of it shares these edits: they apply once
            return inverted
    edit = _remove_edit(stmt, block, ctx, removed)
    return (edit,) if edit is not None else None


def _remove_edit(stmt: ast.stmt, block: list[ast.stmt], ctx: FixContext, removed: set[int]) -> Edit | None:
    own = ctx.span(stmt)
    if all(id(s) in removed for s in block) and block[0] is stmt or len(block) == 1:
        return Edit(own, "pass")  # the block must keep a statement
    i = next(i for i, s in enumerate(block) if s is stmt)
    prev = block[i - 1] if i > 0 else None
    nxt = block[i + 1] if i + 1 < len(block) else None
    if nxt is not None and nxt.lineno == stmt.end_lineno:  # `a; b` on one line
        n = ctx.span(nxt)
        return Edit(Span(own.line, own.col, n.line, n.col), "")
    if prev is not None and prev.end_lineno == stmt.lineno:
        p = ctx.span(prev)
        return Edit(Span(p.end_line, p.end_col, own.end_line, own.end_col), "")
    before = ctx.lines.line(own.line)[: own.col]
    if before.strip():  # something else starts the line (`if x: stmt`)
        return Edit(own, "pass")
    if own.end_line < len(ctx.lines.lines):
        return Edit(Span(own.line, 0, own.end_line + 1, 0), "")
    return Edit(Span(own.line, 0, own.end_line, len(ctx.lines.line(own.end_line))), "")
