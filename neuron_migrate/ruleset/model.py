"""The rule-pack schema as frozen dataclasses.

A rule file (`rules/nm<family>-<topic>.yaml`) holds `rules: [ ... ]`; each entry has these keys:

    code: NM201              # NM + 3 digits; the hundred is the family (see FAMILIES)
    name: cuda-synchronize   # kebab-case slug, unique
    title: one line
    category: cuda-api       # must be FAMILIES[hundred].category
    severity: error | warning | info
    status: stable | preview | deprecated | removed     (default stable)
    default: true | false    # in the default selection (default true); false: only by --select
    project: cuda-build      # kept only when the scanned project has this (see PROJECT_FACTS)
    since: "0.1.0"
    match: { ... }           # see Match; at least one matcher (NM0xx/NM9xx rules may have none)
    fix: {class: safe|unsafe|manual|none, neuron: TargetFix, accelerator: TargetFix,
          safety: why an unsafe fix may change behaviour}
    message: "`{symbol}` ..."   # `{symbol}` is replaced by what matched
    why: rationale (Markdown)
    references: [url, ...]
    examples:
      invalid: [{code: ..., neuron: expected code after rewrite, accelerator: ..., count: 1}]
      valid: [code that must not be flagged, ...]

TargetFix is exactly one of:
    {rename: torch.neuron.synchronize}   # replace the matched dotted name
    {device_string: neuron}              # rewrite the device type inside the matched string,
                                         #   keeping quotes, prefixes and the `:index` part
    {replace: "text"}                    # replace the matched node's source text
    {remove_argument: true}              # drop the matched keyword/positional argument
    {remove_statement: true}             # drop the statement holding the match
    {fixer: snake_case_name}             # a named fixer in neuron_migrate/scan/fixes/registry.py
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from neuron_migrate.findings import Finding, FixClass, Severity, Span, Target


class Status(StrEnum):
    STABLE = "stable"
    PREVIEW = "preview"
    DEPRECATED = "deprecated"
    REMOVED = "removed"


@dataclass(frozen=True, slots=True)
class Family:
    prefix: str  # "NM1"
    category: str
    title: str


FAMILIES: dict[str, Family] = {
    f.prefix: f
    for f in (
        Family("NM0", "tool", "The tool's own diagnostics (unreadable or unparsable input)"),
        Family("NM1", "device", "Device placement (device strings, .cuda(), is_cuda)"),
        Family("NM2", "cuda-api", "The torch.cuda API"),
        Family("NM3", "amp", "Automatic mixed precision"),
        Family("NM4", "distributed", "Distributed training (NCCL, device meshes, DDP)"),
        Family("NM5", "compile", "torch.compile settings"),
        Family("NM6", "backend-flags", "cuDNN / TF32 / CUDA backend flags"),
        Family("NM7", "kernels-libraries", "Custom kernels and CUDA-only libraries"),
        Family("NM8", "dtype-layout", "dtype and memory-layout hazards on Neuron"),
        Family("NM9", "runtime", "Runtime findings of `check` (fallbacks, recompiles, placement)"),
    )
}


@dataclass(frozen=True, slots=True)
class ArgumentPattern:
    """Matches one argument of a call.

    `call` lists callee patterns: fnmatch globs over the resolved qualified name
    (`torch.distributed.init_process_group`), `"*"` for any call, or `".name"` for a method or
    function named `name` on any receiver (`.from_pretrained`); `"!glob"` leaves out the calls
    whose qualified name it matches (`!*Tokenizer*.from_pretrained`). The argument is found by `keyword`
    and/or `position`. It matches when its literal value is in `values` (any value when empty and
    `not_values` is empty), is not in `not_values`, or, with `missing`, when it is absent. With
    `in_dict`, `values` are looked for among the values of a dict literal given as the argument
    (`device_map={"": 0}`).

    `named`: globs over names (lower case, leading `_` dropped) that hold the argument's value
    on its way from elsewhere: a module constant, a class field (a config dataclass), a `self.`
    attribute or an argparse option assigned a matching value (also inside a list, a tuple or a
    conditional) is matched where the file itself passes that value to no matched call
    (`DEVICE_MAP = {"": 0}` in a constants module, `self._compile_backend = "inductor"`).

    `switch`: the argument turns a CUDA-only feature on; only a literal at the call can say it
    is off (`load_in_8bit=args.load_in_8bit` is a site, whatever the option's default).

    `unless`: other arguments whose literal value makes the call harmless, each a pattern with
    `keyword`/`position` and `values` (`fork_rng(devices=[])` touches no device generator; an
    empty list or tuple is written `[]`), or `present: true` and no values: the argument given
    at all (Lightning's `gpus=` chooses the accelerator: another rule's finding).

    `inside`: the argument is an entry of the dict given to the call as this keyword, not an
    argument of the call itself (Ray Serve's `ray_actor_options={"num_gpus": 1}`).

    `suffixes`: the argument, written at the call, holds a string with one of these endings.
    """

    call: tuple[str, ...]
    keyword: str | None = None
    position: int | None = None
    values: tuple[Any, ...] = ()
    not_values: tuple[Any, ...] = ()
    missing: bool = False
    in_dict: bool = False
    named: tuple[str, ...] = ()
    # An on/off switch (`load_in_8bit=`): a value not written as a literal at the call (an
    # expression, a command-line option, a parameter passed through) may turn it on, so it matches;
    # a literal is judged by `values` (or `not_values`: `num_gpus=` asks for GPUs unless 0).
    switch: bool = False
    unless: tuple[ArgumentPattern, ...] = ()
    inside: str | None = None
    # File-name endings: the argument holds a string ending in one (in a list, a tuple, a call such
    # as `os.path.join(d, "k.cu")`): `load("fused", sources=[..., "fused_kernel.cu"])` builds CUDA code.
    suffixes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Match:
    """What a rule matches. Every field is optional; a rule matches if any of them does."""

    qualified_names: tuple[str, ...] = ()  # globs over alias-resolved dotted names referenced
    device_strings: tuple[str, ...] = ()  # device types ("cuda") in device-selecting strings
    methods: tuple[str, ...] = ()  # `x.<name>(...)` calls on any receiver that is not a module
    attributes: tuple[str, ...] = ()  # `x.<name>` reads on any receiver that is not a module
    arguments: tuple[ArgumentPattern, ...] = ()
    imports: tuple[str, ...] = ()  # module globs for `import m` / `from m import x`
    env_vars: tuple[str, ...] = ()  # env-var name globs, read or set in code
    files: tuple[str, ...] = ()  # path globs of files that are themselves the finding (*.cu)
    # Word globs (`cuda*`, `flash_attn`: `_` joins consecutive words) for CUDA-indicative words in
    # code: names, attributes, keywords, imported modules, and short string literals that are not
    # messages (see `scan.matchers.tokens`). A token already inside another finding is not repeated.
    tokens: tuple[str, ...] = ()
    # Device types (`cuda`) that a device-like parameter of a function the file defines defaults
    # to (`def autocast_ctx(device_type="cuda")`): each call of it that leaves the parameter out.
    default_devices: tuple[str, ...] = ()
    # Rule codes: an import of one of the scanned project's own modules in which one of these rules
    # reports (`from .ops import fused_add`, ops.py defining Triton kernels); needs the project
    # fact `kernel-module`, which decides it once every file is scanned (scan/project.py).
    project_modules: tuple[str, ...] = ()
    # Build-script calls (`CUDAExtension`) whose `name` declares a compiled module of the scanned
    # project: each import of that module (`import fused_dense_lib`), in any file of the project
    # (scan/matchers/extensions.py).
    extensions: tuple[str, ...] = ()
    # Globs over the dependencies the project declares in its dependency files (requirements
    # files, pyproject.toml, setup.cfg, conda environments): the normalised name (`flash-attn`),
    # the name with its version's local label or conda build (`torch+cu121`), or `index:` and a
    # package index URL (scan/matchers/requirements.py).
    requirements: tuple[str, ...] = ()
    # `KEY=VALUE` globs over the settings of the project's YAML configuration files (`device=cuda*`:
    # `device: cuda:0` in a Hydra config), key and value in lower case (scan/matchers/configs.py).
    config_values: tuple[str, ...] = ()
    # Whether a name only tested or written as a type, not used, is a match of `qualified_names`:
    # `isinstance(m, DeformConv2d)`, `if point_sample is None:`, `x: SparseConvTensor` (false for
    # a library that imports without CUDA).
    checks: bool = True

    def is_empty(self) -> bool:
        return not any(
            (self.qualified_names, self.device_strings, self.methods, self.attributes,
             self.arguments, self.imports, self.env_vars, self.files, self.tokens, self.default_devices,
             self.project_modules, self.extensions, self.requirements, self.config_values)
        )


class FixKind(StrEnum):
    RENAME = "rename"
    DEVICE_STRING = "device_string"
    REPLACE = "replace"
    REMOVE_ARGUMENT = "remove_argument"
    REMOVE_STATEMENT = "remove_statement"
    FIXER = "fixer"


# The named fixers a rule may ask for (`fix: {<target>: {fixer: name}}`): part of the rule schema,
# so the loader checks names without importing scan; scan/fixes/registry.py implements each one.
FIXER_NAMES: frozenset[str] = frozenset({
    "accelerator_device_string",
    "cuda_method",
    "is_cuda_attribute",
    "amp_autocast",
    "amp_autocast_device",
    "amp_grad_scaler",
    "compile_backend",
    "accelerator_manual_seed",
})


# Facts about the scanned project (not the file) a rule's finding may need (`project:`); the
# analysis reports the site, the scan keeps the finding only where the fact holds (scan/project.py).
PROJECT_FACTS: frozenset[str] = frozenset({
    "cuda-build",  # the build of the project holding the file compiles CUDA sources
    "kernel-module",  # the imported module of the project is one `match.project_modules` names
    "foreign",  # the library the finding names is not the one whose own package holds the file
})


@dataclass(frozen=True, slots=True)
class TargetFix:
    kind: FixKind
    value: str = ""  # the new name / device type / text / fixer name; "" for the remove kinds


@dataclass(frozen=True, slots=True)
class FixSpec:
    fix_class: FixClass
    targets: dict[Target, TargetFix] = field(default_factory=dict)
    safety: str = ""  # required for unsafe fixes: what behaviour may change
    # Methods that ask about the matched value instead of setting it: a match given to one keeps
    # no fix (`x.is_contiguous(memory_format=torch.channels_last)` would ask another question).
    queries: tuple[str, ...] = ()
    # The matched call checks its device itself and has no `neuron` one (CTranslate2, XGBoost): a
    # device string that reaches the match from elsewhere (`device = "cuda"` ... `device=device`)
    # keeps no rename where it is written, which would make the call raise; the file's other
    # device strings, which may reach it by ways the scan does not follow, are renamed only as an
    # unsafe fix.
    value_stays: bool = False


@dataclass(frozen=True, slots=True)
class Example:
    code: str
    expected: dict[Target, str] = field(default_factory=dict)  # code after rewrite, per target
    count: int = 1  # findings of this rule the example must produce


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    name: str
    title: str
    category: str
    severity: Severity
    match: Match
    fix: FixSpec
    message: str
    why: str
    references: tuple[str, ...]
    invalid: tuple[Example, ...]
    valid: tuple[str, ...]
    status: Status = Status.STABLE
    since: str = "0.1.0"
    default: bool = True  # in the default selection; False: only when `--select` names it
    project: str = ""  # a PROJECT_FACTS entry the finding needs; "" for none
    # the matched call's value decides which code runs: its fix is safe only where that value stays
    # in the file (scan.fixes.flow)
    condition: bool = False
    source_file: str = ""  # the YAML file it came from, for error messages and docs
    kind: str = ""  # NM9xx only: the kind of runtime finding (a key of RulePack.kinds)
    ends_run: bool = False  # NM9xx only: a finding says the program did not run to its end
    hotspot: bool = False  # NM9xx only: one finding per call site, the record's hotspots of its kind

    @property
    def family(self) -> Family:
        return FAMILIES[self.code[:3]]

    @property
    def anchor(self) -> str:
        """The fragment of this rule's section in docs/rules.md (its heading `CODE name`)."""
        return f"{self.code.lower()}-{self.name}"

    def render_message(self, symbol: str) -> str:
        return self.message.replace("{symbol}", symbol)

    def finding(self, path: str, span: Span, symbol: str, source_line: str = "", statement_line: int = 0) -> Finding:
        """This rule's finding on `symbol` at `span` of the file at `path`, with no fixes: what the
        matchers that read a file's text (not its syntax tree) report."""
        return Finding(code=self.code, severity=self.severity, fix_class=self.fix.fix_class, category=self.category,
                       path=path, span=span, message=self.render_message(symbol), source_line=source_line,
                       symbol=symbol, statement_line=statement_line)


@dataclass(frozen=True, slots=True)
class RulePack:
    """The loaded pack: metadata from `rules/pack.yaml` and every rule by code."""

    name: str
    version: str  # the pack's own version
    neuron_sdk: str  # the Neuron SDK release it describes ("2.33")
    torch_neuronx: str  # "2.13/2.14"
    provenance: str
    rules: dict[str, Rule]
    redirects: dict[str, str] = field(default_factory=dict)  # old code -> live code
    digest: str = ""  # hash of every loaded file; part of the scan cache key
    torch: str = ""  # the PyTorch versions it describes (">=2.13,<2.15")
    # Runtime finding kinds (rules/pack.yaml `runtime_kinds`): kind -> section title, in report order.
    kinds: dict[str, str] = field(default_factory=dict)

    def codes_of_kind(self, kind: str) -> tuple[str, ...]:
        return tuple(code for code, rule in self.rules.items() if rule.kind == kind)

    def ending_codes(self) -> frozenset[str]:
        """The runtime findings that mean the program did not run to its end (`ends_run`)."""
        return frozenset(code for code, rule in self.rules.items() if rule.ends_run)

    def hotspot_codes(self, kind: str) -> frozenset[str]:
        """The rules of `kind` whose findings are per-call-site hotspots (`hotspot`)."""
        return frozenset(code for code, rule in self.rules.items() if rule.kind == kind and rule.hotspot)

    def get(self, code: str) -> Rule | None:
        return self.rules.get(self.redirects.get(code, code))
