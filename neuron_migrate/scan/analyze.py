"""Source text in, raw findings out: one stdlib `ast` parse (of the parts of the file that can
hold a finding, `scan.regions`) and one walk per file.

The pack is compiled once per process into lookup tables (`CompiledPack`, cached by pack
digest). The walk is one loop over an explicit stack with one dispatch table by node type
(ruff's `analyze/` shape); statements push their blocks beneath their own expressions, so every
expression is visited while its enclosing statement is current (for `statement_line` and
statement-level fixes). Fixes are computed only for the sites that matched, after the walk, when
the file's imports are all known.

Never imports torch or libcst.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from functools import partial

from neuron_migrate.findings import Finding, Fix, FixClass, Span, Target
from neuron_migrate.ruleset.model import ArgumentPattern, FixKind, Rule, RulePack
from neuron_migrate.scan import parse as parse_m
from neuron_migrate.scan.aliases import AliasTable
from neuron_migrate.scan.fixes.syntax import LEAVES, dotted, has_parameters, walk
from neuron_migrate.scan.matchers import arguments as args_m
from neuron_migrate.scan.matchers import device_strings as dev_m
from neuron_migrate.scan.matchers import env_vars as env_m
from neuron_migrate.scan.matchers.arguments import ArgumentTable, NamedValueTable
from neuron_migrate.scan.matchers.device_strings import DeviceStringTable
from neuron_migrate.scan.matchers.env_vars import EnvVarTable
from neuron_migrate.scan.matchers.extensions import build_script
from neuron_migrate.scan.matchers.files import FileTable
from neuron_migrate.scan.matchers.globs import is_glob, literal_prefix
from neuron_migrate.scan.matchers.imports import ImportTable
from neuron_migrate.scan.matchers.names import name_table
from neuron_migrate.scan.matchers.qualified_names import QualifiedNameTable
from neuron_migrate.scan.matchers.requirements import SETUP_DEPENDENCIES, matching, requirement_keys
from neuron_migrate.scan.matchers.site import LineIndex, Site
from neuron_migrate.scan.matchers.tokens import TokenTable, first_words, is_prose
from neuron_migrate.scan.prefilter import pattern_requirements, pattern_values
from neuron_migrate.scan.regions import RegionGate

__all__ = ["CompiledPack", "analyze_file_path", "analyze_source", "compile_pack"]

# Module roots that resolve to themselves while unbound (a notebook cell whose imports live in
# another cell, a snippet): the roots the rules name, plus `os` for environment access.
_ALWAYS_IMPLICIT = frozenset({"torch", "os"})


@dataclass(frozen=True, slots=True)
class CompiledPack:
    pack: RulePack
    qualified: QualifiedNameTable
    devices: DeviceStringTable
    methods: dict[str, tuple[Rule, ...]]
    attributes: dict[str, tuple[Rule, ...]]
    arguments: ArgumentTable
    named: NamedValueTable  # `match.arguments[].named`: names that carry an argument's value
    imports: ImportTable
    env: EnvVarTable
    files: FileTable
    tokens: TokenTable
    default_devices: dict[str, tuple[Rule, ...]]  # device type -> rules (`match.default_devices`)
    implicit_roots: frozenset[str]
    device_words: tuple[str, ...]  # a file without any of these has no device-string match
    env_words: tuple[str, ...]  # ... without any of these (lower case, in the lowered text), no env-var match
    token_words: tuple[str, ...]  # ... likewise, no `tokens` match
    regions: RegionGate  # which functions of a large file need parsing
    fix_roots: frozenset[str]  # top-level modules a fix may write (and have to import)
    # The top-level modules of the rules whose names only tested or written as types are no use
    # (`match.checks`): a file that imports none of them has no such name to mark.
    unchecked: frozenset[str]
    requirements: tuple[Rule, ...]  # `match.requirements`: also the dependencies a `setup()` call lists


_COMPILED: dict[object, CompiledPack] = {}


def compile_pack(pack: RulePack) -> CompiledPack:
    """The pack's lookup tables, built once per pack (by digest; by identity for unsaved packs)."""
    key: object = pack.digest or id(pack)
    hit = _COMPILED.get(key)
    if hit is not None and (pack.digest or hit.pack is pack):
        return hit
    rules = list(pack.rules.values())
    qualified = QualifiedNameTable(rules)
    devices = DeviceStringTable(rules)
    env = EnvVarTable(rules)
    imports = ImportTable(rules)
    roots = set(qualified.roots) | {p.split(".")[0] for p, _, _ in imports.patterns}
    roots |= {c.split(".")[0] for r in rules for a in r.match.arguments for c in a.call if c[0] not in ".*!"}
    # The modules a fix may write (and so import, or spell through the file's binding of them).
    fix_roots = frozenset({"torch"} | {tf.value.partition(".")[0] for r in rules for tf in r.fix.targets.values()
                                       if tf.kind is FixKind.RENAME})
    compiled = CompiledPack(
        pack=pack,
        qualified=qualified,
        devices=devices,
        methods=name_table(rules, "methods"),
        attributes=name_table(rules, "attributes"),
        arguments=ArgumentTable(rules),
        named=NamedValueTable(rules),
        imports=imports,
        env=env,
        files=FileTable(rules),
        tokens=TokenTable(rules),
        default_devices=_by_value(rules, "default_devices"),
        implicit_roots=frozenset(r for r in roots if r.isidentifier()) | _ALWAYS_IMPLICIT,
        device_words=_cover(_words([t for t, _, _ in devices.types])),
        env_words=_cover([w.lower() for w in _words([literal_prefix(p) for p, _, _ in env.patterns])]),
        token_words=_cover([w.lower() for w in first_words(rules)]),
        regions=RegionGate(pattern_requirements(pack, in_code=True), pattern_values(pack, in_code=True),
                           {name.rpartition(".")[0] for name in qualified.exact}, fix_roots),
        fix_roots=fix_roots,
        unchecked=frozenset(p.lstrip("!").partition(".")[0] for r in rules if not r.match.checks
                            for p in r.match.qualified_names),
        requirements=tuple(r for r in rules if r.match.requirements),
    )
    if len(_COMPILED) >= 8:
        _COMPILED.pop(next(iter(_COMPILED)))
    _COMPILED[key] = compiled
    return compiled


def _by_value(rules: list[Rule], field: str) -> dict[str, tuple[Rule, ...]]:
    table: dict[str, list[Rule]] = {}
    for rule in rules:
        for value in getattr(rule.match, field):
            table.setdefault(value, []).append(rule)
    return {k: tuple(v) for k, v in table.items()}


def _words(words: list[str]) -> tuple[str, ...]:
    """Literal words for a substring test; a glob word means "always look" ("")."""
    return tuple(dict.fromkeys("" if is_glob(w) else w for w in words))


def _cover(words: Collection[str]) -> tuple[str, ...]:
    """The words of an any-of substring test less those that contain another (`cuda_` finds every
    text `cuda_visible_devices` does), shortest first: a test per distinct word, not per spelling
    (measured: half the time of the walker's word tests on torch)."""
    return tuple(sorted({w for w in words if not any(o != w and o in w for o in words)}, key=lambda w: (len(w), w)))


# --- the walk ---------------------------------------------------------------------------------

_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Other accelerators' modules (Intel XPU, Apple MPS, Ascend NPU, Habana HPU): code of theirs is no CUDA site.
_OTHER_BACKENDS = ("torch.xpu", "torch.mps", "torch.npu", "torch_npu", "intel_extension_for_pytorch", "habana_frameworks")
_PARTIALS = frozenset({"functools.partial", "funcy.partial", "toolz.partial"})  # bark imports funcy's
_TEXT_TESTS = frozenset({"startswith", "endswith"})  # `str(e).startswith("CUDA out of memory")`
_OWN = frozenset({"self", "cls"})  # a method's instance or class: a class-level name is read through it
# Keywords whose list names kinds of events, not devices: `ProfileKwargs(activities=["cpu", "cuda"])`
# records CUDA kernels, and Accelerate rejects a `"neuron"` entry. Its `"cuda"` is a CUDA word, no device.
_KINDS = frozenset({"activities"})
# Methods that change a dict's keys (`spreads` forgets the dict).
_DICT_CHANGES = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"})
_LITERALS = (ast.Constant, ast.UnaryOp, ast.Dict)  # what `arguments.static_value` may evaluate
# Class-field declarations whose default is the field's value (dataclasses, attrs, pydantic).
_FIELD_CALLS = frozenset({"field", "Field", "ib", "attrib"})


def _imported_by_call(value: ast.AST) -> str | None:
    """The module (or, through a `..._from` helper, the object) an import call returns:
    `importlib.import_module("cupy")`, `optional_import("tensorrt")`, `safe_import_from("m", "X")`,
    physicsnemo's `OptionalImport("nvidia.dali")` (`scan.matchers.import_calls` reports the call)."""
    if value.__class__ is not ast.Call or not value.args:  # type: ignore[attr-defined]
        return None
    func = value.func  # type: ignore[attr-defined]
    name = func.id if func.__class__ is ast.Name else func.attr if func.__class__ is ast.Attribute else ""
    first = value.args[0]  # type: ignore[attr-defined]
    if ("import" not in name.lower() or name == "importorskip" or first.__class__ is not ast.Constant
            or not isinstance(first.value, str)):
        return None
    module = first.value
    if not all(part.isidentifier() for part in module.split(".")):
        return None
    second = value.args[1] if len(value.args) > 1 else None  # type: ignore[attr-defined]
    if name.endswith("_from") and second.__class__ is ast.Constant and isinstance(second.value, str):  # type: ignore[union-attr]
        return f"{module}.{second.value}"  # type: ignore[union-attr]
    return module


def _field_default(value: ast.AST) -> ast.AST:
    """The default of `x: str = field(default="auto")` (also `Field("auto")`), or of an
    environment variable read with one (`os.environ.get("COMPILE_BACKEND", "inductor")`,
    `os.getenv(...)`), else `value`."""
    if value.__class__ is not ast.Call:
        return value
    func = value.func  # type: ignore[attr-defined]
    name = func.id if func.__class__ is ast.Name else func.attr if func.__class__ is ast.Attribute else None
    if len(value.args) == 2 and (name == "getenv" or (  # type: ignore[attr-defined]
            name == "get" and func.__class__ is ast.Attribute and func.value.__class__ is ast.Attribute
            and func.value.attr == "environ")):
        return value.args[1]  # type: ignore[attr-defined, no-any-return]
    if name not in _FIELD_CALLS:
        return value
    for kw in value.keywords:  # type: ignore[attr-defined]
        if kw.arg == "default":
            return kw.value  # type: ignore[no-any-return]
    if name == "Field" and value.args:  # type: ignore[attr-defined]
        return value.args[0]  # type: ignore[attr-defined, no-any-return]
    return value


_SCOPE_END = ast.Pass()  # pushed under a function's body: popping it closes the function's scope
# Calls whose arguments are messages for people (print, logging, warnings, exceptions), also a
# module's own private helper of the name (kornia's `_warn("get_cuda_device_if_available", ...)`).
_MESSAGE_CALLS = frozenset({"print", "exit", "debug", "info", "warning", "warn", "error", "exception",
                            "critical", "fatal", "log", "warning_once", "info_once", "warn_once", "echo", "secho",
                            # a test skipped or expected to fail, and why (`pytest.skip("CUDA not available")`)
                            "skip", "skipTest", "xfail"})
# ... and the rank-aware loggers of training code: `logger.info_rank0` (LLaMA-Factory),
# `print_rank_0` (Megatron), `log_dist` (DeepSpeed), `rank_zero_warn` (Lightning).
_MESSAGE_CALL_NAME = re.compile(r"(?:print|debug|info|warning|warn|error|critical|log)_(?:rank_?0|rank_?0_once|once|"
                                r"main|master|dist|all)|rank_zero_(?:info|warn|debug|print|deprecation|experimental)")
_MESSAGE_MODULES = ("logging.", "warnings.")
# Text a web UI shows (`st.sidebar.subheader("CUDA")`, `gr.Markdown(...)`), or a progress
# display's label (labml's `monit.section("Triton")`): a label, not a value.
_DISPLAY_MODULES = ("streamlit.", "gradio.", "labml.monit.")
_DISPLAY_CALLS = frozenset({"write", "markdown", "header", "subheader", "title", "caption", "text", "toast", "success",
                            "Markdown", "HTML", "section", "iterate", "enum"})
# Methods whose returned text describes an object to people (`f"Linear(device=cuda)"`): a message.
_DESCRIBERS = frozenset({"__repr__", "__str__", "extra_repr"})
_TYPE_TESTS = frozenset({"isinstance", "issubclass"})
# Calls inside a message that turn what they get into the text shown (`"{}".format(x)`, `str(d)`),
# look it up (`names.get(code, "Unknown CUDA error")`) or translate it (`_("CUDA not available")`).
_FORMATTERS = frozenset({"format", "format_map", "join", "str", "repr", "get", "_", "gettext", "ngettext"})
_EXCEPTION_SUFFIXES = ("Error", "Exception", "Warning")
_MESSAGE_KEYWORDS = frozenset({"help", "description", "epilog", "usage", "msg", "message", "desc", "reason",
                               "keywords", "classifiers"})  # pytest's skip reasons; setup()'s package metadata
# A test's expected error or warning: the text it must match is a message's (`pytest.raises(
# RuntimeError, match="requires CUDA")`, `self.assertRaisesRegex(RuntimeError, "needs CUDA")`).
_EXPECTED_FAILURES = frozenset({"raises", "warns"})
_REGEX_ASSERTS = frozenset({"assertRaisesRegex", "assertWarnsRegex", "assertRaisesRegexp"})
# A variable that holds text for people while it is put together (`err_msg += "export ..."`).
_MESSAGE_NAME = re.compile(r"(?:\w*_)?(?:msg|message|messages|hint)", re.IGNORECASE)


