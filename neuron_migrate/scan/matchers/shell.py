"""Environment variables set or read in the project's shell scripts (`*.sh`, `*.bash`, Slurm's
`*.slurm` and `*.sbatch`): the launch lines `CUDA_VISIBLE_DEVICES=0,1 torchrun train.py` and
`export NCCL_DEBUG=INFO`, and expansions such as `gpus="${CUDA_VISIBLE_DEVICES:-0}"`, which the
`match.env_vars` rules report as they report `os.environ[...]` in Python. An assignment is a
name followed by `=` at the start of a command (after `export`, `env` or another assignment), not
inside quotes (`echo "NCCL_DEBUG=INFO"`); an expansion is `$NAME` or `${NAME...}` outside single
quotes. A comment line is passed over, and text after ` #` on a line too. Script syntax is not
checked: a script is read line by line, so a heredoc's lines count as commands.
"""

from __future__ import annotations

import re

from neuron_migrate.findings import Finding, Span
from neuron_migrate.scan.matchers.env_vars import EnvVarTable

SHELL_NAMES = ("*.sh", "*.bash", "*.slurm", "*.sbatch")
# An assignment word: at a line's start, after a command separator or `export`/`env`, or after
# another assignment's value (`A=1 B=2 cmd`).
_ASSIGN = re.compile(r"(?:^|(?<=[\s;&|(`]))(?:(?:export|env|declare\s+-x)\s+)?([A-Za-z_][A-Za-z0-9_]*)=")
_EXPANSION = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_COMMENT = re.compile(r"(?:^|\s)#.*")


def is_shell_script(rel: str) -> bool:
    return rel.endswith((".sh", ".bash", ".slurm", ".sbatch"))


def shell_findings(text: str, rel: str, table: EnvVarTable) -> list[Finding]:
    found: list[Finding] = []
    for number, line in enumerate(text.split("\n"), start=1):
        code = _COMMENT.sub("", line)
        if "=" not in code and "$" not in code:
            continue
        names = list(_ASSIGN.finditer(code))
        names += [m for m in _EXPANSION.finditer(code) if not code.count("'", 0, m.start()) % 2]
        for m in sorted(names, key=lambda m: m.start()):
            name = m.group(1)
            span = Span(number, m.start(1), number, m.end(1))
            found += [rule.finding(rel, span, name, line) for rule in table.match(name)]
    return found
