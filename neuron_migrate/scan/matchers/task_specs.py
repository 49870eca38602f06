"""Launch specs that hold shell: SkyPilot's task YAML (`setup:` and `run:` scripts, `envs:`), dstack's
(`commands:`, `env:`) and Azure ML's command jobs (`command:`, `environment_variables:`, also the
jobs of a pipeline). Their commands install packages, set NCCL variables and start the training job
on the cloud's GPU machines, as a shell script does (`matchers.shell` reads them).

A SkyPilot task is a YAML mapping with `run` or `setup` and one of its other task keys
(`resources`, `num_nodes`, `envs`, `file_mounts`, `workdir`); a dstack one has `type: task`
(`service`, `dev-environment`) and `commands`; an Azure ML job has a `command` and `type: command`
or an Azure ML `$schema`. Each command line is given where it stands in the file: a block scalar
(`run: |`) line by line, a one-line value at its column, a list item each.

Environment variables set by any YAML configuration are given too, each as the assignment
`NAME=` at its name's column: the entries of a mapping under `env`, `envs`, `environment` or
`environment_variables` (Azure ML, SkyPilot, Hydra launchers), or of a list of `NAME=value`
strings or of Kubernetes' `{name: NAME, value: ...}` there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_SKYPILOT_KEYS = frozenset({"resources", "num_nodes", "envs", "file_mounts", "workdir"})
_DSTACK_TYPES = frozenset({"task", "service", "dev-environment"})
_ENV_KEYS = frozenset({"env", "envs", "environment", "environment_variables"})


def task_commands(text: str) -> list[tuple[int, str]]:
    """(1-based line, the line as a shell reads it, columns those of the file) of each command of a
    launch spec and each environment variable a YAML file sets; empty for broken YAML."""
    if not any(word in text for word in ("run:", "setup:", "commands:", "command:", "env")):
        return []
    import yaml  # a dependency of the tool already (rules are YAML)

    try:
        documents = list(yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except (yaml.YAMLError, RecursionError):
        return []
    lines = text.split("\n")
    out: list[tuple[int, str]] = []
    for root in documents:
        if isinstance(root, yaml.MappingNode):
            for spec in (root, *_pipeline_jobs(root)):
                for node in _scripts(spec):
                    out += _script(node, lines)
        out += _environments(root, lines)
    return sorted(set(out))


def _top(node: Any) -> dict[str, Any]:
    import yaml

    return {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def _scripts(spec: Any) -> list[Any]:
    """The nodes of a spec's commands, if it is a launch spec."""
    import yaml

    top = _top(spec)
    kind = top.get("type")
    kind = kind.value if isinstance(kind, yaml.ScalarNode) else None
    schema = top.get("$schema")
    if ("run" in top or "setup" in top) and not _SKYPILOT_KEYS.isdisjoint(top):
        return [top.get("setup"), top.get("run")]
    if kind in _DSTACK_TYPES and "commands" in top:
        return [top["commands"]]
    if "command" in top and (kind == "command" or (isinstance(schema, yaml.ScalarNode) and "azureml" in str(schema.value))):
        return [top["command"]]
    return []


def _pipeline_jobs(root: Any) -> list[Any]:
    """An Azure ML pipeline's jobs (`jobs: {train: {type: command, command: ...}}`)."""
    import yaml

    jobs = _top(root).get("jobs")
    if not isinstance(jobs, yaml.MappingNode):
        return []
    return [v for _, v in jobs.value if isinstance(v, yaml.MappingNode)]


def _script(node: Any, lines: list[str]) -> Iterator[tuple[int, str]]:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _script(item, lines)
    elif isinstance(node, yaml.ScalarNode) and isinstance(node.value, str):
        start, end = node.start_mark, node.end_mark
        if node.style in ("|", ">"):  # a block: its lines follow the indicator's, as written
            last = end.line if end.column else end.line - 1
            for i in range(start.line + 1, min(last, len(lines) - 1) + 1):
                yield i + 1, lines[i]
        elif start.line < len(lines):  # one line: from the value's column (a quote reads as a space)
            col = start.column + (node.style in ("'", '"'))
            yield start.line + 1, " " * col + lines[start.line][col:]


def _environments(root: Any, lines: list[str]) -> list[tuple[int, str]]:
    """Every environment variable set under an `env`-like key, at any depth."""
    import yaml

    out: list[tuple[int, str]] = []
    stack = [root]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and str(k.value).lower() in _ENV_KEYS:
                    out += _environment(v, lines)
                stack.append(v)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return out


def _environment(node: Any, lines: list[str]) -> Iterator[tuple[int, str]]:
    """`envs: {NCCL_DEBUG: INFO}` and Kubernetes' `[{name: NCCL_DEBUG, value: INFO}]` as the
    assignment `NCCL_DEBUG=` at the name's column (the value is a setting of the file, read by
    `matchers.configs`, and stands elsewhere); dstack's `env: [NCCL_DEBUG=INFO]` as written."""
    import yaml

    names: list[Any] = []
    if isinstance(node, yaml.MappingNode):
        names = [k for k, _ in node.value]
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            if isinstance(item, yaml.MappingNode):  # Kubernetes: `- name: NCCL_DEBUG` / `value: INFO`
                names.append(_top(item).get("name"))
            else:
                yield from _script(item, lines)
    for name in names:
        if isinstance(name, yaml.ScalarNode) and isinstance(name.value, str) and name.start_mark.line < len(lines):
            yield name.start_mark.line + 1, " " * name.start_mark.column + f"{name.value}="