class _Walker:
    def __init__(self, cp: CompiledPack, tree: ast.Module, source: str, seed: Sequence[ast.stmt] = ()) -> None:
        self.cp = cp
        self.tree = tree
        # Matchers whose words the file does not contain cannot match: leave them out of the walk.
        self.devices_on = any(t in source for t in cp.device_words)
        self.source = source
        self._own_attributes: frozenset[str] | None = None
        self._own_methods: tuple[frozenset[str], frozenset[str]] | None = None
        # The attributes `getattr(module, "name")` asks for, by id (kept alive: ids stay theirs); no fix.
        self.by_name: dict[int, ast.AST] = {}
        # One lowered copy and a test per word, not one per case form of it (a superset: the
        # matchers decide).
        lowered = source.lower()
        self.env_on = any(t in lowered for t in cp.env_words)
        self.tokens = cp.tokens if any(t in lowered for t in cp.token_words) else None
        self.silent: set[int] = set()  # ids of string literals that are messages, not code
        self.shims: set[int] = set()  # ids of `torch.cuda` attributes assigned another back end's
        self.listed_kinds: set[int] = set()  # ids of entries of a list of kinds that are not devices (`_KINDS`)
        # ids of the names only tested or written as types, not used: `isinstance(m, DeformConv2d)`,
        # `if nms is None:`, `x: SparseConvTensor`
        self.checked: set[int] = set()
        self.aliases = AliasTable(cp.implicit_roots, partial(_cuda_name, cp))
        self.sites: list[tuple[Rule, Site]] = []
        self.stmt: ast.AST = tree
        self.stmt_line = 1
        # Enclosing functions' locals: the literals each may hold (None: unknown).
        self.scopes: list[dict[str, tuple[ast.AST, ...] | None]] = []
        # Per enclosing function, the names it binds itself (parameters, assignments, loop and
        # `with` targets): there they are not the module's imports of the same name.
        self.locals: list[set[str]] = []
        self.func_names: list[str] = []
        self.body_cols: list[int] = []  # per function scope: its body's indentation
        self.consts: dict[str, tuple[ast.AST, ...] | None] = {}  # module-level names: the literals assigned
        self.argparse: dict[str, list[ast.AST]] = {}  # option dest -> its literal default and const
        # Attribute name -> literal: class-level fields (a config dataclass) and `self.x = ...`.
        self.fields: dict[str, tuple[ast.AST, ...] | None] = {}
        # Module-level names assigned a CUDA reference (`amp_ctx = torch.cuda.amp.autocast`).
        self.assigned: dict[str, str] = {}
        # Class-level names and `self` attributes assigned one (`autocast_ctx =
        # torch.cuda.amp.autocast` in a class body, `self.tt = torch.cuda` in a method), each
        # later use as `self.autocast_ctx` / `cls.autocast_ctx` a finding.
        self.members: dict[str, str] = {}
        self.callee: ast.AST | None = None  # the callee chain of the call being matched
        # Per enclosing function, the same for its own names (`_amp = amp`, apex's), from the
        # assignment on (a later assignment of anything else ends it).
        self.local_assigned: list[dict[str, str]] = []
        # Per scope (the module's, then each enclosing function's), the names assigned a dict whose
        # keys are all written out (`kw = dict(a=1)`, `kw = {"a": 1}`, then `kw["b"] = 2`): its
        # entries as keywords, for a call's `**kw`; None once it may hold other keys.
        self.spreads: list[dict[str, list[ast.keyword] | None]] = [{}]
        self.aliased: set[str] = set()  # every name either holds: most names are none (a fast test)
        # Module-level functions with a device-like parameter defaulting to a `default_devices`
        # type: name -> (parameter, its position or None, its default, rules).
        self.defaulted: dict[str, list[tuple[str, int | None, str, tuple[Rule, ...]]]] = {}
        # Module-level classes that subclass a callee an argument pattern names and keep its
        # `__init__` (StyleTTS2's `class MyDataParallel(torch.nn.DataParallel)`): name -> that callee.
        self.subclassed: dict[str, str] = {}
        # Module-level functions of no parameters that import a module and return it (a lazy
        # import: `def _te(): import transformer_engine.pytorch as te; return te`), by name.
        self.returned: dict[str, str] = {}
        # Arguments whose value is a variable, resolved once every module constant and argparse
        # default is known; each keeps the statement it stands in.
        self.pending: list[tuple[ast.Call, Rule, ArgumentPattern, ast.AST, ast.AST,
                                 tuple[dict[str, ast.AST | None], ...], str, ast.AST, int]] = []
        # Names assigned a value an argument pattern matches (`named`): (name, rule, where, the
        # literal, statement, its line); reported unless this file passes the literal to a matched
        # call or tests values against the name (`x in SUPPORTED_DEVICE_MAP`: a list of choices).
        self.named: list[tuple[str, Rule, ast.AST, ast.AST, ast.AST, int]] = []
        # Attributes whose value an argument was looked up in (`backend=self.mode`): every method
        # that assigns one decides it (`fields` are file-wide), skipped or not.
        self.field_reads: set[str] = set()
        # Calls of a function by name (`to_device(model, "cuda")`, `self.place(x, "cuda")`) with a
        # device string in a position: (callee, a method's, call, statement, its line), decided once
        # every function of the file is known (`local_defs`: name -> each def's positional parameters).
        self.local_calls: list[tuple[str, bool, ast.Call, ast.AST, int]] = []
        self.local_defs: dict[str, list[list[str]]] = {}
        # Per function scope (by id, with the scope kept alive): its names assigned a device string
        # built from a format (yolox's `loc = "cuda:{}".format(rank)` ... `map_location=loc`).
        self.formatted: dict[int, tuple[dict[str, tuple[ast.AST, ...] | None], dict[str, list[ast.AST]]]] = {}
        self.stack: list[ast.AST] = []
        self.fallbacks: set[int] = set()  # ids of module-level imports that are fallbacks (`_prepass`)
        self.conditional: dict[int, tuple[int, int]] = {}  # ids of module-level imports in an if/try body -> its lines
        # The nodes of literals assigned before this source: they stand elsewhere (another cell),
        # so a finding shows no text of theirs and no fix edits them.
        self.seeded: set[int] = set()
        for stmt in seed:  # imports and literals run before this source (a notebook's earlier cells)
            if stmt.__class__ is ast.Import or stmt.__class__ is ast.ImportFrom:
                self.aliases.add(stmt)  # type: ignore[arg-type]
            elif stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Name:  # type: ignore[attr-defined]
                self._remember(self.consts, stmt.targets[0].id, stmt.value)  # type: ignore[attr-defined]
                self.seeded.update(map(id, ast.walk(stmt.value)))  # type: ignore[attr-defined]
        self._prepass(tree.body)
        self.aliases.module = dict(self.aliases.names)
        # Whether a module-level import binds a name under one of `cp.unchecked`'s modules.
        self.unchecked = bool(cp.unchecked) and any(q.partition(".")[0] in cp.unchecked for q in self.aliases.names.values())

    # -- statements --

    def _subclass(self, node: ast.ClassDef) -> None:
        """Record a class whose calls are calls of its base's constructor, arguments and all: one
        that subclasses a callee an argument pattern names (or such a class) and defines no
        `__init__` of its own."""
        if not self.cp.arguments or any(m.__class__ in _FUNCS and m.name == "__init__" for m in node.body):  # type: ignore[attr-defined]
            return
        for base in node.bases:
            chain: list[str] = []
            while base.__class__ is ast.Attribute:
                chain.append(base.attr)  # type: ignore[attr-defined]
                base = base.value  # type: ignore[attr-defined]
            if base.__class__ is not ast.Name:
                continue
            root = self.subclassed.get(base.id) if not chain else None  # type: ignore[attr-defined]
            root = root or self.aliases.root(base.id, node.lineno)  # type: ignore[attr-defined]
            qualified = ".".join([root, *reversed(chain)]) if root else None
            if qualified is not None and self.cp.arguments.of_callee(qualified):
                self.subclassed[node.name] = qualified
                return

    def _prepass(self, body: list[ast.stmt], fallback: bool = False, block: tuple[int, int] | None = None) -> None:
        """Module-level imports and literal constants, wherever they sit in the module, so a use
        above the definition (a function defined first) still resolves. `fallback`: `body` runs
        only where what came before failed or was false (an `except` handler, an `if`'s `else`);
        `block`: the lines of the `if` or `try` body `body` sits in (`AliasTable.add`)."""
        for stmt in body:
            cls = stmt.__class__
            if cls is ast.Import or cls is ast.ImportFrom:
                if fallback:
                    self.fallbacks.add(id(stmt))
                elif block is not None:
                    self.conditional[id(stmt)] = block
                self.aliases.add(stmt, keep=fallback, block=None if fallback else block)  # type: ignore[arg-type]
            elif cls is ast.Assign:
                imported = _imported_by_call(stmt.value)  # type: ignore[attr-defined]
                if imported is not None and len(stmt.targets) == 1:  # type: ignore[attr-defined]
                    target = stmt.targets[0]  # type: ignore[attr-defined]
                    if target.__class__ in (ast.Tuple, ast.List) and target.elts:  # `trt, ok = optional_import(...)`
                        target = target.elts[0]
                    if target.__class__ is ast.Name:
                        self.aliases.bind(target.id, imported)
                if len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Name:  # type: ignore[attr-defined]
                    self._remember(self.consts, stmt.targets[0].id, stmt.value)  # type: ignore[attr-defined]
                    qn = self._cuda_alias(stmt.value)  # type: ignore[attr-defined]
                    if qn is not None:
                        self.assigned[stmt.targets[0].id] = qn  # type: ignore[attr-defined]
                        self.aliased.add(stmt.targets[0].id)  # type: ignore[attr-defined]
            elif cls is ast.ClassDef:
                self._subclass(stmt)  # type: ignore[arg-type]
                for member in stmt.body:  # type: ignore[attr-defined]
                    if member.__class__ is ast.AnnAssign and member.target.__class__ is ast.Name and member.value is not None:
                        self._remember(self.fields, member.target.id, member.value)
                    elif member.__class__ is ast.Assign and len(member.targets) == 1 and member.targets[0].__class__ is ast.Name:
                        self._remember(self.fields, member.targets[0].id, member.value)
                        qn = self._cuda_alias(member.value)
                        if qn is not None:
                            self.members[member.targets[0].id] = qn
                    elif member.__class__ is ast.FunctionDef and member.name == "__init__" and self.cp.default_devices:
                        self._device_defaults(member, stmt.name)  # type: ignore[arg-type, attr-defined]
            elif cls in _FUNCS:
                if self.cp.default_devices:
                    self._device_defaults(stmt)  # type: ignore[arg-type]
                self._returned_module(stmt)
            elif cls is ast.AnnAssign:
                if stmt.target.__class__ is ast.Name and stmt.value is not None:  # type: ignore[attr-defined]
                    self._remember(self.consts, stmt.target.id, stmt.value)  # type: ignore[attr-defined]
            elif cls in (ast.If, ast.Try, ast.With, ast.TryStar):
                # An import in an `if` or `try` body may not run (xDiT binds `synchronize` from
                # `torch.cuda`, then per vendor under an `if`): `AliasTable.add`.
                inner = block if cls is ast.With else (stmt.body[0].lineno, stmt.body[-1].end_lineno or stmt.lineno)  # type: ignore[attr-defined]
                self._prepass(stmt.body, fallback, inner)  # type: ignore[attr-defined]
                self._prepass(getattr(stmt, "finalbody", None) or [], fallback, block)
                self._prepass(getattr(stmt, "orelse", None) or [], fallback or cls is ast.If, block)
                for handler in getattr(stmt, "handlers", ()):
                    self._prepass(handler.body, True)

    def _device_defaults(self, fn: ast.FunctionDef, name: str | None = None) -> None:
        """`def autocast_ctx(enabled=True, device_type="cuda")`: a call that leaves `device_type`
        out runs on CUDA; the default itself is the device rules' own finding. With `name`, `fn`
        is the `__init__` of the class so named, which its calls construct (`Aligner()` with
        `def __init__(self, device="cuda")`): `self` takes no argument."""
        a = fn.args
        positional = [*a.posonlyargs, *a.args][1 if name else 0:]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
        pairs: list[tuple[ast.arg, ast.expr | None, int | None]] = [
            (p, d, i) for i, (p, d) in enumerate(zip(positional, defaults, strict=True))]
        pairs += [(p, d, None) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
        found = []
        for param, default, pos in pairs:
            if (default is not None and default.__class__ is ast.Constant and isinstance(default.value, str)
                    and dev_m.device_like_name(param.arg)):
                kind, _, index = default.value.partition(":")
                rules = self.cp.default_devices.get(kind)
                if rules and (not index or index.isdigit()):
                    found.append((param.arg, pos, default.value, rules))
        if found:
            self.defaulted[name or fn.name] = found

    def _returned_module(self, fn: ast.AST) -> None:
        """Record `fn` when it is a lazy import: no parameters, a short body that imports a module
        under a name and returns that name (in its body or a `try`)."""
        body = fn.body  # type: ignore[attr-defined]
        if self.tokens is None or has_parameters(fn) or len(body) > 8:
            return
        stmts = [*body, *(s for t in body if t.__class__ is ast.Try for s in t.body)]  # type: ignore[attr-defined]
        bound: dict[str, str] = {}
        for stmt in stmts:
            if stmt.__class__ is ast.Import:
                for a in stmt.names:  # type: ignore[attr-defined]
                    bound[a.asname or a.name.partition(".")[0]] = a.name if a.asname else a.name.partition(".")[0]
            elif stmt.__class__ is ast.ImportFrom and stmt.module and not stmt.level:  # type: ignore[attr-defined]
                for a in stmt.names:  # type: ignore[attr-defined]
                    bound[a.asname or a.name] = f"{stmt.module}.{a.name}"  # type: ignore[attr-defined]
        for stmt in stmts:
            if stmt.__class__ is ast.Return and stmt.value.__class__ is ast.Name and stmt.value.id in bound:  # type: ignore[attr-defined]
                self.returned[fn.name] = bound[stmt.value.id]  # type: ignore[attr-defined]
                return

    def _cuda_alias(self, value: ast.AST) -> str | None:
        """The CUDA name `value` stands for when a name is assigned it: `amp_ctx =
        torch.cuda.amp.autocast` (or a `functools.partial` of it, or a partial that fixes a CUDA
        device: `partial(torch.autocast, device_type="cuda")`), `_amp = amp` (apex's); a later
        `amp_ctx()` is a use of a CUDA name through an alias of its own, reported by the `tokens`
        rule. Either branch of a conditional counts (`torch.cuda if is_cuda else torch.xpu`).
        None for anything else."""
        if value.__class__ is ast.IfExp:
            return self._cuda_alias(value.body) or self._cuda_alias(value.orelse)  # type: ignore[attr-defined]
        if self.tokens is None:
            return None
        if value.__class__ is ast.Call and value.args and self.resolve(value.func) in _PARTIALS:  # type: ignore[attr-defined]
            fixed = [*value.args[1:], *(kw.value for kw in value.keywords)]  # type: ignore[attr-defined]
            value = value.args[0]  # type: ignore[attr-defined]
            device = next((a.value for a in fixed if a.__class__ is ast.Constant and isinstance(a.value, str)  # type: ignore[attr-defined]
                           and self.tokens.string(a.value)), None)  # type: ignore[attr-defined]
            if device is not None and (qn := self.resolve(value)) is not None:
                return f"{qn}({device!r})"
        if (value.__class__ is ast.Call and value.func.__class__ is ast.Name and not value.args  # type: ignore[attr-defined]
                and not value.keywords and value.func.id in self.returned):  # type: ignore[attr-defined]
            qn = self.returned[value.func.id]  # type: ignore[attr-defined]  # `te = _import_te()`
        elif value.__class__ is not ast.Attribute and value.__class__ is not ast.Name:
            return None
        else:
            qn = self.resolve(value)
        if qn is None:
            return None
        best = self.cp.qualified.best(qn, [])
        # A rule's name that is no CUDA API (`torch._inductor.config.x`, a compile setting) makes
        # no CUDA alias: its uses are no CUDA references.
        cuda_rule = best is not None and any(r.category not in _NOT_CUDA_CATEGORIES and not r.code.startswith(_NOT_CUDA_FAMILY)
                                             for r in best[2])
        return qn if cuda_rule or self.tokens.name(qn.replace(".", "_")) else None

    @staticmethod
    def _remember(table: dict[str, tuple[ast.AST, ...] | None], name: str, value: ast.AST,
                  conditional: bool | None = None) -> None:
        """`name` may stand for the literal `value` (a constant, or a dict of them: `{"": 0}`), as
        for each literal assigned to it elsewhere, as a conditional expression's branches do
        (torch's test helpers: `DEVICE_TYPE = "cuda"` or `"xpu"` or `"cpu"` by the host). Once
        it is assigned anything else too its value is unknown (None): the literal may be
        overwritten before the use (`device_map = "auto"`, then a computed map). A function's
        names are assigned in order (`conditional`: whether this assignment is in a branch, a
        loop or a `try`, else None for a table not kept in order): a literal assigned after the
        unknown value may be the value again (sparseml's `if oneshot: device_map = args.device
        elif not fsdp: device_map = "auto"`); an unconditional one is the value."""
        if value.__class__ is ast.IfExp:
            # `x if ddp else "auto"`: either branch may be the value; a computed one is no literal
            # the use could match, it overwrites nothing.
            branches = [b for b in args_m.branches(value) if args_m.static_value(_field_default(b)) is not args_m.UNKNOWN]
            for i, branch in enumerate(branches):  # (each branch after the first adds a value)
                _Walker._remember(table, name, branch, conditional if i == 0 or conditional is None else True)
            if not branches:
                table[name] = None
            return
        value = _field_default(value)
        known = table.get(name, ())
        static = args_m.static_value(value)
        if static is not args_m.UNKNOWN and conditional is not None and (known is None or not conditional):
            table[name] = (value,)
        elif known is None or static is args_m.UNKNOWN:
            table[name] = None
        elif all(args_m.static_value(k) != static for k in known):
            table[name] = (*known, value)
        else:
            table[name] = known

    def _params(self, fn: ast.FunctionDef) -> dict[str, tuple[ast.AST, ...] | None]:
        a = fn.args
        scope: dict[str, tuple[ast.AST, ...] | None] = {}
        positional = [*a.posonlyargs, *a.args]
        self.local_defs.setdefault(fn.name, []).append([p.arg for p in positional])
        defaults: list[ast.AST | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
        pairs = [*zip(positional, defaults, strict=True), *zip(a.kwonlyargs, a.kw_defaults, strict=True)]
        for param, default in pairs:
            if default is None:
                scope[param.arg] = None
                continue
            scope[param.arg] = (default,) if args_m.literal_value(default) is not args_m.UNKNOWN else None
            if self.devices_on and dev_m.device_like_name(param.arg):
                self._device_literals(default)
        for extra in (a.vararg, a.kwarg):
            if extra is not None:
                scope[extra.arg] = None
        return scope

    def _import(self, node: ast.AST) -> None:
        self.aliases.add(node, keep=id(node) in self.fallbacks, block=self.conditional.get(id(node)))  # type: ignore[arg-type]
        if self.locals:  # a function's own import: the name is the import, not a local
            for alias in node.names:  # type: ignore[attr-defined]
                self.locals[-1].discard((alias.asname or alias.name).partition(".")[0])
        if self.tokens is not None:
            self._import_tokens(node)
        table = self.cp.imports
        if not table.patterns:
            return
        if node.__class__ is ast.Import:
            for alias in node.names:  # type: ignore[attr-defined]
                for rule in table.match(alias.name):
                    self._report(rule, "imports", alias, alias.name)
            return
        # A relative import is matched spelled with its dots (`from . import _C` as `._C`).
        dots = "." * node.level  # type: ignore[attr-defined]
        module = dots + (node.module or "")  # type: ignore[attr-defined]
        found: dict[str, tuple[Rule, str]] = {}
        if node.module:  # type: ignore[attr-defined]
            for rule in table.match(module):
                found.setdefault(rule.code, (rule, module))
        for alias in node.names:  # type: ignore[attr-defined]
            if alias.name != "*":
                name = f"{module}.{alias.name}" if node.module else dots + alias.name  # type: ignore[attr-defined]
                for rule in table.match(name):
                    found.setdefault(rule.code, (rule, name))
        names = [f"{module}.{a.name}" for a in node.names if a.name != "*"] if node.module else []  # type: ignore[attr-defined]
        for rule, symbol in found.values():
            # `from mmcv.ops import point_sample`: every name imported is one of the rule's exceptions
            if names and len(names) == len(node.names) and all(self.cp.qualified.excepts(rule, n) for n in names):  # type: ignore[attr-defined]
                continue
            self._report(rule, "imports", node, symbol)

    def _assign(self, node: ast.AST) -> None:
        if node.__class__ is ast.AnnAssign and self.unchecked:
            self.checked.update(map(id, ast.walk(node.annotation)))  # type: ignore[attr-defined]
        targets = node.targets if node.__class__ is ast.Assign else [node.target]  # type: ignore[attr-defined]
        value = node.value  # type: ignore[attr-defined]
        if value is None:
            return
        if value.__class__ is ast.Attribute and (self.resolve(value) or "").startswith(_OTHER_BACKENDS):
            # rvc's Intel XPU shim, `torch.cuda.device_count = torch.xpu.device_count`: another
            # back end's function put in CUDA's place, no use of CUDA
            self.shims.update(id(t) for t in targets if t.__class__ is ast.Attribute)
        for target in targets:
            if self.locals:
                self._bind(target)
                if target.__class__ is ast.Name:
                    qn = self._cuda_alias(value)
                    if qn is not None:
                        self.local_assigned[-1][target.id] = qn  # type: ignore[attr-defined]
                        self.aliased.add(target.id)  # type: ignore[attr-defined]
                    else:
                        self.local_assigned[-1].pop(target.id, None)  # type: ignore[attr-defined]
            if self.tokens is not None and target.__class__ is ast.Name and target.id == "__all__":  # type: ignore[attr-defined]
                self._silence(value)  # the module's exported names
            elif self.tokens is not None and _message_target(target):
                self._silence(value)
            if target.__class__ is ast.Subscript and self.cp.arguments.any_by_keyword:
                self._subscript_keyword(target.slice, value, target)  # type: ignore[attr-defined]
            self._spread_assign(target, value)
            if self.devices_on and dev_m.device_like(target):
                self._device_literals(value)
            elif (self.devices_on and target.__class__ in (ast.Tuple, ast.List) and value.__class__ in (ast.Tuple, ast.List)
                  and len(target.elts) == len(value.elts)):  # type: ignore[attr-defined]
                # `mode, n, device = Mode.DDP, None, "cuda"`: each name its value
                for name, one in zip(target.elts, value.elts, strict=True):  # type: ignore[attr-defined]
                    if dev_m.device_like(name):
                        self._device_literals(one)
            if (target.__class__ is ast.Attribute and target.value.__class__ is ast.Name  # type: ignore[attr-defined]
                    and target.value.id == "self"):  # type: ignore[attr-defined]
                self._remember(self.fields, target.attr, value)  # type: ignore[attr-defined]
                if self.tokens is not None and (qn := self._cuda_alias(value)) is not None:
                    self.members[target.attr] = qn  # `self.tt = torch.cuda if cuda else torch` (OpenNMT's beam search)
                if self.cp.named:
                    self._named(target.attr, node, value)  # type: ignore[attr-defined]
            elif target.__class__ is ast.Attribute and self.cp.named:  # a config's field (`cfg.optim_wrapper.type = ...`)
                self._named(target.attr, node, value)  # type: ignore[attr-defined]
            elif target.__class__ is ast.Name and not self.scopes and self.cp.named:  # a module constant, a class field
                self._named(target.id, node, value)  # type: ignore[attr-defined]
            if target.__class__ is ast.Name:
                # A local assignment shadows the module's constant of the same name, literal or not.
                scope = self.scopes[-1] if self.scopes else None
                if scope is not None and (value.__class__ in _LITERALS or value.__class__ is ast.IfExp
                                          or target.id in scope or target.id in self.consts
                                          or (value.__class__ is ast.Call and _field_default(value) is not value)):
                    # (a statement indented deeper than its function's body runs only as an
                    # `if`, a loop or a `try` lets it)
                    self._remember(scope, target.id, value, self.stmt.col_offset > self.body_cols[-1])
                if scope is not None and self._formatted_device(value):
                    # (the scope holds static values only; a format is kept beside it, by the scope)
                    self.formatted.setdefault(id(scope), (scope, {}))[1].setdefault(target.id, []).append(value)
                if self.env_on and value.__class__ is ast.Dict and env_m.env_like_name(target.id):
                    self._env_dict(value)

    def _formatted_device(self, value: ast.AST) -> bool:
        """A device string built from a format (`f"cuda:{rank}"`, `"cuda:{}".format(rank)`,
        `"cuda:" + str(rank)`), which a name may hold until it is given as the device."""
        if not self.devices_on or value.__class__ not in (ast.JoinedStr, ast.Call, ast.BinOp):
            return False
        found: list[ast.AST] = []
        dev_m.literals(value, found)
        return any(self.cp.devices.match(lit) is not None for lit in found)

    def _named(self, name: str, node: ast.AST, value: ast.AST) -> None:
        """`node` gives `name` the value `value`; a `named` pattern's value there is a candidate."""
        for rule, pat in self.cp.named.match(name):
            for literal in args_m.assigned_literals(_field_default(value)):
                if args_m.holds_value(pat, literal):
                    self.named.append((name, rule, node, literal, self.stmt, self.stmt_line))
                    break

    def _subscript_keyword(self, key: ast.AST, value: ast.AST, target: ast.AST) -> None:
        """`kwargs["load_in_8bit"] = True`, `kwargs.setdefault("pin_memory", True)`: a keyword
        argument on its way to a call (`key`: the literal key, `target`: where it is set)."""
        if key.__class__ is ast.Constant and key.value in self.cp.arguments.any_by_keyword:  # type: ignore[attr-defined]
            kw = ast.keyword(arg=key.value, value=value)  # type: ignore[attr-defined]
            kw.lineno, kw.col_offset = key.lineno, key.col_offset
            kw.end_lineno, kw.end_col_offset = value.end_lineno, value.end_col_offset
            call = ast.copy_location(ast.Call(func=ast.Name("dict"), args=[], keywords=[kw]), target)
            for rule, pat in self.cp.arguments.candidates(None, None, [kw]):
                # A switch is on here only when set so: `output["load_in_4bit"] = self.load_in_4bit`
                # serialises a config, it loads nothing.
                self._argument(call, rule, replace(pat, switch=False) if pat.switch else pat, None, None)

    def _bind(self, target: ast.AST) -> None:
        """Names a function binds by assignment, for `_shadowed`."""
        cls = target.__class__
        if cls is ast.Name:
            self.locals[-1].add(target.id)  # type: ignore[attr-defined]
        elif cls in (ast.Tuple, ast.List):
            for elt in target.elts:  # type: ignore[attr-defined]
                self._bind(elt)
        elif cls is ast.Starred:
            self._bind(target.value)  # type: ignore[attr-defined]

    def _for(self, node: ast.AST) -> None:
        if self.locals:
            self._bind(node.target)  # type: ignore[attr-defined]

    def _spread_assign(self, target: ast.AST, value: ast.AST) -> None:
        """Keep `spreads` (see `__init__`) up to date with an assignment."""
        table = self.spreads[-1]
        if target.__class__ is ast.Name:
            # Assigned twice (or a parameter): which value a call sees is unknown.
            table[target.id] = None if target.id in table else _closed_keywords(value)  # type: ignore[attr-defined]
        elif target.__class__ is ast.Subscript and target.value.__class__ is ast.Name:  # type: ignore[attr-defined]
            keywords = table.get(target.value.id)  # type: ignore[attr-defined]
            if keywords is not None:
                key = target.slice  # type: ignore[attr-defined]
                if key.__class__ is ast.Constant and key.value.__class__ is str and key.value.isidentifier():
                    kw = ast.keyword(arg=key.value, value=value)
                    kw.lineno, kw.col_offset = key.lineno, key.col_offset
                    kw.end_lineno, kw.end_col_offset = value.end_lineno, value.end_col_offset
                    keywords.append(kw)
                else:
                    table[target.value.id] = None  # type: ignore[attr-defined]

    def _aug_assign(self, node: ast.AST) -> None:
        target = node.target  # type: ignore[attr-defined]
        if target.__class__ is ast.Name and target.id in self.spreads[-1]:
            self.spreads[-1][target.id] = None  # `kw |= other`
        if self.tokens is not None and _message_target(node.target):  # type: ignore[attr-defined]
            self._silence(node.value)  # type: ignore[attr-defined]

    def _with(self, node: ast.AST) -> None:
        if self.locals:
            for item in node.items:  # type: ignore[attr-defined]
                if item.optional_vars is not None:
                    self._bind(item.optional_vars)

    def _expr_stmt(self, node: ast.AST) -> None:
        """A string statement is a docstring or a comment written as a string: not code."""
        value = node.value  # type: ignore[attr-defined]
        if value.__class__ in (ast.Constant, ast.JoinedStr):
            self.silent.add(id(value))

    def _raise(self, node: ast.AST) -> None:
        exc = node.exc  # type: ignore[attr-defined]
        if exc.__class__ is ast.Call:  # `raise RuntimeError(f"cuda: {n}")`: its arguments are the message
            self.silent.update(map(id, ast.walk(exc.func)))  # type: ignore[attr-defined]
            self.silent.update(map(id, exc.keywords))  # type: ignore[attr-defined]  # `cuda_toolkit=...`: a field of the error
            for a in (*exc.args, *(kw.value for kw in exc.keywords)):  # type: ignore[attr-defined]
                self._silence(a)
        elif exc is not None:
            self._silence(exc)

    def _assert(self, node: ast.AST) -> None:
        if node.msg is not None:  # type: ignore[attr-defined]
            self._silence(node.msg)  # type: ignore[attr-defined]

    def _silence(self, expr: ast.AST) -> None:
        """A message and what it shows (`print(f"CUDA {torch.version.cuda}")`) is read by people:
        no CUDA word in it is reported for itself. Code in it that a specific rule matches (a
        `torch.cuda` call) still is."""
        if expr.__class__ is ast.Constant:
            self.silent.add(id(expr))
            return
        # What a call inside the message is given runs, it is not shown: `print(prof.key_averages()
        # .table(sort_by="cuda_time_total"))` sorts by a CUDA key. A call that formats text shows
        # what it is given (`"USE_CUDA: {}".format(use_cuda)`, `str(device)`).
        stack = [expr]
        while stack:
            node = stack.pop()
            self.silent.add(id(node))
            if node.__class__ is ast.Call and _called_name(node) not in _FORMATTERS:
                stack.append(node.func)  # type: ignore[attr-defined]
            else:
                stack.extend(ast.iter_child_nodes(node))

    def _function(self, node: ast.AST) -> None:
        if self.unchecked and node.__class__ is not ast.ClassDef:  # `def f(x: SparseConvTensor) -> Tensor`
            args = node.args  # type: ignore[attr-defined]
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if a is not None and a.annotation is not None:
                    self.checked.update(map(id, ast.walk(a.annotation)))
            if node.returns is not None:  # type: ignore[attr-defined]
                self.checked.update(map(id, ast.walk(node.returns)))  # type: ignore[attr-defined]
        decorators = node.decorator_list  # type: ignore[attr-defined]
        if decorators:
            self.stmt_line = min(self.stmt_line, *(d.lineno for d in decorators))
            for dec in decorators:
                if dec.__class__ is not ast.Call:
                    self._bare_decorator(dec)

    def _return(self, node: ast.AST) -> None:
        if self.func_names and node.value is not None and self.func_names[-1] in _DESCRIBERS:  # type: ignore[attr-defined]
            self._silence(node.value)  # type: ignore[attr-defined]
        elif self.func_names and node.value is not None and self.devices_on:  # type: ignore[attr-defined]
            # (a list or set returned is a list of device types: its entries are `_container`'s)
            if dev_m.device_like_name(self.func_names[-1]) and node.value.__class__ not in (ast.List, ast.Set):  # type: ignore[attr-defined]
                self._device_literals(node.value)  # type: ignore[attr-defined]

    def _match(self, node: ast.AST) -> None:
        if not self.devices_on or not dev_m.device_like(node.subject):  # type: ignore[attr-defined]
            return
        for case in node.cases:  # type: ignore[attr-defined]
            patterns = case.pattern.patterns if case.pattern.__class__ is ast.MatchOr else [case.pattern]
            for p in patterns:
                if p.__class__ is ast.MatchValue:
                    self._device_literals(p.value)

    # -- expressions --

    def walk(self, tree: ast.Module) -> None:
        """One pass over the whole tree with an explicit stack. A statement pushes its blocks first
        and its own expressions last, so every expression is visited while `self.stmt` is its
        statement; a function's body sits above a marker that closes its scope."""
        stack: list[ast.AST] = list(reversed(tree.body))
        self.stack = stack
        pop, push, extend = stack.pop, stack.append, stack.extend
        dispatch = _DISPATCH
        aliases = self.aliases
        names = aliases.names
        within = aliases.within
        implicit = aliases.implicit
        scope_end = _SCOPE_END
        name_kind, case_kind = _NAME, _CASE
        tokens = self.tokens
        while stack:
            node = pop()
            entry = dispatch.get(node.__class__)
            if entry is None:
                entry = _dispatch_entry(node.__class__)
            kind, fields, handler, blocks = entry
            if not kind:  # an expression
                if handler is not None and handler(self, node):
                    continue
            elif kind == name_kind:  # the most common node: inlined
                ident = node.id
                q = aliases.root(ident, self.stmt_line) if within and ident in within else names.get(ident)
                if q is not None and (node.ctx.__class__ is ast.Store or (self.locals and self._shadowed(ident))):
                    q = None
                    if tokens is not None:
                        self._token_name(node, ident)
                    continue
                if q is not None:
                    if "." in q:
                        self._qualified(node, q, [])
                elif ident in implicit:
                    aliases.implicit_seen.add(ident)
                elif aliases.stars:
                    self._star(node)
                if tokens is not None:
                    self._token_name(node, ident)
                continue
            else:  # a statement (or except handler / match case): blocks first, expressions on top
                if node is scope_end:
                    self.scopes.pop()
                    self.spreads.pop()
                    self.locals.pop()
                    self.local_assigned.pop()
                    self.func_names.pop()
                    self.body_cols.pop()
                    continue
                self.stmt = node
                self.stmt_line = node.pattern.lineno if kind == case_kind else node.lineno
                if handler is not None:
                    handler(self, node)
                for f in blocks:
                    v = getattr(node, f)
                    if v:
                        extend(reversed(v))
                if node.__class__ in _FUNCS:
                    stack.insert(len(stack) - len(node.body), scope_end)
                    params = self._params(node)
                    self.scopes.append(params)
                    self.spreads.append(dict.fromkeys(params))  # a parameter holds what the caller gave
                    self.locals.append(set(params))
                    self.local_assigned.append({})
                    self.func_names.append(node.name)
                    self.body_cols.append(node.body[0].col_offset)
            for f in fields:
                v = getattr(node, f)
                if v is not None:
                    if v.__class__ is list:
                        extend(v)
                    else:
                        push(v)

    def resolve(self, expr: ast.AST) -> str | None:
        """The qualified name of a Name/Attribute chain rooted in an import, else None."""
        attrs: list[str] = []
        while expr.__class__ is ast.Attribute:
            attrs.append(expr.attr)  # type: ignore[attr-defined]
            expr = expr.value  # type: ignore[attr-defined]
        if expr.__class__ is not ast.Name:
            return None
        root = self._root(expr.id)  # type: ignore[attr-defined]
        if root is None:
            return None
        if attrs:
            attrs.reverse()
            return root + "." + ".".join(attrs)
        return root

    def _is_module_expr(self, expr: ast.AST) -> bool:
        while expr.__class__ is ast.Attribute:
            expr = expr.value  # type: ignore[attr-defined]
        return (expr.__class__ is ast.Name and self.aliases.is_import(expr.id)  # type: ignore[attr-defined]
                and not (self.locals and self._shadowed(expr.id)))  # type: ignore[attr-defined]

    def _shadowed(self, name: str) -> bool:
        """Whether an enclosing function binds `name` itself (a parameter `config` is not the
        module's `import ... as config`)."""
        for local in self.locals:
            if name in local:
                return True
        return False

    def _root(self, name: str) -> str | None:
        if self.locals and self._shadowed(name):
            return None
        return self.aliases.root(name, self.stmt_line)

    def _attribute(self, node: ast.AST) -> bool:
        self._chain(node)
        return True

    def _chain(self, node: ast.AST) -> str | None:
        """Match a Name/Attribute chain once, at its outermost node (attributes on every link,
        qualified names on its prefixes); walk a non-Name base. Returns the resolved name."""
        if id(node) in self.shims:
            return None
        links: list[ast.Attribute] = []
        cur = node
        while cur.__class__ is ast.Attribute:
            links.append(cur)  # type: ignore[arg-type]
            cur = cur.value  # type: ignore[attr-defined]
        attributes = self.cp.attributes
        if attributes:
            for link in links:
                rules = attributes.get(link.attr)
                if rules and not self._is_module_expr(link.value) and not self._own_attribute(link):
                    for rule in rules:
                        self._report(rule, "attributes", link, link.attr, pos=_attr_pos(link))
        if cur.__class__ is not ast.Name:
            self.stack.append(cur)
            if links and self.tokens is not None and id(links[0]) not in self.silent:
                self._token_links(links)  # `_torch().cuda.is_available()`, `models[0].cudnn`
            return None
        root = self._root(cur.id)  # type: ignore[attr-defined]
        if self.tokens is not None:
            self._token_chain(cur, links)
        if root is None:
            if self.aliases.stars:
                self._star(cur)
            return None
        if not links:
            if "." in root:
                self._qualified(cur, root, [])
            return root
        links.reverse()
        self._qualified(cur, root, links)
        return root + "." + ".".join([link.attr for link in links])

    def _getattr(self, call: ast.Call, probe: bool = False) -> None:
        """`getattr(faiss, "get_num_gpus", lambda: 0)()`: the attribute a module is asked for by
        name is referenced as if written out (located at the call). So is one a `probe` (`hasattr`)
        asks another library for (pylate's `hasattr(faiss, "StandardGpuResources")`, a test for
        FAISS's GPU build); torch's own are left to the code they guard (`if hasattr(torch.cuda,
        "memory_reserved"): return torch.cuda.memory_reserved(i)` moves whole)."""
        name = call.args[1]
        if name.__class__ is not ast.Constant or not isinstance(name.value, str) or not name.value.isidentifier():  # type: ignore[attr-defined]
            return
        links: list[ast.Attribute] = []
        cur = call.args[0]
        while cur.__class__ is ast.Attribute:
            links.append(cur)  # type: ignore[arg-type]
            cur = cur.value  # type: ignore[attr-defined]
        root = self._root(cur.id) if cur.__class__ is ast.Name else None  # type: ignore[attr-defined]
        if root is not None and not (probe and root.partition(".")[0] == "torch"):
            asked = ast.copy_location(ast.Attribute(value=call.args[0], attr=name.value, ctx=ast.Load()), call)  # type: ignore[attr-defined]
            asked.end_lineno, asked.end_col_offset = call.end_lineno, call.end_col_offset
            self.by_name[id(asked)] = asked
            self._qualified(cur, root, [*reversed(links), asked])

    def _own_attribute(self, link: ast.Attribute) -> bool:
        """`self.is_cuda` where the file assigns `self.is_cuda = ...`: a flag of the class's own
        (pyro's `self.is_cuda = cuda`), not the tensor's property. Read from the text: the method
        that assigns it may be one the partial parse skipped."""
        if link.value.__class__ is not ast.Name or link.value.id != "self":  # type: ignore[attr-defined]
            return False
        if self._own_attributes is None:
            self._own_attributes = frozenset(_SELF_STORE.findall(self.source))
        return link.attr in self._own_attributes

    def _own_method(self, func: ast.Attribute) -> bool:
        """`self.cuda(device)`, `Quantizer.cuda(W_q, meta, device)` where a class of this file
        defines `cuda` itself (HQQ's `HQQLinear.cuda`): the class's own method, not a tensor's or a
        module's. Read from the text: the definition may be in a function the partial parse skipped."""
        receiver = func.value
        if receiver.__class__ is not ast.Name:
            return False
        if self._own_methods is None:
            self._own_methods = (frozenset(_METHOD_DEF.findall(self.source)), frozenset(_CLASS_DEF.findall(self.source)))
        methods, classes = self._own_methods
        return func.attr in methods and (receiver.id in ("self", "cls") or receiver.id in classes)  # type: ignore[attr-defined]

    def _star(self, node: ast.AST) -> None:
        exact = self.cp.qualified.exact
        for module in self.aliases.stars:
            name = f"{module}.{node.id}"  # type: ignore[attr-defined]
            for rule in exact.get(name, ()):
                self._report(rule, "qualified_names", node, name, qualified=name, root_spec=name)

    def _qualified(self, root_node: ast.AST, root: str, links: list[ast.Attribute]) -> None:
        table = self.cp.qualified
        if root.partition(".")[0] not in table.roots:
            return
        best = table.best(root, [link.attr for link in links])
        if best is None:
            return
        i, name, rules = best
        node = root_node if i == 0 else links[i - 1]
        spec = self.aliases.specs.get(root_node.id, "")  # type: ignore[attr-defined]
        for rule in rules:
            if rule.match.checks or id(node) not in self.checked:
                self._report(rule, "qualified_names", node, name, qualified=name, root_spec=spec)

    def _call(self, node: ast.AST) -> bool:
        call: ast.Call = node  # type: ignore[assignment]
        func = call.func
        fcls = func.__class__
        # The callee chain is matched here (not again by the walk): the call's children pushed
        # below are its arguments only.
        if fcls is ast.Attribute:
            leaf: str | None = func.attr  # type: ignore[attr-defined]
            self.callee = func
            qn = self._chain(func)
        elif fcls is ast.Name:
            leaf = func.id  # type: ignore[attr-defined]
            qn = self._chain(func)
        else:
            leaf = qn = None
            self.stack.append(func)
        self.stack.extend(call.args)
        self.stack.extend(call.keywords)
        if fcls is ast.Name and leaf in _TYPE_TESTS and len(call.args) == 2:
            self.checked.update(map(id, ast.walk(call.args[1])))
        elif fcls is ast.Name and (leaf == "getattr" or leaf == "hasattr") and len(call.args) >= 2:
            self._getattr(call, probe=leaf == "hasattr")
        cp = self.cp
        if fcls is ast.Attribute and cp.methods:
            rules = cp.methods.get(leaf)  # type: ignore[arg-type]
            if rules and not self._is_module_expr(func.value) and not self._own_method(func):  # type: ignore[attr-defined, arg-type]
                a = _attr_pos(func)  # type: ignore[arg-type]
                pos = (a[0], a[1], call.end_lineno or call.lineno, call.end_col_offset or 0)
                for rule in rules:
                    self._report(rule, "methods", call, f".{leaf}()", call=call, pos=pos)
        if (self.devices_on and qn is None and call.args
                and (fcls is ast.Name or (fcls is ast.Attribute and func.value.__class__ is ast.Name  # type: ignore[attr-defined]
                                          and func.value.id in ("self", "cls")))  # type: ignore[attr-defined]
                and any(a.__class__ is ast.Constant and a.value.__class__ is str and dev_m.device_value(a.value)  # type: ignore[attr-defined]
                        for a in call.args)):
            self.local_calls.append((leaf, fcls is ast.Attribute, call, self.stmt, self.stmt_line))  # type: ignore[arg-type]
        if leaf == "add_argument":
            self._argparse_default(call)
        elif leaf == "setup" and cp.requirements:
            self._setup_dependencies(call)
        elif leaf == "setdefault" and len(call.args) == 2 and cp.arguments.any_by_keyword:
            self._subscript_keyword(call.args[0], call.args[1], call)
        elif leaf == "set_defaults":  # `parser.set_defaults(pin_mem=True)` after a store_true option
            for kw in call.keywords:
                if kw.arg is not None and args_m.literal_value(kw.value) is not args_m.UNKNOWN:
                    self.argparse[kw.arg] = [kw.value]
        if self.tokens is not None:
            self._call_messages(call, leaf, qn)
            if leaf == "type" and fcls is ast.Attribute and len(call.args) == 1 and call.args[0].__class__ is ast.Name:
                # `x.type(FloatTensor)`, a function's alias of `torch.cuda.FloatTensor`: converting
                # to the type is the alias's use, as a call of it is
                arg = call.args[0]
                if arg.id in self.aliased:  # type: ignore[attr-defined]
                    self._token_name(arg, arg.id, used=True)  # type: ignore[attr-defined]
            if fcls is ast.Attribute and leaf in _TEXT_TESTS and call.args:
                # (a value the string test matches, `"cuda"`, is left to the device rules)
                first = call.args[0]
                for text in first.elts if first.__class__ is ast.Tuple else [first]:  # type: ignore[attr-defined]
                    if text.__class__ is ast.Constant and text.value.__class__ is str and not self.tokens.string(text.value):  # type: ignore[attr-defined]
                        self._compared_text(text)
        if fcls is ast.Attribute and leaf in _DICT_CHANGES and func.value.__class__ is ast.Name:  # type: ignore[attr-defined]
            spreads = self.spreads[-1]
            if func.value.id in spreads:  # type: ignore[attr-defined]
                spreads[func.value.id] = None  # type: ignore[attr-defined]  # `kw.update(other)`: keys unknown
        if cp.arguments:
            target = self._spread(call)
            # A `.name` pattern is a method: `cuda(v, *args)` calls a function of the project's own.
            # (not a method a class of this file defines itself, asked only of a method a pattern names)
            method = leaf if fcls is ast.Attribute and leaf in cp.arguments.by_name and not self._own_method(func) else None  # type: ignore[arg-type]
            for rule, pat in cp.arguments.candidates(method, qn, target.keywords):
                self._argument(target, rule, pat, leaf, qn)
            base = self.subclassed.get(leaf) if fcls is ast.Name and qn is None and self.subclassed else None  # type: ignore[arg-type]
            if base is not None and not (self.locals and self._shadowed(leaf)):  # type: ignore[arg-type]
                # The base's patterns, with no fix: a fix would rewrite the subclass's name as the base's.
                for rule, pat in cp.arguments.of_callee(base):
                    if rule.fix.fix_class is FixClass.MANUAL:
                        self._argument(target, rule, pat, leaf, base, shown=leaf)
        if self.devices_on:
            self._call_devices(call, fcls, leaf, qn)
        if qn in _PARTIALS and call.args and call.args[0].__class__ in (ast.Name, ast.Attribute):
            self._partial(call)
        if self.env_on:
            self._call_env(call, fcls, leaf, qn)
        if self.defaulted and fcls is ast.Name and leaf in self.defaulted:
            self._defaulted_call(call, leaf)  # type: ignore[arg-type]
        if self.returned and fcls is ast.Name and leaf in self.returned and not (self.locals and self._shadowed(leaf)):  # type: ignore[arg-type]
            lazy = self._cuda_alias(call)  # a lazy import of a CUDA module loads it here
            if lazy is not None and id(func) not in self.silent:
                hit = self.tokens.name(lazy.replace(".", "_")) or (lazy, self.tokens.rules)  # type: ignore[union-attr]
                for rule in hit[1]:
                    self._report(rule, "tokens", func, f"{leaf}() (= {lazy})", token=hit[0])
        return True

    def _partial(self, call: ast.Call) -> None:
        """`partial(autocast, "cuda", enabled=False)` (vector-quantize-pytorch): the arguments it binds
        are the wrapped function's, matched as a call of it would be (its callee is not matched
        again: the walk reads it as the partial's argument)."""
        inner = self.resolve(call.args[0])
        if inner is None:
            return
        bound = ast.copy_location(ast.Call(func=call.args[0], args=call.args[1:], keywords=call.keywords), call)
        if self.cp.arguments:
            target = self._spread(bound)
            for rule, pat in self.cp.arguments.candidates(None, inner, target.keywords):
                self._argument(target, rule, pat, None, inner)
        if self.devices_on:
            self._call_devices(bound, ast.Name, None, inner)

    def _spread(self, call: ast.Call) -> ast.Call:
        """The call with the keywords a `**` gives spelled out, or itself: those of `**dict(k=v)`
        and `**{"k": v}`, and of `**kw` where this scope assigned `kw` such a dict (`spreads`).
        A `**` whose keys are all known is dropped: an argument it does not give is missing."""
        extra: list[ast.keyword] = []
        kept: list[ast.keyword] = []
        for kw in call.keywords:
            v = kw.value
            if kw.arg is not None:
                kept.append(kw)
                continue
            closed = self.spreads[-1].get(v.id) if v.__class__ is ast.Name else _closed_keywords(v)  # type: ignore[attr-defined]
            if closed is not None:
                extra += closed
                continue
            kept.append(kw)
            if v.__class__ is ast.Dict:
                extra += _dict_keywords(v)
            elif v.__class__ is ast.Call and v.func.__class__ is ast.Name and v.func.id == "dict":  # type: ignore[attr-defined]
                extra += [k for k in v.keywords if k.arg is not None]  # type: ignore[attr-defined]
        if len(kept) == len(call.keywords) and not extra:
            return call
        spread = ast.Call(func=call.func, args=call.args, keywords=[*kept, *extra])
        return ast.copy_location(spread, call)

    def _setup_dependencies(self, call: ast.Call) -> None:
        """`setup(install_requires=["flash-attn>=2"], extras_require={"gpu": [...]})`: each listed
        dependency as in a requirements file (a list the module assigned by name too)."""
        for kw in call.keywords:
            if kw.arg not in SETUP_DEPENDENCIES:
                continue
            value = self._module_list(kw.value) if kw.value.__class__ is ast.Name else kw.value
            lists = value.values if value.__class__ is ast.Dict else [value]  # type: ignore[attr-defined]
            if kw.value.__class__ is ast.Name:  # extras filled in by key: `extras["ann"] = [...]`
                lists = [*lists, *self._module_items(kw.value.id)]  # type: ignore[attr-defined]
            for listed in lists:
                for item in self._listed(listed):
                    # Transformers' style: `deps["liger_kernel"]`, `deps_list("torch", "accelerate")`
                    # name a pinned entry of the module's `_deps` table by its package.
                    if item.__class__ is ast.Subscript and item.value.__class__ is ast.Name:  # type: ignore[attr-defined]
                        key = item.slice  # type: ignore[attr-defined]
                        item = key if key.__class__ is ast.Constant else item
                    if item.__class__ is ast.Constant and item.value.__class__ is str:  # type: ignore[attr-defined]
                        for rule in matching(requirement_keys(item.value), self.cp.requirements):  # type: ignore[attr-defined]
                            self._report(rule, "requirements", item, item.value, literal=item)  # type: ignore[attr-defined]

    def _listed(self, node: ast.AST, depth: int = 0) -> list[ast.AST]:
        """The entries of a dependency list: a list or tuple, a name the module assigned one, lists
        joined by `+` (RealtimeTTS's `native + common`), a helper's arguments (`deps_list("torch")`)."""
        if node.__class__ is ast.Name and depth < 8:
            found = self._module_list(node)
            return self._listed(found, depth + 1) if found is not node else []
        if node.__class__ is ast.BinOp and node.op.__class__ is ast.Add and depth < 8:  # type: ignore[attr-defined]
            return [*self._listed(node.left, depth + 1), *self._listed(node.right, depth + 1)]  # type: ignore[attr-defined]
        if node.__class__ is ast.Call:
            return list(node.args)  # type: ignore[attr-defined]
        return list(getattr(node, "elts", ()))

    def _module_items(self, name: str) -> list[ast.AST]:
        """What module-level statements assign to keys of `name` (`extras["gpu"] = [...]`)."""
        return [stmt.value for stmt in self.tree.body  # type: ignore[attr-defined]
                if stmt.__class__ is ast.Assign and len(stmt.targets) == 1  # type: ignore[attr-defined]
                and stmt.targets[0].__class__ is ast.Subscript  # type: ignore[attr-defined]
                and stmt.targets[0].value.__class__ is ast.Name and stmt.targets[0].value.id == name]  # type: ignore[attr-defined]

    def _module_list(self, name: ast.AST) -> ast.AST:
        """The list, tuple or dict (of extras) a module-level statement last assigned to `name`,
        else `name`."""
        found = name
        for stmt in self.tree.body:
            if stmt.__class__ is ast.Assign and stmt.value.__class__ in (ast.List, ast.Tuple, ast.Dict, ast.BinOp) and any(  # type: ignore[attr-defined]
                    t.__class__ is ast.Name and t.id == name.id for t in stmt.targets):  # type: ignore[attr-defined]
                found = stmt.value  # type: ignore[attr-defined]
        return found

    def _defaulted_call(self, call: ast.Call, name: str) -> None:
        if self.locals and self._shadowed(name):
            return
        if any(kw.arg is None for kw in call.keywords) or any(a.__class__ is ast.Starred for a in call.args):
            return  # `**kwargs` or `*args` may pass the device
        for param, pos, default, rules in self.defaulted[name]:
            if any(kw.arg == param for kw in call.keywords) or (pos is not None and pos < len(call.args)):
                continue
            for rule in rules:
                self._report(rule, "default_devices", call, f'{name}() ({param}="{default}" by default)', call=call)

    def _call_messages(self, call: ast.Call, leaf: str | None, qn: str | None) -> None:
        """A message's strings are read by people, not run: print/logging/warnings/exception
        arguments and `help=`-like keywords."""
        if leaf is not None and (leaf.lstrip("_") in _MESSAGE_CALLS or leaf.endswith(_EXCEPTION_SUFFIXES)
                                 or (qn is not None and qn.startswith(_MESSAGE_MODULES))
                                 or (leaf in _DISPLAY_CALLS and qn is not None and qn.startswith(_DISPLAY_MODULES))
                                 or ("_" in leaf and _MESSAGE_CALL_NAME.fullmatch(leaf))):
            for a in call.args:
                self._silence(a)
            for kw in call.keywords:
                self._silence(kw.value)
            return
        for kw in call.keywords:
            if kw.arg in _MESSAGE_KEYWORDS or kw.arg == "argnames" or (kw.arg == "match" and leaf in _EXPECTED_FAILURES):
                self._silence(kw.value)
        if leaf in _REGEX_ASSERTS and len(call.args) >= 2:
            self._silence(call.args[1])
        elif leaf == "parametrize" and call.args:  # `("cuda", "mps", "expected")`: the test's parameter names
            self._silence(call.args[0])
        elif leaf == "add_argument_group":  # its title and description: `--help` text (espnet's "cudnn mode related")
            for a in call.args:
                self._silence(a)

    # -- CUDA-indicative words (`match.tokens`) --

    def _token_name(self, node: ast.AST, ident: str, used: bool = False) -> None:
        """`used`: the name is called or has an attribute read (`_amp.initialize(...)`), not only
        read as a value: a function's own alias counts only then (`v = torch.version.cuda` ...
        `return v` passes a value on)."""
        if id(node) in self.silent:
            return
        hit = self.tokens.name(ident)  # type: ignore[union-attr]
        if hit is not None and ident in self.aliases.names:
            # what a module the net leaves out is imported as (`import neuronxcc.nki.nccl as nccl`)
            imported = self._root(ident)
            if imported is not None and self.tokens.name(imported.replace(".", "_")) is None:  # type: ignore[union-attr]
                return
        # A name bound here is no use of what it held before (`except: OOM = Exception` after
        # `try: OOM = torch.cuda.OutOfMemoryError`).
        target = self._alias_of(ident, used) if (
            hit is None and ident in self.aliased and node.ctx.__class__ is not ast.Store) else None  # type: ignore[attr-defined]
        if target is not None:
            hit = self.tokens.name(target.replace(".", "_")) or (target, self.tokens.rules)  # type: ignore[union-attr]
            ident = f"{ident} (= {target})"
        if hit is not None:
            for rule in hit[1]:
                self._report(rule, "tokens", node, ident, token=hit[0])

    def _alias_of(self, ident: str, used: bool) -> str | None:
        """The CUDA name `ident` was assigned, where it is in scope: the innermost function's own
        alias (when `used`), else the module's (unless a function binds the name itself)."""
        for assigned, bound in zip(reversed(self.local_assigned), reversed(self.locals), strict=True):
            if ident in assigned:
                return assigned[ident] if used else None
            if ident in bound:
                return None
        return self.assigned.get(ident)

    def _token_chain(self, root: ast.AST, links: list[ast.Attribute]) -> None:
        """The first CUDA word of a dotted chain (`torch.version.cuda`), at that link."""
        table: TokenTable = self.tokens  # type: ignore[assignment]
        if id(root) in self.silent:
            return
        if table.name(root.id) is not None or (root.id in self.aliased and self._alias_of(root.id, True) is not None):  # type: ignore[attr-defined]
            self._token_name(root, root.id, True)  # type: ignore[attr-defined]
            return
        # A member alias counts where it is used (called, or an attribute read: `self.tt.FloatTensor`),
        # not where its value is passed on (`return self.algo`, `f(self.acc_dtype)`).
        first = links[-1] if links else None
        if (first is not None and first.attr in self.members and root.id in _OWN  # type: ignore[attr-defined]
                and first.ctx.__class__ is ast.Load and (len(links) > 1 or links[0] is self.callee)
                and not table.name(first.attr)):
            target = self.members[first.attr]
            hit = table.name(target.replace(".", "_")) or (target, table.rules)
            for rule in hit[1]:
                self._report(rule, "tokens", first, f"{root.id}.{first.attr} (= {target})",  # type: ignore[attr-defined]
                             token=hit[0], pos=_attr_pos(first))
            return
        self._token_links(links)

    def _token_links(self, links: list[ast.Attribute]) -> None:
        """The CUDA word among a chain's attributes (outermost first), at that link."""
        table: TokenTable = self.tokens  # type: ignore[assignment]
        for link in links:
            hit = table.name(link.attr)
            if hit is not None:
                for rule in hit[1]:
                    self._report(rule, "tokens", link, link.attr, token=hit[0], pos=_attr_pos(link))
                return

    def _keyword(self, node: ast.AST) -> bool:
        kw: ast.keyword = node  # type: ignore[assignment]
        if self.tokens is not None and kw.arg is not None and id(kw) not in self.silent:
            hit = self.tokens.name(kw.arg)
            if hit is not None:
                pos = (kw.lineno, kw.col_offset, kw.lineno, kw.col_offset + len(kw.arg.encode()))
                for rule in hit[1]:
                    self._report(rule, "tokens", kw, kw.arg, token=hit[0], pos=pos)
        return False

    def _constant(self, node: ast.AST) -> bool:
        value = node.value  # type: ignore[attr-defined]
        if self.tokens is not None and value.__class__ is str and id(node) not in self.silent:
            hit = self.tokens.string(value)
            if hit is not None:
                for rule in hit[1]:
                    self._report(rule, "tokens", node, "", token=hit[0])
        return True

    def _joined(self, node: ast.AST) -> bool:
        """An f-string: its literal text as one string (`f"cuda:{rank}"` -> `cuda:{}`); the code
        in its fields is walked as code."""
        parts = node.values  # type: ignore[attr-defined]
        for part in parts:
            if part.__class__ is ast.FormattedValue:
                self.stack.append(part.value)  # type: ignore[attr-defined]
                if part.format_spec is not None:  # type: ignore[attr-defined]
                    self.stack.append(part.format_spec)  # type: ignore[attr-defined]
        if self.tokens is None or id(node) in self.silent:
            return True
        text = "".join(p.value if p.__class__ is ast.Constant else "{}" for p in parts)  # type: ignore[attr-defined]
        hit = self.tokens.string(text)
        if hit is not None:
            for rule in hit[1]:
                self._report(rule, "tokens", node, "", token=hit[0])
        return True

    def _import_tokens(self, node: ast.AST) -> None:
        """Imported modules and names with a CUDA word (`import foo_cuda`, `from .triton_ops
        import f`, `from torch.utils.cpp_extension import CUDA_HOME`): once per import."""
        table: TokenTable = self.tokens  # type: ignore[assignment]
        where: list[tuple[ast.AST, str]] = [(a, a.name) for a in node.names]  # type: ignore[attr-defined]
        if node.__class__ is ast.ImportFrom and node.module:  # type: ignore[attr-defined]
            where.insert(0, (node, node.module))  # type: ignore[attr-defined]
        for at, name in where:  # a name is reported on its own line (`from m import (\n x_cuda,`)
            if table.name(name) is None:  # none of its parts, or an exception's words across them
                continue  # (`habana_frameworks.torch.hpex.experimental.transformer_engine`: Habana's)
            for part in name.split("."):
                hit = table.name(part)
                if hit is not None:
                    for rule in hit[1]:
                        self._report(rule, "tokens", at, name, token=hit[0])
                    if not self.locals:
                        if at is node:
                            self._own_wrapper_names(node)
                        elif at.asname:  # type: ignore[attr-defined]
                            self._own_module_alias(node, at)
                    break

    def _own_wrapper_names(self, node: ast.AST) -> None:
        """`from .triton_ops import fused_add` at module level: the project's own module that wraps
        CUDA or Triton kernels (a CUDA word in its name, and no root a rule knows: torch's and the
        CUDA libraries' names have rules of their own), so each use of `fused_add` is a CUDA
        reference too, reported like a name assigned one (`assigned`)."""
        module = node.module  # type: ignore[attr-defined]
        if not node.level and module.partition(".")[0] in self.cp.implicit_roots:  # type: ignore[attr-defined]
            return
        prefix = "." * node.level + module  # type: ignore[attr-defined]
        for alias in node.names:  # type: ignore[attr-defined]
            if alias.name != "*":
                name = alias.asname or alias.name
                self.assigned.setdefault(name, f"{prefix}.{alias.name}")
                self.aliased.add(name)

    def _own_module_alias(self, node: ast.AST, alias: ast.alias) -> None:
        """`import cutlass.cute as cute`, `from .ops import triton_kernels as tk` at module level:
        a module with a CUDA word that no rule knows, renamed, so its uses (`cute.make_copy_atom`)
        spell none; each is reported like a name assigned one (`assigned`)."""
        assert alias.asname is not None
        if node.__class__ is ast.Import:
            full = root = alias.name
        else:
            module = node.module or ""  # type: ignore[attr-defined]
            root = "" if node.level else module  # type: ignore[attr-defined]
            full = "." * node.level + (f"{module}." if module else "") + alias.name  # type: ignore[attr-defined]
        if root and root.partition(".")[0] in self.cp.implicit_roots:
            return
        self.assigned.setdefault(alias.asname, full)
        self.aliased.add(alias.asname)

    def _call_devices(self, call: ast.Call, fcls: type, leaf: str | None, qn: str | None) -> None:
        if qn is not None:
            pos = dev_m.POSITIONAL.get(qn)
            if pos is not None and pos < len(call.args):
                self._device_literals(call.args[pos], call, call.args[pos])
                self._assigned_devices(call.args[pos], call)
            elif qn == "torch.device":  # nnU-Net's `torch.device(type='cuda', index=self.local_rank)`
                for kw in call.keywords:
                    if kw.arg == "type":
                        self._device_literals(kw.value, call, kw)
        if fcls is ast.Attribute:
            if leaf == "to":
                for a in call.args:
                    self._device_literals(a, call, a)
                    self._assigned_devices(a, call)
            elif leaf == "add_argument":
                for kw in call.keywords:
                    if kw.arg in ("default", "choices"):
                        self._device_literals(kw.value, call, kw)
            elif leaf == "startswith" and call.args and dev_m.device_like(call.func.value):  # type: ignore[attr-defined]
                self._device_literals(call.args[0], call, call.args[0])
        for kw in call.keywords:
            if kw.arg is not None and dev_m.device_like_name(kw.arg):
                self._device_literals(kw.value, call, kw)
                self._assigned_devices(kw.value, call)  # yolox's `loc = "cuda:{}".format(rank)` ... `map_location=loc`
            elif kw.arg in _KINDS and kw.value.__class__ in (ast.List, ast.Tuple, ast.Set):
                self.listed_kinds.update(map(id, kw.value.elts))  # type: ignore[attr-defined]

    def _assigned_devices(self, arg: ast.AST, call: ast.Call) -> None:
        """A local name given as the device holds the literals the function assigned it (YOLOv5's
        `arg = "cuda:0"` ... `arg = "cpu"` ... `torch.device(arg)`): each is a device string."""
        if arg.__class__ is ast.Name and self.scopes:
            scope = self.scopes[-1]
            formats = self.formatted.get(id(scope), (None, {}))[1].get(arg.id, [])  # type: ignore[attr-defined]
            for value in (*(scope.get(arg.id) or ()), *formats):  # type: ignore[attr-defined]
                self._device_literals(value, call, arg)

    def _argparse_default(self, call: ast.Call) -> None:
        dest = None
        values: list[ast.AST] = []  # `default=` and `const=` (`nargs="?"`: the flag alone)
        for kw in call.keywords:
            if kw.arg == "dest" and kw.value.__class__ is ast.Constant:
                dest = kw.value.value  # type: ignore[attr-defined]
            elif kw.arg in ("default", "const") and args_m.literal_value(kw.value) is not args_m.UNKNOWN:
                values.append(kw.value)
        if not values:
            return
        if dest is None:
            flags = [a.value for a in call.args if a.__class__ is ast.Constant and isinstance(a.value, str)]  # type: ignore[attr-defined]
            longs = [f for f in flags if f.startswith("--")]
            name = longs[0][2:] if longs else (flags[0].lstrip("-") if flags else None)
            dest = name.replace("-", "_") if name else None
        if isinstance(dest, str):
            self.argparse[dest] = values
            if self.cp.named:
                for kw in call.keywords:
                    if kw.arg in ("default", "const"):
                        self._named(dest, kw, kw.value)

    def _call_env(self, call: ast.Call, fcls: type, leaf: str | None, qn: str | None) -> None:
        if qn is not None:
            pos = env_m.NAME_CALLS.get(qn)
            if pos is not None:
                if pos < len(call.args):
                    self._env_literal(call.args[pos])
            elif qn == "os.environ.update":
                for a in call.args:
                    if a.__class__ is ast.Dict:
                        self._env_dict(a)
                for kw in call.keywords:
                    self._env_keyword(kw)
        if fcls is ast.Attribute:
            if leaf in env_m.NAME_METHODS and call.args:
                self._env_literal(call.args[0])
        elif leaf == "dict" and call.args and self.resolve(call.args[0]) == env_m.ENVIRON:
            for kw in call.keywords:
                self._env_keyword(kw)
        for kw in call.keywords:
            if kw.arg == "env" and kw.value.__class__ is ast.Dict:
                self._env_dict(kw.value)

    def _compared_text(self, operand: ast.AST) -> None:
        """Text a program compares is code, however many words it has: `if "CUDA out of memory"
        in str(e):` and `str(e).startswith("CUDA out of memory. Tried to allocate")` handle a
        CUDA error."""
        if operand.__class__ is ast.Constant and operand.value.__class__ is str and id(operand) not in self.silent:  # type: ignore[attr-defined]
            hit = self.tokens.phrase(operand.value)  # type: ignore[union-attr, attr-defined]
            if hit is not None:
                for rule in hit[1]:
                    self._report(rule, "tokens", operand, "", token=hit[0])
                self.silent.add(id(operand))  # reported: not again as a string

    def _compare(self, node: ast.AST) -> bool:
        operands = [node.left, *node.comparators]  # type: ignore[attr-defined]
        if self.tokens is not None:
            for operand in operands:
                self._compared_text(operand)
        devices = self.devices_on
        for i, op in enumerate(node.ops):  # type: ignore[attr-defined]
            a, b = operands[i], operands[i + 1]
            ocls = op.__class__
            if ocls is ast.In or ocls is ast.NotIn:
                if devices:
                    # (also one of several devices: skorch's `"cuda" in (device_from, device_to)`)
                    if dev_m.device_like(b) or (b.__class__ in (ast.Tuple, ast.List, ast.Set)
                                                and any(dev_m.device_like(e) for e in b.elts)):  # type: ignore[attr-defined]
                        self._device_literals(a)
                    elif dev_m.device_like(a):
                        self._device_literals(b)
                if self.env_on and self._environ_like(b):
                    self._env_literal(a)
                continue
            if (ocls is ast.Is or ocls is ast.IsNot) and b.__class__ is ast.Constant and b.value is None:  # type: ignore[attr-defined]
                self.checked.update(map(id, ast.walk(a)))  # `if point_sample is None:` tests, not uses
            if devices and ocls in (ast.Eq, ast.NotEq, ast.Is, ast.IsNot):
                if dev_m.device_like(a):
                    self._device_literals(b)
                elif dev_m.device_like(b):
                    self._device_literals(a)
        return False

    def _lambda(self, node: ast.AST) -> bool:
        """A lambda's parameter default, as a function's (HQQ's `lambda model, device="cuda": ...`)."""
        if self.devices_on:
            a = node.args  # type: ignore[attr-defined]
            positional = [*a.posonlyargs, *a.args]
            for param, default in (*zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True),
                                   *zip(a.kwonlyargs, a.kw_defaults, strict=True)):
                if default is not None and dev_m.device_like_name(param.arg):
                    self._device_literals(default)
        return False

    def _ifexp(self, node: ast.AST) -> bool:
        if not self.devices_on:
            return False
        body, orelse = node.body, node.orelse  # type: ignore[attr-defined]
        is_dev = DeviceStringTable.other_branch_is_device
        if body.__class__ in (ast.Constant, ast.JoinedStr) and is_dev(orelse):
            self._device_literals(body)
        if orelse.__class__ in (ast.Constant, ast.JoinedStr) and is_dev(body):
            self._device_literals(orelse)
        return False

    def _dict(self, node: ast.AST) -> bool:
        if self.env_on:  # `{"CUDA_VISIBLE_DEVICES": ids}` handed to a worker's environment (horovod's Ray workers)
            for k in node.keys:  # type: ignore[attr-defined]
                if k is not None and k.__class__ is ast.Constant and k.value.__class__ is str and _ENV_KEY.fullmatch(k.value):
                    self._env_literal(k)
        table = self.cp.arguments
        if table.any_by_keyword:
            # `{"pin_memory": True}`: keyword arguments on their way to a call (`**opts`).
            keywords = _dict_keywords(node, table.any_by_keyword)
            if keywords:
                call = ast.Call(func=ast.Name("dict"), args=[], keywords=keywords)
                ast.copy_location(call, node)
                for rule, pat in table.candidates(None, None, keywords):
                    self._argument(call, rule, pat, None, None)
        if not self.devices_on:
            return False
        pairs = [(k, v) for k, v in zip(node.keys, node.values, strict=True)  # type: ignore[attr-defined]
                 if k is not None and k.__class__ is ast.Constant and k.value.__class__ is str]
        # A table keyed by device type has no other key: `{"torchvision": "0.25.0", "cuda": ("12.6",)}`
        # pairs a CUDA toolkit version with a package, it chooses no device.
        by_type = all(dev_m.device_value(k.value) or dev_m.device_like_name(k.value) for k, _ in pairs)  # type: ignore[attr-defined]
        for k, v in pairs:
            key: str = k.value  # type: ignore[attr-defined,assignment]
            if dev_m.device_like_name(key):
                self._device_literals(v)
            elif key.partition(":")[0] in dev_m.KNOWN_TYPES:
                if v.__class__ is ast.Constant and v.value.__class__ is str and is_prose(v.value):  # type: ignore[attr-defined]
                    self.silent.add(id(k))  # a help table's option name: `{"cuda": "Perform matrix arithmetic on GPU"}`
                    continue
                if not by_type:
                    continue
                # `{"xpu": "ccl", "cuda": "nccl"}.get(dev_type)`: a table keyed by device type.
                self._device_entry(k)
                if v.__class__ is ast.Constant and v.value.__class__ is str:
                    self._device_literals(v)
        return False

    def _container(self, node: ast.AST) -> bool:
        """`x in ("cuda", "cpu")`, `SUPPORTED = ["cuda", "mps"]`: a device type listed as data is
        reported whatever it is compared with (the fix adds a `"neuron"` entry, fixes.data). A
        list that holds other text too lists names or arguments (`["device", "cpu", "cuda"]`,
        options to filter; `["python", "x.py", "--device", "cuda"]`): no device type's entry."""
        if getattr(self.stmt, "value", None) is node and dev_m.held_together(self.stmt, node):
            return False  # values unpacked or returned together: one per name, no list of device types
        elts = node.elts  # type: ignore[attr-defined]
        if dev_m.rows(node):  # `[("cpu", "cuda"), ("cuda", "cpu")]`: each tuple a row of values (skorch's test parameters)
            if self.devices_on:
                for row in elts:
                    self.listed_kinds.update(map(id, row.elts))  # a row's device is one value, renamed: no entry
                    for e in row.elts:
                        if e.__class__ is ast.Constant and e.value.__class__ is str and dev_m.device_value(e.value):
                            self._device_literals(e)
            return False
        # Every entry a device type: `(fwd_wait, "cuda")` is an op's arguments, where an added
        # entry lands in the next parameter (torchtitan's `call_function(op, args=(x, "cuda"))`).
        if self.devices_on and all(e.__class__ is ast.Constant and e.value.__class__ is str and dev_m.device_value(e.value)
                                   for e in elts):
            for elt in elts:
                self._device_entry(elt)
        return False

    def _device_entry(self, node: ast.AST) -> None:
        if (node.__class__ is ast.Constant and node.value.__class__ is str and id(node) not in self.silent  # type: ignore[attr-defined]
                and id(node) not in self.listed_kinds):
            self._device_literals(node, data=True)

    def _subscript(self, node: ast.AST) -> bool:
        if not self.env_on:
            return False
        key = node.slice  # type: ignore[attr-defined]
        if key.__class__ is ast.Constant and isinstance(key.value, str) and self._environ_like(node.value):  # type: ignore[attr-defined]
            self._env_literal(key)
        return False

    def _environ_like(self, expr: ast.AST) -> bool:
        cls = expr.__class__
        if cls is ast.Name:
            return self.aliases.root(expr.id) == env_m.ENVIRON or env_m.env_like_name(expr.id)  # type: ignore[attr-defined]
        if cls is ast.Attribute:
            return env_m.env_like_name(expr.attr)  # type: ignore[attr-defined]
        return False

    def _bare_decorator(self, dec: ast.AST) -> None:
        """`@torch.compile` without parentheses: a call with no arguments, for `missing` patterns."""
        table = self.cp.arguments
        if not table or dec.__class__ not in (ast.Name, ast.Attribute):
            return
        qn = self.resolve(dec)
        leaf = dec.attr if dec.__class__ is ast.Attribute else dec.id  # type: ignore[attr-defined]
        for rule, pat in table.candidates(leaf if dec.__class__ is ast.Attribute else None, qn, []):
            if pat.missing:
                display = qn or leaf
                self._report(rule, "arguments", dec, f"@{display}", qualified=qn or "", decorator=True)

    # -- matches --

    def _device_literals(self, expr: ast.AST, call: ast.Call | None = None, arg: ast.AST | None = None,
                         data: bool = False) -> None:
        found: list[ast.AST] = []
        dev_m.literals(expr, found)
        for lit in found:
            hit = self.cp.devices.match(lit)
            if hit is None:
                continue
            token, rules = hit
            symbol = lit.value if lit.__class__ is ast.Constant else ""  # type: ignore[attr-defined]
            for rule in rules:
                self._report(rule, "device_strings", lit, symbol, call=call, arg=arg, literal=lit, token=token,
                             data=data)

    def _env_literal(self, node: ast.AST) -> None:
        if node.__class__ is ast.Constant and isinstance(node.value, str):  # type: ignore[attr-defined]
            for rule in self.cp.env.match(node.value):  # type: ignore[attr-defined]
                self._report(rule, "env_vars", node, node.value, literal=node, token=node.value)  # type: ignore[attr-defined]

    def _env_dict(self, node: ast.AST) -> None:
        for k in node.keys:  # type: ignore[attr-defined]
            if k is not None:
                self._env_literal(k)

    def _env_keyword(self, kw: ast.keyword) -> None:
        if kw.arg is None:
            return
        pos = (kw.lineno, kw.col_offset, kw.lineno, kw.col_offset + len(kw.arg.encode()))
        for rule in self.cp.env.match(kw.arg):
            self._report(rule, "env_vars", kw, kw.arg, token=kw.arg, pos=pos)

    def _argument(self, call: ast.Call, rule: Rule, pat: ArgumentPattern, leaf: str | None, qn: str | None,
                  shown: str | None = None) -> None:
        """`shown`: the callee as the message names it, when not `qn` (a subclass of it)."""
        if pat.inside is not None:
            entries = self._entries(call, pat.inside)
            if entries is None:
                return
            call = ast.copy_location(ast.Call(func=call.func, args=[], keywords=entries), call)
        if pat.unless and args_m.harmless(call, pat):
            return
        arg = args_m.find_argument(call, pat)
        display = shown or qn or (f".{leaf}" if call.func.__class__ is ast.Attribute else leaf) or "call"
        if pat.missing:
            if arg is None and (not args_m.may_be_present(call, pat) or args_m.either_way(rule, pat)):
                # A method on any receiver (`x.cuda()`) is located at its name, not at the start of
                # a receiver that may span many lines (`nn.Sequential(\n...\n).cuda()`).
                pos = None
                if qn is None and call.func.__class__ is ast.Attribute:
                    a = _attr_pos(call.func)  # type: ignore[arg-type]
                    pos = (a[0], a[1], call.end_lineno or call.lineno, call.end_col_offset or 0)
                self._report(rule, "arguments", call, f"{display}()", call=call, qualified=qn or "", pos=pos)
            return
        if arg is None:
            return
        value_node = arg.value if arg.__class__ is ast.keyword else arg  # type: ignore[attr-defined]
        if pat.suffixes:
            # (one finding per call: an argument the rule's other patterns read decides it, and
            # `load(..., with_cuda=False)` builds no CUDA code)
            if args_m.holds_suffix(value_node, pat.suffixes) and not any(
                    p is not pat and not p.suffixes and args_m.find_argument(call, p) is not None
                    for p in rule.match.arguments):
                self._report(rule, "arguments", call, f"{display}()", call=call, qualified=qn or "")
            return
        if pat.in_dict:
            if value_node.__class__ in (ast.Name, ast.Attribute):  # `dm = {"": 0}` ... `device_map=dm`
                scopes = tuple(reversed(self.scopes))
                self.pending.append((call, rule, pat, arg, value_node, scopes, display, self.stmt, self.stmt_line))
            else:
                self._dict_argument(call, rule, pat, arg, value_node, display)
            return
        if value_node.__class__ is ast.IfExp and (pat.values or pat.not_values):
            # `device_map="auto" if quantize else None`: either branch may be the value.
            named = None
            for branch in (value_node.body, value_node.orelse):  # type: ignore[attr-defined]
                v = args_m.literal_value(branch)
                if v is args_m.UNKNOWN and pat.switch:
                    self._report_argument(call, rule, arg, value_node, v, display, None)
                    return
                if v is args_m.UNKNOWN and branch.__class__ in (ast.Name, ast.Attribute) and named is None:
                    named = branch
                if v is not args_m.UNKNOWN and args_m.value_matches(pat, v):
                    self._report_argument(call, rule, arg, value_node, v, display, branch)
                    return
            if named is not None:
                # COMET's `accelerator=accelerator if gpus > 0 else "cpu"`, the parameter's default
                # `"auto"`: what the name holds, as for a name given alone
                scopes = tuple(reversed(self.scopes))
                self.pending.append((call, rule, pat, arg, named, scopes, display, self.stmt, self.stmt_line))
            return
        value = args_m.literal_value(value_node)
        if value is args_m.UNKNOWN and (pat.values or pat.not_values):
            if value_node.__class__ in (ast.Name, ast.Attribute):
                scopes = tuple(reversed(self.scopes))
                self.pending.append((call, rule, pat, arg, value_node, scopes, display, self.stmt, self.stmt_line))
            elif pat.switch:  # `load_in_8bit=args.bits == 8`: may be on
                self._report_argument(call, rule, arg, value_node, value, display, None)
            return
        if args_m.value_matches(pat, value):
            self._report_argument(call, rule, arg, value_node, value, display,
                                  value_node if value is not args_m.UNKNOWN else None)

    def _entries(self, call: ast.Call, keyword: str) -> list[ast.keyword] | None:
        """The entries of the dict given as `keyword` (a literal, `dict(k=v)`, or a name this
        scope assigned one), as keywords; None when it is not given or not such a dict."""
        value = next((kw.value for kw in call.keywords if kw.arg == keyword), None)
        if value.__class__ is ast.Name:
            return self.spreads[-1].get(value.id)  # type: ignore[union-attr]
        if value.__class__ is ast.Dict:
            return _dict_keywords(value)
        return _closed_keywords(value) if value is not None else None

    def _dict_argument(self, call: ast.Call, rule: Rule, pat: ArgumentPattern, arg: ast.AST, value_node: ast.AST,
                       display: str) -> None:
        """`device_map={"": 0}` (also in either branch of a conditional): a dict value in `values`."""
        for branch in args_m.branches(value_node):
            for node in args_m.dict_value_nodes(branch):
                v = args_m.literal_value(node)
                if v is not args_m.UNKNOWN and args_m.value_matches(pat, v):
                    self._report_argument(call, rule, arg, value_node, v, display, None)
                    return

    def _report_argument(self, call: ast.Call, rule: Rule, arg: ast.AST, value_node: ast.AST, value: object,
                         display: str, literal: ast.AST | None) -> None:
        if literal is not None and id(literal) in self.seeded:
            literal = None  # a literal of another cell's
        # The symbol ("" here) is the argument's text, filled in when the finding is built.
        self._report(rule, "arguments", value_node, "", call=call, arg=arg, literal=literal,
                     token=value if isinstance(value, str) else "", qualified=display)

    def _variable(self, node: ast.AST, scopes: tuple[dict[str, tuple[ast.AST, ...] | None], ...]) -> list[ast.AST]:
        """The literals a name, `args.<dest>` (an option's default and const) or `cfg.<field>` /
        `self.<attr>` (a class field, an attribute set to a literal) may stand for, when known."""
        if node.__class__ is ast.Name:
            for scope in scopes:
                if node.id in scope:  # type: ignore[attr-defined]
                    return list(scope[node.id] or ())  # type: ignore[attr-defined]
            return list(self.consts.get(node.id) or ())  # type: ignore[attr-defined]
        if node.value.__class__ is ast.Name:  # type: ignore[attr-defined]
            options = self.argparse.get(node.attr)  # type: ignore[attr-defined]
            if options is not None:
                return options
            self.field_reads.add(node.attr)  # type: ignore[attr-defined]
            return list(self.fields.get(node.attr) or ())  # type: ignore[attr-defined]
        return []

    def finish(self) -> None:
        for call, rule, pat, arg, value_node, scopes, display, stmt, stmt_line in self.pending:
            self.stmt, self.stmt_line = stmt, stmt_line  # the finding's statement is the call's
            literals = self._variable(value_node, scopes)
            for literal in literals:
                if args_m.holds_value(pat, literal):  # a literal, or for `in_dict` a dict of them
                    value = args_m.literal_value(literal)
                    self._report_argument(call, rule, arg, value_node, value, display, literal)
                    break
            else:
                # `load_in_8bit=args.load_in_8bit`: an option off by default is on when asked; a
                # name that only ever holds an "off" literal (`def f(pin_memory=False)`) is off.
                if pat.switch and not (literals and value_node.__class__ is ast.Name):
                    self._report_argument(call, rule, arg, value_node, args_m.UNKNOWN, display, None)
        for name, method, call, stmt, stmt_line in self.local_calls:
            # `to_device_model(model, "cuda")` where the file defines `to_device_model(model, device)`:
            # the string is the device parameter's, renamed with the comparisons that read it there.
            defs = [params[1:] if method else params for params in self.local_defs.get(name, ())]
            if not defs:
                continue
            self.stmt, self.stmt_line = stmt, stmt_line
            for i, a in enumerate(call.args):
                if a.__class__ is ast.Constant and all(i < len(ps) and dev_m.device_like_name(ps[i]) for ps in defs):
                    self._device_literals(a, call=call, arg=a)
        if self.named:
            # A value this file passes to a matched call is reported there; the others go elsewhere.
            passed = {id(site.literal) for _, site in self.sites if site.literal is not None}
            left = [c for c in self.named if id(c[3]) not in passed]
            choices = _membership_names(self.tree) if left else set()
            for name, rule, node, literal, stmt, stmt_line in left:
                if name not in choices:
                    self.stmt, self.stmt_line = stmt, stmt_line
                    self._report(rule, "assigned", node, "", literal=literal)

    def _report(self, rule: Rule, kind: str, node: ast.AST, symbol: str, **extra: object) -> Site:
        site = Site(kind, node, symbol, self.stmt, self.stmt_line, **extra)  # type: ignore[arg-type]
        self.sites.append((rule, site))
        return site


def _membership_names(tree: ast.AST) -> set[str]:
    """The names (or attributes' last names) that values are tested against with `in`."""
    out = set()
    for node in walk(tree):
        if node.__class__ is ast.Compare:
            for op, right in zip(node.ops, node.comparators, strict=True):  # type: ignore[attr-defined]
                if op.__class__ in (ast.In, ast.NotIn):
                    if right.__class__ is ast.Name:
                        out.add(right.id)  # type: ignore[attr-defined]
                    elif right.__class__ is ast.Attribute:
                        out.add(right.attr)  # type: ignore[attr-defined]
    return out


# Node class -> (kind, expression fields, handler, block fields in reverse order of visit).
_EXPR, _NAME, _STMT, _CASE = 0, 1, 2, 3  # _EXPR must stay falsy (tested with `not kind`)
_Entry = tuple[int, tuple[str, ...], "Callable[..., object] | None", tuple[str, ...]]
_EXPR_HANDLERS: dict[type, Callable[[_Walker, ast.AST], bool]] = {
    ast.keyword: _Walker._keyword,
    ast.JoinedStr: _Walker._joined,
    ast.Attribute: _Walker._attribute,
    ast.Call: _Walker._call,
    ast.Compare: _Walker._compare,
    ast.IfExp: _Walker._ifexp,
    ast.Dict: _Walker._dict,
    ast.Tuple: _Walker._container,
    ast.List: _Walker._container,
    ast.Set: _Walker._container,
    ast.Subscript: _Walker._subscript,
    ast.Lambda: _Walker._lambda,
}
_STMT_HANDLERS: dict[type, Callable[[_Walker, ast.AST], None]] = {
    ast.Import: _Walker._import,
    ast.ImportFrom: _Walker._import,
    ast.Assign: _Walker._assign,
    ast.AnnAssign: _Walker._assign,
    ast.AugAssign: _Walker._aug_assign,
    ast.FunctionDef: _Walker._function,
    ast.AsyncFunctionDef: _Walker._function,
    ast.ClassDef: _Walker._function,  # decorators only
    ast.Return: _Walker._return,
    ast.Match: _Walker._match,
    ast.For: _Walker._for,
    ast.AsyncFor: _Walker._for,
    ast.With: _Walker._with,
    ast.AsyncWith: _Walker._with,
    ast.Expr: _Walker._expr_stmt,
    ast.Raise: _Walker._raise,
    ast.Assert: _Walker._assert,
}
_DISPATCH: dict[type, _Entry] = {
    type(None): (_EXPR, (), None, ()),
    ast.Constant: (_EXPR, (), _Walker._constant, ()),
    ast.MatchSingleton: (_EXPR, (), None, ()),
    ast.Name: (_NAME, (), None, ()),
}


def _dispatch_entry(cls: type) -> _Entry:
    fields = [f for f in cls._fields if f not in LEAVES]  # type: ignore[attr-defined]
    if issubclass(cls, ast.stmt) or cls in (ast.ExceptHandler, ast.match_case):
        blocks = tuple(f for f in reversed(fields) if f in _BLOCKS)
        kind = _CASE if cls is ast.match_case else _STMT
        entry: _Entry = (kind, tuple(f for f in fields if f not in _BLOCKS), _STMT_HANDLERS.get(cls), blocks)
    else:
        entry = (_EXPR, tuple(fields), _EXPR_HANDLERS.get(cls), ())
    _DISPATCH[cls] = entry
    return entry


# A method (an indented `def`) and a class defined in the file, by name.
_METHOD_DEF = re.compile(r"^[ \t]+(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", re.MULTILINE)
_CLASS_DEF = re.compile(r"^[ \t]*class[ \t]+(\w+)", re.MULTILINE)
_SELF_STORE = re.compile(r"\bself\.(\w+)[ \t]*(?::[^=\n]*)?=(?!=)")


def _dict_keywords(node: ast.AST, only: Collection[str] | None = None) -> list[ast.keyword]:
    """A dict literal's identifier-keyed entries (those in `only`, if given) as keywords, each
    located from key to value."""
    out = []
    for k, v in zip(node.keys, node.values, strict=True):  # type: ignore[attr-defined]
        if k is None or k.__class__ is not ast.Constant or k.value.__class__ is not str:  # type: ignore[attr-defined]
            continue
        if (k.value in only) if only is not None else k.value.isidentifier():  # type: ignore[attr-defined]
            kw = ast.keyword(arg=k.value, value=v)  # type: ignore[attr-defined]
            kw.lineno, kw.col_offset = k.lineno, k.col_offset  # type: ignore[attr-defined]
            kw.end_lineno, kw.end_col_offset = v.end_lineno, v.end_col_offset
            out.append(kw)
    return out


def _closed_keywords(value: ast.AST) -> list[ast.keyword] | None:
    """The entries of a dict whose keys are all written out (`dict(a=1)`, `{"a": 1}`) as
    keywords, or None (a computed key, a `**` inside, anything else)."""
    if value.__class__ is ast.Dict:
        keys = value.keys  # type: ignore[attr-defined]
        if all(k is not None and k.__class__ is ast.Constant and k.value.__class__ is str and k.value.isidentifier()
               for k in keys):
            return _dict_keywords(value)
    elif (value.__class__ is ast.Call and value.func.__class__ is ast.Name and value.func.id == "dict"  # type: ignore[attr-defined]
          and not value.args and all(k.arg is not None for k in value.keywords)):  # type: ignore[attr-defined]
        return list(value.keywords)  # type: ignore[attr-defined]
    return None


def _called_name(call: ast.AST) -> str | None:
    """The name a call is made by (`f` of `f(x)` and of `obj.f(x)`)."""
    func = call.func  # type: ignore[attr-defined]
    return func.id if func.__class__ is ast.Name else func.attr if func.__class__ is ast.Attribute else None


def _cuda_name(cp: CompiledPack, qualified: str) -> bool:
    """Whether a qualified name is CUDA's: a rule's library, or a CUDA word in it."""
    return bool(cp.imports.match(qualified)) or cp.tokens.name(qualified) is not None


def _message_target(target: ast.AST) -> bool:
    """Whether an assignment's target is a message being built (`msg`, `self.error_message`)."""
    name = target.id if target.__class__ is ast.Name else target.attr if target.__class__ is ast.Attribute else None  # type: ignore[attr-defined]
    return name is not None and _MESSAGE_NAME.fullmatch(name) is not None


# Lines where a name is no value: imported, a context manager, a decorator, a definition. Elsewhere
# a CUDA word only in the name of a value (`used_cuda_margin += n`) is a finding's `variable`
# detail: what the value is does not depend on CUDA, so it holds no guard (`fixes.guards.blocked`).
_NOT_A_VALUE = ("import ", "from ", "@", "with ", "async with ", "def ", "async def ", "class ")


def _variable_name(node: ast.AST, span: Span, line: str) -> bool:
    """Whether the CUDA word is a variable's or an attribute's name, read or assigned, not called,
    indexed or used as an object (`cuda_kernel(x)`, `cuda_ext.run`, `with cuda_ctx:`)."""
    if node.__class__ not in (ast.Name, ast.Attribute) or span.line != span.end_line:
        return False
    rest = line[span.end_col:].lstrip()
    return not rest.startswith(("(", ".", "[")) and not line.lstrip().startswith(_NOT_A_VALUE)


def _of_module(node: ast.AST, aliases: AliasTable) -> bool:
    """An attribute of an imported module (`torch.cuda` returned or passed on: xtuner's
    `get_torch_device_module`), which is a module or its member, not a value's name."""
    while node.__class__ is ast.Attribute:
        node = node.value  # type: ignore[attr-defined]
    return node.__class__ is ast.Name and node.id in aliases.names  # type: ignore[attr-defined]


def _attr_pos(node: ast.Attribute) -> tuple[int, int, int, int]:
    """Byte position of the attribute name in `x.name` (the name always ends the node)."""
    end_line = node.end_lineno or node.lineno
    end = node.end_col_offset or 0
    return (end_line, end - len(node.attr.encode("utf-8")), end_line, end)


# --- findings -----------------------------------------------------------------------------------

_NOT_CUDA_FAMILY = "NM8"
# An environment variable's name as a dict key (`"NCCL_SOCKET_IFNAME"`): upper case, a word break inside.
_ENV_KEY = re.compile(r"[A-Z][A-Z0-9]*_[A-Z0-9_]+")
_FIXABLE = (FixClass.SAFE, FixClass.UNSAFE)  # the fix classes whose findings get fixes computed
# Parses of a partial tree with more regions (those its walk depended on), before the whole parse.
_WIDENINGS = 3
_NOT_CUDA_CATEGORIES = frozenset({"compile"})


def analyze_source(source: str, path: str, pack: RulePack, *, cell: int | None = None,
                   prelude: str = "") -> list[Finding]:
    """Every finding of every rule in `pack` (selection happens later), sorted by position.
    `prelude`: import statements and literal assignments run before `source` (a notebook's
    earlier cells, `scan.notebook.with_cells_above`), which bind names it uses.

    A file (not a notebook cell) may be parsed without the functions that cannot hold a finding
    (`scan.parse`); the findings are those of the whole file either way. Raises SyntaxError or
    ValueError when `source` does not parse.
    """
    cp = compile_pack(pack)
    seed = parse_m.parse_whole(prelude, path).body if prelude else []
    parsed = parse_m.parse(source, path, cp.regions if cell is None else None)
    tree, sparse = parsed.tree, parsed.sparse
    for _ in range(_WIDENINGS + 1):
        walker = _walk(cp, tree, source, seed)
        if sparse is not None:
            # Each use of an assigned CUDA alias or of a function defaulting to a CUDA device is a
            # finding. Where a module root is read only matters to fixes: a file with no site of a
            # fixable rule computes none.
            fix_roots = cp.fix_roots if any(rule.fix.fix_class in _FIXABLE for rule, _ in walker.sites) else ()
            hidden = parse_m.depends(sparse, walker.aliases, cp.regions, fix_roots,
                                     read=(*walker.assigned, *walker.defaulted, *walker.subclassed, *walker.returned),
                                     set_=walker.field_reads,
                                     written=[*(c[0] for c in walker.named), *walker.members,
                                              *(c[0] for c in walker.local_calls)])
            if hidden is None or hidden:
                parsed = parse_m.widen(sparse, hidden, source, path)
                tree, sparse = parsed.tree, parsed.sparse
                continue
        if not walker.sites:
            return []
        found, looked_up = _findings(walker, tree, source, path, cell)
        if sparse is not None and looked_up:
            # A condition's value was followed to functions, callers or readers by name, or the
            # file was searched for reads of device indices, and some of those names are written
            # in functions left out: read them too.
            hidden = sparse.hiding(looked_up)
            if hidden:
                parsed = parse_m.widen(sparse, hidden, source, path)
                tree, sparse = parsed.tree, parsed.sparse
                continue
        return found
    tree = parse_m.parse_whole(source, path)  # still widening: the whole file decides
    walker = _walk(cp, tree, source, seed)
    return _findings(walker, tree, source, path, cell)[0] if walker.sites else []


def _walk(cp: CompiledPack, tree: ast.Module, source: str, seed: Sequence[ast.stmt] = ()) -> _Walker:
    walker = _Walker(cp, tree, source, seed)
    walker.walk(tree)
    walker.finish()
    return walker


def _at_call(site: Site) -> bool | None:
    """Whether an argument rule's literal is written at its call (`backend="nccl" if nccl else
    "gloo"`) or reached it from elsewhere (`BACKEND = "nccl"`); None when it has no literal."""
    literal, call = site.literal, site.call
    if literal is None or call is None:
        return None
    return call.lineno <= literal.lineno <= (call.end_lineno or call.lineno)  # type: ignore[attr-defined]


def _unsafe(fixes: tuple[Fix, ...], why: str) -> tuple[Fix, ...]:
    return tuple(replace(f, applicability=FixClass.UNSAFE, title=f"{f.title} (unsafe: {why})") for f in fixes)


def _findings(walker: _Walker, tree: ast.Module, source: str, path: str,
              cell: int | None) -> tuple[list[Finding], set[str]]:
    """The findings of the walk's sites, and the names their fixes looked for file-wide (the
    value flow's functions, callers and readers; the reads of a device index)."""
    from neuron_migrate.scan.fixes.compute import (  # only files with a match pay for it
        FixContext,
        fixes_for,
        neuron_branch,
        old_torch_branch,
    )
    from neuron_migrate.scan.fixes.data import already_listed

    lines = LineIndex(source)
    ctx = FixContext(lines, walker.aliases, source, tree)
    spans: dict[tuple[str, Span], tuple[Rule, Site]] = {}
    for rule, site in walker.sites:
        span = lines.span_at(site.pos) if site.pos is not None else lines.span(site.node)
        spans.setdefault((rule.code, span), (rule, site))
    # A literal that a specific argument rule matched is that rule's, not the generic device string's.
    argument_spans = {span for (code, span), (_, site) in spans.items() if site.kind == "arguments"}
    # ... also the branch inside the call it read the value from (`backend="nccl" if nccl else "gloo"`);
    # a literal elsewhere (`BACKEND = "nccl"`) stays a finding of its own line.
    argument_spans |= {lines.span(site.literal) for _, site in spans.values()
                       if site.kind == "arguments" and _at_call(site) is True}
    # A literal that reaches, from elsewhere, a call that checks its device itself (`device = "cuda"`
    # ... `WhisperModel(..., device=device)`) keeps its finding but no rename: `neuron` would raise there.
    stays = {lines.span(site.literal): site for rule, site in spans.values()
             if site.kind == "arguments" and rule.fix.value_stays and site.literal is not None and site.call is not None}
    # ... and one that reaches, from elsewhere, an argument whose own fix is unsafe (WhisperSpeech's
    # `def train(..., device="cuda")` ... `torch.autocast(device_type=device)`): renamed, it would make
    # that change without its caution, so its rename is unsafe too.
    cautious = {lines.span(site.literal): site for rule, site in spans.values()
                if site.kind == "arguments" and rule.fix.fix_class is FixClass.UNSAFE and _at_call(site) is False}
    # ... and one the scan does not see reach it (a method's parameter, an attribute) may: in a file
    # that gives such a call its device (or hands KeOps its tensors), a device string or `.cuda()`
    # is renamed only as an unsafe fix. (Not in
    # a file that uses a CUDA-only library: that program runs on no Trainium host before its port
    # either, so a rename breaks nothing that worked.)
    checked = min(((site.stmt_line, site.qualified or site.symbol) for rule, site in spans.values()
                   if rule.fix.value_stays and site.kind != "tokens"), default=None)
    for rule, site in spans.values():
        for target, tf in rule.fix.targets.items():
            if tf.kind is FixKind.REMOVE_STATEMENT:
                ctx.removed.setdefault(target.value, set()).add(id(site.stmt))
    # A CUDA word (`match.tokens`) is the net under the specific rules: reported once per line,
    # and only on a line no CUDA rule reported (the NM8xx dtype hazards are not about CUDA).
    # A rule whose findings need the `foreign` project fact may lose its finding after the scan:
    # the net's stays beside it then, and goes where the fact holds (`scan.project.net_rows`).
    seen_lines = {span.line for (code, span), (rule, site) in spans.items()
                  if site.kind != "tokens" and not code.startswith(_NOT_CUDA_FAMILY) and rule.project != "foreign"}
    # A method an argument rule names and reported (`.cuda(\n    rank, ...)`, located at `rank`) is
    # that finding's, not a CUDA word of its own line; a callee the rule does not name (any call
    # given `load_in_4bit=`) keeps its own.
    called = {id(site.call.func) for (code, _), (rule, site) in spans.items()
              if site.kind == "arguments" and site.call is not None and site.call.func.__class__ is ast.Attribute
              and not code.startswith(_NOT_CUDA_FAMILY) and rule.project != "foreign"
              and any("." + site.call.func.attr in pat.call for pat in rule.match.arguments)}  # type: ignore[attr-defined]
    findings: list[Finding] = []
    # A CUDA string (or a module's CUDA attribute) the net leaves out for its line's finding still
    # holds a guard around it, its test kept CUDA's (`pytest.param("cuda", marks=skipif(not
    # torch.cuda.is_available()))`): such findings take part in the guard rule only, and are
    # dropped after it.
    unreported: set[tuple[str, Span]] = set()
    specific: dict[int, list[Span]] = {}  # the spans of the other rules' findings, by line
    for (_, span), (_, site) in spans.items():
        if site.kind != "tokens":
            specific.setdefault(span.line, []).append(span)
    for (code, span), (rule, site) in spans.items():
        if site.kind == "device_strings" and (span in argument_spans or already_listed(site, lines)):
            continue
        if site.kind == "qualified_names" and already_listed(site, lines):  # a CUDA table entry's value, ported
            continue
        held_only = False
        if site.kind == "tokens":
            if id(site.node) in called:
                continue
            if span.line in seen_lines:
                # (a string, or a module's attribute: `device.type != "cuda" or torch.version.cuda is None`)
                if (site.node.__class__ is not ast.Constant and not _of_module(site.node, walker.aliases)) or any(
                        other.contains(span) for other in specific.get(span.line, ())):
                    continue
                held_only = True
            seen_lines.add(span.line)
        symbol = site.symbol or _symbol(site, lines)
        fix_class = rule.fix.fix_class
        if site.kind == "assigned":  # the fix belongs where the value is passed, which is elsewhere
            fix_class = FixClass.MANUAL
        elif id(site.node) in walker.by_name:  # a rename would drop `getattr`'s default
            fix_class = FixClass.MANUAL
        elif site.data and build_script(path):
            fix_class = FixClass.MANUAL  # a build script's `suffices = ["cpu", "cuda"]` lists build variants, not devices
        message = rule.render_message(symbol)
        if site.kind == "device_strings" and span in stays:
            fix_class = FixClass.MANUAL
            call = stays[span].call
            message = (f"{message}; it reaches `{lines.node_text(call.func)}` at line {call.lineno}, which checks its "  # type: ignore[union-attr]
                       "device itself and has no `neuron` one, so it is not renamed")
        elif site.kind == "device_strings" and _simulator_device(site):
            fix_class = FixClass.MANUAL
            message = (f"{message}; it is a physics simulator's device (Isaac Sim, Isaac Gym), which knows only `cuda` "
                       "and `cpu`, so it is not renamed")
        own = neuron_branch(site, ctx) if fix_class in _FIXABLE else None
        if own is not None:
            fix_class = FixClass.MANUAL
            message = (f"{message}; left as is because this function picks Neuron itself (line {own}): "
                       "renamed, its CUDA branch would be lost to CUDA hosts")
        before = old_torch_branch(site, ctx) if fix_class in _FIXABLE else None
        if before is not None:
            fix_class = FixClass.MANUAL
            message = (f"{message}; left as is because it runs only where torch has no `torch.accelerator` (the test "
                       f"at line {before}), a torch older than TorchNeuron's, which has no `torch.neuron` either")
        fixes = fixes_for(rule, site, span, ctx) if fix_class in _FIXABLE else ()
        if site.kind == "device_strings" and span in cautious and fixes:
            call = cautious[span].call
            fixes = _unsafe(fixes, f"it reaches `{lines.node_text(call.func)}` at line {call.lineno}, "  # type: ignore[union-attr]
                                   "whose own fix is unsafe")
        if checked is not None and rule.category == "device" and fixes:
            fixes = _unsafe(fixes, f"this file hands data to `{checked[1]}` at line {checked[0]}, which has no `neuron` device")
        if fixes and fix_class is FixClass.SAFE and all(f.applicability is FixClass.UNSAFE for f in fixes):
            fix_class = FixClass.UNSAFE  # this site's fix relies on what it cannot see (fixes.bindings)
        elif not fixes and fix_class in (FixClass.SAFE, FixClass.UNSAFE):
            fix_class = FixClass.MANUAL  # no edit for this site (fairscale's `class GradScaler(TorchGradScaler)`)
            if site.data:
                from neuron_migrate.scan.fixes.data import NO_ENTRY

                message = f"{message}; {NO_ENTRY}"  # a table key whose `neuron` value has no automatic answer
        source_line = lines.line(span.line)
        findings.append(
            Finding(
                code=code,
                severity=rule.severity,
                fix_class=fix_class,
                category=rule.category,
                path=path,
                span=span,
                message=message,
                source_line=source_line,
                symbol=symbol,
                fixes=fixes,
                cell=cell,
                statement_line=site.stmt_line,
                details=({"variable": True} if site.kind == "tokens" and _variable_name(site.node, span, source_line)
                         and not _of_module(site.node, walker.aliases)
                         else {"unreported": True} if held_only else {}),
            )
        )
        if held_only:
            unreported.add((code, span))
    decided: set[str] = set()  # flags a fixed finding decides: a guard testing one may be in a function left out
    if any(f.fixes for f in findings):
        from neuron_migrate.scan.fixes.guards import settle

        findings = settle(findings, tree, lines, Target, frozenset(r.code for r in walker.cp.tokens.rules),
                          frozenset(f.code for f in findings if f.code.startswith(_NOT_CUDA_FAMILY)), decided)
    if unreported:
        findings = [f for f in findings if (f.code, f.span) not in unreported]
    findings.sort(key=lambda f: (f.span.line, f.span.col, f.code))
    return findings, ctx.looked_up | decided


# Where a physics simulator takes its device (Isaac Lab's `env_cfg.sim.device`, Isaac Gym's
# `sim_device=`): PhysX runs on CUDA or the CPU and rejects (or ignores) any other device.
_SIMULATOR_DEVICE = re.compile(r"(?:^|[._])(?:sim|simulation|physics|physx)[._]?device$", re.IGNORECASE)


def _simulator_device(site: Site) -> bool:
    """Whether the device string is given as a simulator's device, by keyword or assignment."""
    if site.arg.__class__ is ast.keyword:
        name = site.arg.arg or ""  # type: ignore[union-attr]
    elif site.stmt.__class__ in (ast.Assign, ast.AnnAssign):
        targets = getattr(site.stmt, "targets", None) or [site.stmt.target]  # type: ignore[attr-defined]
        name = " ".join(dotted(t) or "" for t in targets)
    else:
        return False
    return any(_SIMULATOR_DEVICE.search(n.lstrip("_")) for n in name.split())


def _symbol(site: Site, lines: LineIndex) -> str:
    """What the message shows: the matched text; for an argument `kw=value` or `callee(value)`,
    with the literal a variable stands for (`backend=backend (= "nccl")`)."""
    if site.kind != "arguments" or site.arg is None:
        return _short(lines.node_text(site.node))
    value = site.arg.value if site.arg.__class__ is ast.keyword else site.arg  # type: ignore[attr-defined]
    text = _short(lines.node_text(value))
    if site.literal is not None and site.literal is not value:
        text = f"{text} (= {_short(lines.node_text(site.literal))})"
    if site.arg.__class__ is ast.keyword:
        return f"{site.arg.arg}={text}"  # type: ignore[attr-defined]
    return f"{site.qualified}({text})"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def analyze_file_path(path: str, pack: RulePack) -> list[Finding]:
    """Findings for a file that is itself the match (`match.files`, e.g. `*.cu`): one per rule,
    at line 1. The file is not read."""
    cp = compile_pack(pack)
    out: list[Finding] = []
    for _pattern, rule in cp.files.match(path):
        symbol = path.replace("\\", "/").rsplit("/", 1)[-1]
        out.append(rule.finding(path, Span(1, 0, 1, 0), symbol, statement_line=1))
    return out

