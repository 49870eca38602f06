"""Read and strictly validate the rule pack (`rules/pack.yaml` + `rules/nm*.yaml`).

`rules/ops.yaml` (the op-support table) lives beside them but is not a rule file: `ruleset/ops.py` reads it.

Every problem raises `RulePackError(file, code, field, problem)`, which the CLI turns into exit 2.
Loading never imports torch or libcst; the default pack is parsed once per process.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from neuron_migrate.errors import RulePackError
from neuron_migrate.findings import FixClass, Severity, Target
from neuron_migrate.ruleset.location import rules_dir
from neuron_migrate.ruleset.model import (
    FAMILIES,
    FIXER_NAMES,
    PROJECT_FACTS,
    ArgumentPattern,
    Example,
    FixKind,
    FixSpec,
    Match,
    Rule,
    RulePack,
    Status,
    TargetFix,
)

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

CODE_RE = re.compile(r"^NM\d{3}$")
_NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FIXER_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_FAMILY_FILE_RE = re.compile(r"^nm(\d)-[a-z0-9-]+\.ya?ml$")

_PACK_REQUIRED = ("name", "version", "neuron_sdk", "torch_neuronx", "torch", "provenance")
_PACK_KEYS = frozenset(_PACK_REQUIRED) | {"redirects", "runtime_kinds"}
_RULE_REQUIRED = ("code", "name", "title", "category", "severity", "match", "fix", "message",
                  "why", "references", "examples")
_RULE_KEYS = frozenset(_RULE_REQUIRED) | {"status", "since", "kind", "default", "ends_run", "hotspot", "project",
                                          "condition"}
_RUNTIME_KEYS = ("kind", "ends_run", "hotspot")  # only NM9xx rules (check's findings) have these
_RUNTIME_FAMILY = "NM9"  # check's findings: each names its kind
_LIST_MATCHERS = ("qualified_names", "device_strings", "methods", "attributes", "imports",
                  "env_vars", "files", "tokens", "default_devices", "project_modules", "extensions",
                  "requirements", "config_values")
_MATCH_KEYS = frozenset(_LIST_MATCHERS) | {"arguments", "checks"}
# A configuration setting glob: `key=value`, lower case.
_CONFIG_VALUE_RE = re.compile(r"[^=A-Z\s]+=[^=A-Z\s]+")
# A dependency glob: an index URL, or a name as pip normalises it (PEP 503) with an optional local label.
_REQUIREMENT_RE = re.compile(r"index:\S+|[a-z0-9*?][a-z0-9*?-]*(\+[a-z0-9*?._]+)?")
_ARG_KEYS = frozenset({"call", "keyword", "position", "values", "not_values", "missing", "in_dict", "named",
                       "switch", "unless", "inside", "suffixes"})
_UNLESS_KEYS = frozenset({"keyword", "position", "values", "present"})
_TARGETS = {t.value: t for t in Target}
_FIX_KEYS = frozenset(_TARGETS) | {"class", "safety", "queries", "value_stays"}
_INVALID_KEYS = frozenset(_TARGETS) | {"code", "count"}
_EXAMPLE_KEYS = frozenset({"invalid", "valid"})
_REMOVE_KINDS = (FixKind.REMOVE_ARGUMENT, FixKind.REMOVE_STATEMENT)
# Families whose rules are emitted by the tool itself (NM0xx) or by `check` (NM9xx): no matchers.
MESSAGE_ONLY_FAMILIES = frozenset({"NM0", "NM9"})


class _Ctx:
    """Where we are in a file, so every error names file, rule and field."""

    def __init__(self, file: str, code: str | None = None) -> None:
        self.file, self.code = file, code

    def error(self, field: str | None, problem: str) -> RulePackError:
        return RulePackError(self.file, self.code, field, problem)


def _mapping(ctx: _Ctx, value: Any, field: str | None, allowed: frozenset[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ctx.error(field, f"expected a mapping, got {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        prefix = f"{field}." if field else ""
        raise ctx.error(f"{prefix}{unknown[0]}", f"unknown key (allowed: {', '.join(sorted(allowed))})")
    return value


def _str(ctx: _Ctx, value: Any, field: str, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ctx.error(field, f"expected a string, got {type(value).__name__}")
    if not empty and not value.strip():
        raise ctx.error(field, "must not be empty")
    return value


def _bool(ctx: _Ctx, value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise ctx.error(field, f"expected true or false, got {value!r}")
    return value


def _str_list(ctx: _Ctx, value: Any, field: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ctx.error(field, f"expected a list, got {type(value).__name__}")
    return tuple(_str(ctx, v, f"{field}[{i}]") for i, v in enumerate(value))


def _enum(ctx: _Ctx, enum: Any, value: Any, field: str) -> Any:
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(e.value for e in enum)
        raise ctx.error(field, f"invalid value {value!r} (allowed: {allowed})") from None


def _scalars(ctx: _Ctx, value: Any, field: str, *, empty: bool = False) -> tuple[Any, ...]:
    """`empty`: `[]` is a value too (an empty list or tuple at the call), kept as `()`."""
    if not isinstance(value, list):
        raise ctx.error(field, f"expected a list, got {type(value).__name__}")
    out = []
    for i, v in enumerate(value):
        if empty and v == []:
            v = ()
        elif v is not None and not isinstance(v, (str, int, float, bool)):
            raise ctx.error(f"{field}[{i}]", "values must be literals (string, number, bool, null"
                                             + (", [])" if empty else ")"))
        out.append(v)
    return tuple(out)


def _unless(ctx: _Ctx, raw: Any, field: str, call: tuple[str, ...]) -> tuple[ArgumentPattern, ...]:
    if not isinstance(raw, list):
        raise ctx.error(field, f"expected a list, got {type(raw).__name__}")
    out = []
    for i, item in enumerate(raw):
        d = _mapping(ctx, item, f"{field}[{i}]", _UNLESS_KEYS)
        keyword = _str(ctx, d["keyword"], f"{field}[{i}].keyword") if "keyword" in d else None
        position = d.get("position")
        if position is not None and (isinstance(position, bool) or not isinstance(position, int) or position < 0):
            raise ctx.error(f"{field}[{i}].position", "expected a non-negative integer")
        if keyword is None and position is None:
            raise ctx.error(f"{field}[{i}]", "needs `keyword` and/or `position`")
        values = _scalars(ctx, d.get("values", []), f"{field}[{i}].values", empty=True)
        present = _bool(ctx, d.get("present", False), f"{field}[{i}].present")
        if bool(values) == present:
            raise ctx.error(f"{field}[{i}]", "needs either `values` (those that make the call harmless) or "
                                             "`present: true` (any value does)")
        out.append(ArgumentPattern(call, keyword, position, values))  # no values: present at all
    return tuple(out)


def _argument(ctx: _Ctx, raw: Any, field: str) -> ArgumentPattern:
    d = _mapping(ctx, raw, field, _ARG_KEYS)
    if "call" not in d:
        raise ctx.error(f"{field}.call", "missing required field")
    call = _str_list(ctx, d["call"], f"{field}.call")
    if not call:
        raise ctx.error(f"{field}.call", "must list at least one callee pattern")
    keyword = _str(ctx, d["keyword"], f"{field}.keyword") if "keyword" in d else None
    position = d.get("position")
    if position is not None and (isinstance(position, bool) or not isinstance(position, int) or position < 0):
        raise ctx.error(f"{field}.position", "expected a non-negative integer")
    if keyword is None and position is None:
        raise ctx.error(field, "needs `keyword` and/or `position`")
    missing = d.get("missing", False)
    if not isinstance(missing, bool):
        raise ctx.error(f"{field}.missing", "expected true or false")
    values = _scalars(ctx, d.get("values", []), f"{field}.values")
    not_values = _scalars(ctx, d.get("not_values", []), f"{field}.not_values")
    if missing and (values or not_values):
        raise ctx.error(f"{field}.missing", "`missing` cannot be combined with values/not_values")
    in_dict = d.get("in_dict", False)
    if not isinstance(in_dict, bool):
        raise ctx.error(f"{field}.in_dict", "expected true or false")
    if in_dict and not values:
        raise ctx.error(f"{field}.in_dict", "`in_dict` needs `values` to look for among the dict's values")
    named = tuple(n.lower() for n in _str_list(ctx, d.get("named", []), f"{field}.named"))
    if named and not values:
        raise ctx.error(f"{field}.named", "`named` needs `values`: a name is matched by the value assigned to it")
    switch = d.get("switch", False)
    if not isinstance(switch, bool):
        raise ctx.error(f"{field}.switch", "expected true or false")
    if switch and (not (values or not_values) or in_dict):
        raise ctx.error(f"{field}.switch", "`switch` needs `values` or `not_values` (which literals turn it on), "
                                           "without `in_dict`")
    unless = _unless(ctx, d.get("unless", []), f"{field}.unless", call)
    inside = _str(ctx, d["inside"], f"{field}.inside") if "inside" in d else None
    if inside is not None and (keyword is None or position is not None or missing or named or unless):
        raise ctx.error(f"{field}.inside", "`inside` looks a `keyword` up among a dict's entries: no `position`, "
                                           "`missing`, `named` or `unless`")
    suffixes = tuple(_str_list(ctx, d.get("suffixes", []), f"{field}.suffixes"))
    if suffixes and (values or not_values or missing or in_dict or named or switch or inside is not None):
        raise ctx.error(f"{field}.suffixes", "`suffixes` matches the strings an argument holds: no `values`, "
                                             "`not_values`, `missing`, `in_dict`, `named`, `switch` or `inside`")
    return ArgumentPattern(call, keyword, position, values, not_values, missing, in_dict, named, switch, unless,
                           inside, suffixes)


def _match(ctx: _Ctx, raw: Any, family: str) -> Match:
    d = _mapping(ctx, {} if raw is None else raw, "match", _MATCH_KEYS)
    lists = {k: _str_list(ctx, d[k], f"match.{k}") for k in _LIST_MATCHERS if k in d}
    args_raw = d.get("arguments", [])
    if not isinstance(args_raw, list):
        raise ctx.error("match.arguments", "expected a list")
    arguments = tuple(_argument(ctx, a, f"match.arguments[{i}]") for i, a in enumerate(args_raw))
    checks = d.get("checks", True)
    if not isinstance(checks, bool):
        raise ctx.error("match.checks", "expected true or false")
    match = Match(arguments=arguments, checks=checks, **lists)
    if family in MESSAGE_ONLY_FAMILIES:
        if not match.is_empty():
            raise ctx.error("match", f"{family}xx rules are emitted by the tool, not matched: use `match: {{}}`")
    elif match.is_empty():
        raise ctx.error("match", "needs at least one matcher")
    return match


def _target_fix(ctx: _Ctx, raw: Any, field: str, fixers: frozenset[str] | None) -> TargetFix:
    kinds = {k.value: k for k in FixKind}
    d = _mapping(ctx, raw, field, frozenset(kinds))
    if len(d) != 1:
        raise ctx.error(field, f"needs exactly one of: {', '.join(kinds)}")
    (key, value), = d.items()
    kind = kinds[key]
    if kind in _REMOVE_KINDS:
        if value is not True:
            raise ctx.error(f"{field}.{key}", "must be `true`")
        return TargetFix(kind)
    text = _str(ctx, value, f"{field}.{key}")
    if kind is FixKind.FIXER:
        if not _FIXER_RE.match(text):
            raise ctx.error(f"{field}.fixer", f"fixer name {text!r} must be snake_case")
        if fixers is not None and text not in fixers:
            raise ctx.error(f"{field}.fixer", f"unknown fixer {text!r} (known: {', '.join(sorted(fixers))})")
    return TargetFix(kind, text)


def _fix(ctx: _Ctx, raw: Any, fixers: frozenset[str] | None) -> FixSpec:
    d = _mapping(ctx, raw, "fix", _FIX_KEYS)
    if "class" not in d:
        raise ctx.error("fix.class", "missing required field")
    fix_class = _enum(ctx, FixClass, d["class"], "fix.class")
    targets = {_TARGETS[k]: _target_fix(ctx, d[k], f"fix.{k}", fixers) for k in _TARGETS if k in d}
    fixable = fix_class in (FixClass.SAFE, FixClass.UNSAFE)
    if fixable and not targets:
        raise ctx.error("fix", f"a {fix_class.value} fix needs a replacement for at least one target")
    if not fixable and targets:
        raise ctx.error(f"fix.{next(iter(targets)).value}", f"a {fix_class.value} rule has no replacement")
    safety = d.get("safety")
    if fix_class is FixClass.UNSAFE:
        if safety is None:
            raise ctx.error("fix.safety", "required for unsafe fixes: say what behaviour may change")
        safety = _str(ctx, safety, "fix.safety")
    elif safety is not None:
        raise ctx.error("fix.safety", "only unsafe fixes carry `safety`")
    queries = _str_list(ctx, d.get("queries", []), "fix.queries")
    if queries and not fixable:
        raise ctx.error("fix.queries", f"a {fix_class.value} rule has no fix to withhold")
    value_stays = _bool(ctx, d.get("value_stays", False), "fix.value_stays")
    return FixSpec(fix_class, targets, safety or "", tuple(queries), value_stays)


def _examples(ctx: _Ctx, raw: Any, fix: FixSpec, family: str) -> tuple[tuple[Example, ...], tuple[str, ...]]:
    d = _mapping(ctx, raw, "examples", _EXAMPLE_KEYS)
    invalid_raw, valid_raw = d.get("invalid", []), d.get("valid", [])
    if not isinstance(invalid_raw, list):
        raise ctx.error("examples.invalid", "expected a list")
    invalid: list[Example] = []
    for i, item in enumerate(invalid_raw):
        field = f"examples.invalid[{i}]"
        e = _mapping(ctx, item, field, _INVALID_KEYS)
        if "code" not in e:
            raise ctx.error(f"{field}.code", "missing required field")
        code = _str(ctx, e["code"], f"{field}.code")
        expected: dict[Target, str] = {}
        for key, target in _TARGETS.items():
            if key in e:
                if target not in fix.targets:
                    raise ctx.error(f"{field}.{key}", f"the rule has no fix for target {key!r}")
                expected[target] = _str(ctx, e[key], f"{field}.{key}", empty=True)
        count = e.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ctx.error(f"{field}.count", "expected a positive integer")
        invalid.append(Example(code, expected, count))
    valid = _str_list(ctx, valid_raw, "examples.valid")
    if family not in MESSAGE_ONLY_FAMILIES and (not invalid or not valid):
        raise ctx.error("examples", "needs at least one `invalid` and one `valid` example")
    return tuple(invalid), valid


def _rule(ctx: _Ctx, raw: Any, index: int, file_family: str | None, fixers: frozenset[str] | None) -> Rule:
    ctx.code = None
    if not isinstance(raw, dict):
        raise ctx.error(f"rules[{index}]", "expected a mapping")
    code = raw.get("code")
    if code is None:
        raise ctx.error(f"rules[{index}].code", "missing required field")
    if not isinstance(code, str) or not CODE_RE.match(code):
        raise ctx.error("code", f"invalid code {code!r}: expected NM followed by three digits")
    ctx.code = code
    d = _mapping(ctx, raw, None, _RULE_KEYS)
    missing = [k for k in _RULE_REQUIRED if k not in d]
    if missing:
        raise ctx.error(missing[0], "missing required field")
    family = code[:3]
    if file_family is not None and family != file_family:
        raise ctx.error("code", f"{code} is not in this file's family {file_family}xx")
    name = _str(ctx, d["name"], "name")
    if not _NAME_RE.match(name):
        raise ctx.error("name", f"{name!r} is not kebab-case")
    category = _str(ctx, d["category"], "category")
    if category != FAMILIES[family].category:
        raise ctx.error("category", f"{category!r} does not match family {family}xx ({FAMILIES[family].category!r})")
    fix = _fix(ctx, d["fix"], fixers)
    references = _str_list(ctx, d["references"], "references")
    for i, ref in enumerate(references):
        if not ref.startswith(("https://", "http://")):
            raise ctx.error(f"references[{i}]", f"{ref!r} is not a URL")
    invalid, valid = _examples(ctx, d["examples"], fix, family)
    if family == _RUNTIME_FAMILY:
        if "kind" not in d:
            raise ctx.error("kind", "missing required field (NM9xx rules name their kind: see rules/pack.yaml)")
        kind = _str(ctx, d["kind"], "kind")
    elif runtime_only := [k for k in _RUNTIME_KEYS if k in d]:
        raise ctx.error(runtime_only[0], f"only NM9xx runtime rules have `{runtime_only[0]}`")
    else:
        kind = ""
    match = _match(ctx, d["match"], family)
    project = _project(ctx, d.get("project", ""))
    if bool(match.project_modules) != (project == "kernel-module"):
        raise ctx.error("project", "`match.project_modules` and `project: kernel-module` go together")
    if not all(CODE_RE.match(c) for c in match.project_modules):
        raise ctx.error("match.project_modules", "expected rule codes (NM + 3 digits)")
    if not all(b.isidentifier() for b in match.extensions):
        raise ctx.error("match.extensions", "expected the names of build-script calls (CUDAExtension)")
    if not all(_CONFIG_VALUE_RE.fullmatch(v) for v in match.config_values):
        raise ctx.error("match.config_values", "expected `key=value` globs in lower case (`device=cuda*`)")
    if not all(_REQUIREMENT_RE.match(r) for r in match.requirements):
        raise ctx.error("match.requirements", "expected globs over normalised names (`flash-attn`, `torch+cu*`, "
                                              "`index:*/whl/cu*`): lowercase, `-` between words")
    return Rule(
        code=code,
        name=name,
        title=_str(ctx, d["title"], "title"),
        category=category,
        severity=_enum(ctx, Severity, d["severity"], "severity"),
        match=match,
        fix=fix,
        message=_str(ctx, d["message"], "message"),
        why=_str(ctx, d["why"], "why"),
        references=references,
        invalid=invalid,
        valid=valid,
        kind=kind,
        ends_run=_bool(ctx, d.get("ends_run", False), "ends_run"),
        hotspot=_bool(ctx, d.get("hotspot", False), "hotspot"),
        status=_enum(ctx, Status, d.get("status", "stable"), "status"),
        since=_str(ctx, str(d.get("since", "0.1.0")), "since"),
        default=_bool(ctx, d.get("default", True), "default"),
        project=project,
        condition=_bool(ctx, d.get("condition", False), "condition"),
        source_file=ctx.file,
    )


def _project(ctx: _Ctx, raw: Any) -> str:
    fact = _str(ctx, raw, "project") if raw != "" else ""
    if fact and fact not in PROJECT_FACTS:
        raise ctx.error("project", f"unknown project fact {fact!r} (known: {', '.join(sorted(PROJECT_FACTS))})")
    return fact


def _parse(file: str, data: bytes) -> Any:
    try:
        return yaml.load(data, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise RulePackError(file, None, None, f"invalid YAML{where}: {problem}") from None


def parse_rule_file(file: str, data: bytes, *, fixers: frozenset[str] | None, family_from_name: bool) -> list[Rule]:
    """Parse one rule file. `family_from_name`: the file is `nm<d>-*.yaml` and holds only that family."""
    ctx = _Ctx(file)
    parsed = _parse(file, data)
    if parsed is None:
        raise ctx.error(None, "the file is empty; expected a mapping with a `rules:` list")
    doc = _mapping(ctx, parsed, None, frozenset({"rules"}))
    rules_raw = doc.get("rules")
    if not isinstance(rules_raw, list):
        raise ctx.error("rules", "expected a list of rules")
    file_family = None
    base = Path(file).name
    m = _FAMILY_FILE_RE.match(base)
    if family_from_name:
        if not m:
            raise ctx.error(None, "rule files are named nm<digit>-<topic>.yaml")
        file_family = f"NM{m.group(1)}"
    elif m:  # a team's own file named like ours still holds one family
        file_family = f"NM{m.group(1)}"
    return [_rule(ctx, r, i, file_family, fixers) for i, r in enumerate(rules_raw)]


def known_fixers() -> frozenset[str]:
    """The fixer names rules may use (`neuron_migrate.ruleset.model.FIXER_NAMES`)."""
    return FIXER_NAMES


def _pack_meta(file: str, data: bytes) -> dict[str, Any]:
    ctx = _Ctx(file)
    d = _mapping(ctx, _parse(file, data), None, _PACK_KEYS)
    for key in _PACK_REQUIRED:
        if key not in d:
            raise ctx.error(key, "missing required field")
        _str(ctx, d[key], key)
    redirects = d.get("redirects") or {}
    if not isinstance(redirects, dict):
        raise ctx.error("redirects", "expected a mapping of old code -> live code")
    for old, new in redirects.items():
        if not isinstance(old, str) or not CODE_RE.match(old) or not isinstance(new, str) or not CODE_RE.match(new):
            raise ctx.error(f"redirects.{old}", "codes must look like NM123")
    kinds = d.get("runtime_kinds") or {}
    if not isinstance(kinds, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in kinds.items()):
        raise ctx.error("runtime_kinds", "expected a mapping of kind -> section title")
    return d


def _assemble(meta: dict[str, Any], rules: list[Rule], digest: str, pack_file: str) -> RulePack:
    by_code: dict[str, Rule] = {}
    names: dict[str, str] = {}
    for rule in rules:
        if rule.code in by_code:
            other = by_code[rule.code].source_file
            raise RulePackError(rule.source_file, rule.code, "code", f"duplicate code (also defined in {other})")
        if rule.name in names:
            raise RulePackError(rule.source_file, rule.code, "name", f"duplicate name {rule.name!r} (also {names[rule.name]})")
        by_code[rule.code] = rule
        names[rule.name] = rule.code
    redirects: dict[str, str] = dict(meta.get("redirects") or {})
    for old, new in redirects.items():
        if old in by_code:
            raise RulePackError(pack_file, old, "redirects", f"{old} is a live code and cannot be redirected")
        if new not in by_code:
            raise RulePackError(pack_file, old, "redirects", f"redirect target {new} is not a live code")
    kinds: dict[str, str] = dict(meta.get("runtime_kinds") or {})
    for rule in by_code.values():
        if rule.kind and rule.kind not in kinds:
            raise RulePackError(rule.source_file, rule.code, "kind",
                                f"unknown kind {rule.kind!r} (rules/pack.yaml runtime_kinds: {', '.join(kinds)})")
    return RulePack(
        name=meta["name"],
        version=meta["version"],
        neuron_sdk=meta["neuron_sdk"],
        torch_neuronx=meta["torch_neuronx"],
        torch=meta["torch"],
        provenance=meta["provenance"],
        rules=dict(sorted(by_code.items())),
        redirects=redirects,
        digest=digest,
        kinds=kinds,
    )


def _read_default() -> tuple[dict[str, Any], list[Rule], Any]:
    root = rules_dir()
    pack_file = "rules/pack.yaml"
    digest = hashlib.sha256()
    pack_bytes = root.joinpath("pack.yaml").read_bytes()
    meta = _pack_meta(pack_file, pack_bytes)
    digest.update(pack_bytes)
    fixers = known_fixers()
    rules: list[Rule] = []
    names = sorted(p.name for p in root.iterdir() if p.name.startswith("nm") and p.name.endswith(".yaml"))
    for name in names:
        data = root.joinpath(name).read_bytes()
        digest.update(name.encode() + b"\0" + data)
        rules.extend(parse_rule_file(f"rules/{name}", data, fixers=fixers, family_from_name=True))
    digest.update(str(meta["version"]).encode())
    return meta, rules, digest


@functools.lru_cache(maxsize=1)
def _default_pack() -> RulePack:
    meta, rules, digest = _read_default()
    return _assemble(meta, rules, digest.hexdigest(), "rules/pack.yaml")


def load_pack(extra_files: Sequence[Path | str] = ()) -> RulePack:
    """The built-in pack, plus a team's own rule files (same format) loaded on top.

    A code defined twice (built-in and extra, or in two extra files) is an error.
    """
    if not extra_files:
        return _default_pack()
    meta, rules, digest = _read_default()
    fixers = known_fixers()
    for extra in extra_files:
        path = Path(extra)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise RulePackError(str(path), None, None, f"cannot read rule file: {exc.strerror or exc}") from None
        digest.update(str(path).encode() + b"\0" + data)
        rules.extend(parse_rule_file(str(path), data, fixers=fixers, family_from_name=False))
    return _assemble(meta, rules, digest.hexdigest(), "rules/pack.yaml")


def pack_summary(pack: RulePack) -> Mapping[str, str]:
    """The pack's identity, for report headers and `rules --format json`."""
    return {"name": pack.name, "version": pack.version, "neuron_sdk": pack.neuron_sdk,
            "torch_neuronx": pack.torch_neuronx, "digest": pack.digest}
