"""Launch specs that hold shell: SkyPilot's task YAML (`setup:` and `run:` scripts, `envs:`) and
dstack's (`commands:`, `env:`). Their commands install packages, set NCCL variables and start the
training job on the cloud's GPU machines, as a shell script does (`matchers.shell` reads them).

A SkyPilot task is a YAML mapping with `run` or `setup` and one of its other task keys
(`resources`, `num_nodes`, `envs`, `file_mounts`, `workdir`); a dstack one has `type: task`
(`service`, `dev-environment`) and `commands`. Each command line is given where it stands in the
file: a block scalar (`run: |`) line by line, a one-line value at its column, a list item each.
An environment entry is given as the assignment `NAME=value` at its key's column.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_SKYPILOT_KEYS = frozenset({"resources", "num_nodes", "envs", "file_mounts", "workdir"})
_DSTACK_TYPES = frozenset({"task", "service", "dev-environment"})


def task_commands(text: str) -> list[tuple[int, str]]:
    """(1-based line, the line as a shell reads it, columns those of the file) of each command
    and environment assignment of a launch spec; empty for any other YAML (or broken YAML)."""
    if "run:" not in text and "setup:" not in text and "commands:" not in text:
        return []
    import yaml  # a dependency of the tool already (rules are YAML)

    try:
        documents = list(yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except (yaml.YAMLError, RecursionError):
        return []
    lines = text.split("\n")
    out: list[tuple[int, str]] = []
    for root in documents:
        if not isinstance(root, yaml.MappingNode):
            continue
        top = {k.value: v for k, v in root.value if isinstance(k, yaml.ScalarNode)}
        kind = top.get("type")
        if ("run" in top or "setup" in top) and not _SKYPILOT_KEYS.isdisjoint(top):
            scripts, env = [top.get("setup"), top.get("run")], top.get("envs")
        elif isinstance(kind, yaml.ScalarNode) and kind.value in _DSTACK_TYPES and "commands" in top:
            scripts, env = [top.get("commands")], top.get("env")
        else:
            continue
        for node in scripts:
            out += _script(node, lines)
        out += _environment(env, lines)
    return out


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


def _environment(node: Any, lines: list[str]) -> Iterator[tuple[int, str]]:
    """`envs: {NCCL_DEBUG: INFO}` as `NCCL_DEBUG=INFO`; dstack's `env: [NCCL_DEBUG=INFO]` as written."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.start_mark.line < len(lines):
                value = v.value if isinstance(v, yaml.ScalarNode) else ""
                yield k.start_mark.line + 1, " " * k.start_mark.column + f"{k.value}={value}"
    elif isinstance(node, yaml.SequenceNode):
        yield from _script(node, lines)
