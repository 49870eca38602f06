"""`match.config_values`: settings in a project's YAML configuration files (Hydra and OmegaConf
configs, training recipes, Accelerate and Lightning configs) that select CUDA: `device: cuda`,
`dist_backend: nccl`, `attn_implementation: flash_attention_2`, `load_in_4bit: true`.

A pattern is `KEY=VALUE`, two globs over a mapping entry: its key, lower case, and its scalar value
as written, lower case (`true`, `cuda:0`). A list under a key sets it only when each of its items
does (a sweep's `device: [cuda:0]`); `device: [cpu, cuda]` lists choices. A file is parsed only
when its text holds a word a value pattern needs (`cuda`, `nccl`, ...), and one that is not YAML
(a Helm template, a Jinja file) yields nothing: its validity is not this tool's to report. CI,
tooling and dependency files (`.github/`, `.pre-commit-config.yaml`, `mkdocs.yml`, `docker-compose.yml`, conda's
`environment.yml`), documentation (`docs/`) and API descriptions (`openapi.yaml`) are not
configuration of the program.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Sequence
from typing import Any

from neuron_migrate.findings import Finding, Span
from neuron_migrate.ruleset.model import Rule

CONFIG_NAMES = ("*.yaml", "*.yml")
_NOT_CONFIG = re.compile(r"(?:mkdocs|docker-compose[\w.-]*|environment[\w.-]*|codecov|\.?readthedocs|"
                         r"\.pre-commit-config|\.gitlab-ci|\.travis|azure-pipelines|pubspec|\.?dependabot|"
                         r"openapi[\w.-]*|swagger[\w.-]*)\.ya?ml", re.I)
_NOT_CONFIG_DIRS = frozenset({"docs", "doc"})
_LITERAL = re.compile(r"[a-z0-9_][a-z0-9_:.\-]*")
_INTERPOLATION_DEFAULT = re.compile(r"\$\{oc\.(?:select|env|decode):[^,{}]+,([^{}]*)\}")


def is_config_file(rel: str) -> bool:
    parts = rel.split("/")
    if any(part.startswith(".") or part in _NOT_CONFIG_DIRS for part in parts[:-1]):  # .github/workflows, docs/
        return False
    name = parts[-1]
    return name.lower().endswith((".yaml", ".yml")) and not _NOT_CONFIG.fullmatch(name)


def needed_words(rules: Sequence[Rule]) -> tuple[str, ...]:
    """Words one of which a file must hold (lower case) for a value pattern to match in it: each
    pattern's longest literal run of its value."""
    words = set()
    for rule in rules:
        for pattern in rule.match.config_values:
            runs = _LITERAL.findall(pattern.partition("=")[2].lower())
            words.add(max(runs, key=len) if runs else "")
    return tuple(sorted(words))


def config_findings(text: str, rel: str, rules: Sequence[Rule], words: Sequence[str]) -> list[Finding]:
    """Each rule's findings on the settings of the YAML `text` (the file at `rel`)."""
    lowered = text.lower()
    if not any(w in lowered for w in words):
        return []
    import yaml  # a dependency of the tool already (rules are YAML)

    try:
        documents = list(yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))  # libyaml when built
    except (yaml.YAMLError, RecursionError):
        return []
    lines = text.split("\n")
    found: list[Finding] = []
    for key, node in (entry for doc in documents if doc is not None for entry in _entries(doc)):
        if isinstance(node, yaml.SequenceNode):  # a list of scalars: each item sets the key
            items = [(str(i.value).strip().lower(), i) for i in node.value]
            matched = [setting_rules(key.replace("-", "_"), v, rules) for v, _ in items]
            for rule in (r for r in matched[0] if all(r in m for m in matched[1:])):
                first = items[0][1]
                line, col = first.start_mark.line + 1, first.start_mark.column
                symbol = f"{key}: [{', '.join(str(i.value) for _, i in items)}]"
                found.append(rule.finding(rel, Span(line, col, line, first.end_mark.column), symbol, lines[line - 1]))
            continue
        written = str(node.value) if isinstance(node.value, str) else ""
        if node.tag.startswith("!"):  # HyperPyYAML's `!name:bitsandbytes.optim.PagedAdam32bit`: the tag is the value
            written = f"{node.tag} {written}".strip()
        # OmegaConf's `${oc.select:model.attn,flash_attention_2}`: the default is the value unless set elsewhere.
        default = _INTERPOLATION_DEFAULT.fullmatch(written)
        value = (default.group(1) if default else written).strip().lower()
        # gpt-neox writes its keys with `-` (`distributed-backend: nccl`), as options are
        for rule in setting_rules(key.replace("-", "_"), value, rules):
            line, col = node.start_mark.line + 1, node.start_mark.column
            end = node.end_mark.column if node.end_mark.line == node.start_mark.line else len(lines[line - 1])
            symbol = f"{key}: {written}"
            found.append(rule.finding(rel, Span(line, col, line, end), symbol, lines[line - 1]))
    return found


def setting_rules(key: str, value: str, rules: Sequence[Rule]) -> list[Rule]:
    """The rules whose patterns match the setting `key` (lower case) = `value` (lower case)."""
    return [rule for rule in rules if any(fnmatch.fnmatchcase(key, k) and fnmatch.fnmatchcase(value, v)
                                          for k, _, v in (p.partition("=") for p in rule.match.config_values))]


def _entries(root: Any) -> Iterator[tuple[str, Any]]:
    """(key, node) of every mapping entry whose value is a scalar, a list of scalars, or carries a
    local tag (a HyperPyYAML object with its arguments below), at any depth (a list's mappings
    too); a node reached twice through an alias is read once."""
    import yaml

    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [("", root)]
    while stack:
        key, node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode):
                    stack.append((str(k.value).lower(), v))
        elif isinstance(node, yaml.SequenceNode):
            if key and node.value and all(isinstance(i, yaml.ScalarNode) for i in node.value):
                yield key, node
                continue
            stack.extend(("", item) for item in node.value)
        elif isinstance(node, yaml.ScalarNode) and key:
            yield key, node
        if key and node.tag.startswith("!") and not isinstance(node, yaml.ScalarNode):
            yield key, node  # HyperPyYAML's `opt_class: !name:bitsandbytes.optim.PagedAdam32bit` with arguments below
