"""Shell commands: the project's shell scripts (`*.sh`, `*.bash`, `*.zsh`, Slurm's `*.slurm` and
`*.sbatch`, PBS's `*.pbs` and `*.qsub`), a notebook's shell escapes and magics (`!export ...`,
`%env ...`, `%pip install`), Replicate's `build.run`, the commands of SkyPilot, dstack and Azure ML
jobs and the environment variables of YAML configurations (`matchers.task_specs`).

- Environment variables set or read: the launch lines `CUDA_VISIBLE_DEVICES=0,1 torchrun train.py`
  and `export NCCL_DEBUG=INFO`, variables unset (`unset CUDA_VISIBLE_DEVICES`), and expansions
  such as `gpus="${CUDA_VISIBLE_DEVICES:-0}"`, which the `match.env_vars` rules report as they
  report `os.environ[...]` in Python; a value with a CUDA word (`TRANSFORMER_IMPL=transformer_engine`)
  is the `match.tokens` rules'. An assignment is a
  name followed by `=` at the start of a command (after `export`, `env` or another assignment),
  or an upper-case one opening a double-quoted value (`OPTS="NCCL_DEBUG=INFO ..."`, settings kept
  for a later command line); what `echo` prints is none (`echo "NCCL_DEBUG=INFO"`); an
  expansion is `$NAME` or `${NAME...}` outside single quotes.
- Packages installed: `pip install flash-attn`, `conda install pytorch-cuda=12.1`, a wheel URL or
  `--extra-index-url .../cu121`, which the `match.requirements` rules report as in a
  requirements file.
- CUDA tools run or looked for: a command whose program name holds a CUDA word (`nvidia-smi`,
  `nvcc --version`, `command -v nvidia-smi`), reported by the `match.tokens` rules as in a Python
  `subprocess` call; so is a CUDA directory put on a search path (`export
  LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH`), a cluster's CUDA environment
  module loaded (`module load cuda/11.8`) and a CUDA system package installed (`apt-get install
  cudnn-cuda-12`).
- Python run inline (`NGPU=$(python -c "import torch; print(torch.cuda.device_count())")`): its
  code is found here (`inline_python`) and analysed as Python by the engine.
- Settings passed on a command line: options (`--fp16`, `--fp16 True`, `--device=cuda`,
  `--optim paged_adamw_32bit`) and Hydra overrides (`trainer.accelerator=gpu`), which the
  `match.config_values` rules report as in a YAML configuration file (an option without a value
  is `true`; a key is its last dotted part, lower case, with `-` read as `_`).

A comment line is passed over, and text after ` #` on a line too (not a Slurm `#SBATCH` line:
its options are the job's). Script syntax is not checked: a script is read line by line, so a
heredoc's lines count as commands.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from neuron_migrate.findings import Finding, Span
from neuron_migrate.ruleset.model import Rule
from neuron_migrate.scan.matchers.configs import setting_rules
from neuron_migrate.scan.matchers.env_vars import EnvVarTable
from neuron_migrate.scan.matchers.requirements import INDEX_OPTIONS, cog_commands, matching, requirement_keys
from neuron_migrate.scan.matchers.task_specs import task_commands
from neuron_migrate.scan.matchers.tokens import OFF_PREFIX, TokenTable
from neuron_migrate.scan.notebook import CodeCell

SHELL_NAMES = ("*.sh", "*.bash", "*.zsh", "*.slurm", "*.sbatch", "*.pbs", "*.qsub")
# An assignment word: at a line's start, after a command separator or `export`/`env`, or after
# another assignment's value (`A=1 B=2 cmd`).
_ASSIGN = re.compile(r"(?:^|(?<=[\s;&|(`]))(?:(?:export|env|declare\s+-x)\s+)?([A-Za-z_][A-Za-z0-9_]*)=")
# `unset NAME ...`: the names it removes from the environment (not `unset -f`: functions).
_UNSET = re.compile(r"(?:^|(?<=[\s;&|(`]))unset\s+(?!-f)(?:-[vn]\s+)?([^;&|`]*)")
_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)")
# `python -c "code"` (also `python3.11`, single quotes): the code, one line without escapes.
_INLINE_PYTHON = re.compile(r"(?:^|(?<=[\s;&|(`]))python[0-9.]*\s+-c\s+(?:\"([^\"\\`$]*)\"|'([^']*)')")
# An assignment's value: one word, bare or quoted.
_ASSIGNED = re.compile(r"\"([^\"\s$`\\]+)\"|'([^'\s]+)'|([^\s;&|`'\"$\\]+)")
# `pip install`, `python -m pip install`, `uv pip install`, `conda/mamba install`: the arguments.
_INSTALL = re.compile(r"(?:^|(?<=[\s;&|(`!]))(?:python3?\s+-m\s+)?(?:uv\s+)?(?:pip3?|conda|mamba|micromamba)"
                      r"\s+install\s+([^;&|`]*)")
_ARGUMENT = re.compile(r"\S+")
# An `echo`/`printf` command's arguments, up to the next command (a `;` inside quotes is text).
_MESSAGE = re.compile(r"((?:^|[;&|(`]|\$\()\s*(?:echo|printf)\b)(?:[^;&|`\"']|\"(?:\\.|[^\"\\])*\"|'[^']*')*")
# A command's program: at a line's start or after a separator, past `sudo`, `env` and assignments.
_PROGRAM = re.compile(r"(?:^|[;&|(`]|\$\()\s*(?:(?:sudo|env|exec|time)\s+)*(?:[A-Za-z_]\w*=[^\s$(`]*\s+)*"
                      r"([\w./][\w./-]*)(?![\w./=-])")
# A program a script looks for (`command -v nvidia-smi`, `which nvcc`): it decides what runs.
_LOOKUP = re.compile(r"(?:^|(?<=[\s;&|(`]))(?:command\s+-[vV]|which|type(?:\s+-[aPpt]+)?|hash)\s+([\w./][\w./-]*)")
# An upper-case assignment opening a double-quoted value: environment settings kept in a variable
# for a later command line (`OPTIONS_NCCL="NCCL_DEBUG=info NCCL_IB_DISABLE=0"`).
_QUOTED_ASSIGN = re.compile(r'(?<=")([A-Z_][A-Z0-9_]*)=')
# Search paths: a CUDA directory among them (`export LD_LIBRARY_PATH=/usr/local/cuda/lib64:...`)
# sets up the CUDA toolkit.
_SEARCH_PATHS = frozenset({"PATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
                           "LD_PRELOAD", "DYLD_LIBRARY_PATH"})
_PATH_ENTRY = re.compile(r"[^:\s\"';&|]+")
_VALUE = re.compile(r"\S*")  # an assignment's value, up to the next space
# A cluster's environment module loaded (`module load cuda/11.8`, Lmod's `ml cudnn`): the CUDA toolkit.
_MODULE_LOAD = re.compile(r"(?:^|(?<=[\s;&|(`]))(?:module\s+(?:load|add|switch|swap)|ml)\s+([^;&|`]*)")
# A system package manager's install (`sudo apt-get -y install cudnn-cuda-12`): the packages.
_SYSTEM_INSTALL = re.compile(r"(?:^|(?<=[\s;&|(`]))(?:apt-get|apt|yum|dnf|zypper|apk)\s+(?:-\S+\s+)*(?:install|add)\s+"
                             r"([^;&|`]*)")
_QUOTED = re.compile(r'"(?:\\.|[^"\\])*"|\'[^\']*\'')
_SUBSTITUTION = re.compile(r"\$\([^)]*\)|`[^`]*`")  # what a double-quoted string runs
# `--key`, `--key value`, `--key=value` (a value is no option, no line continuation, no
# redirection or command separator: `--fp16 > log`, and no closing quote: `FLAGS=" --fp16 "`),
# and a Hydra override `key=value` after a space (upper-case names are environment variables).
_OPTION = re.compile(r"(?<![\w-])--([A-Za-z][\w.-]*)(?:=([^\s\\]+)|[ \t]+(?![-\\$<>|&;]|[\"'](?:\s|$))([^\s\\]+))?")
_OFF = re.compile(OFF_PREFIX, re.IGNORECASE)  # `--no-fp16`, `--disable_flash_attn`
_OVERRIDE = re.compile(r"(?<=\s)\+{0,2}([a-z_][\w.]*[a-z][\w.]*)=([^\s\\$]+)")
# (`out = !nvidia-smi`, `x = %sx nvcc --version`: a shell escape whose output a name keeps)
_IPYTHON_PREFIX = re.compile(r"^(\s*)(?:[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*(?=[!%]))?"
                             r"(?:!+|%+)?(?:(?:set_env|env|sx|system)\b)?")
_EXPANSION = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_COMMENT = re.compile(r"(?:^|\s)#.*")
# A Slurm batch script's directive (`#SBATCH --gres=gpu:4`): options of the job, not a comment.
_SBATCH = re.compile(r"[ \t]*#SBATCH[ \t]")


def is_shell_script(rel: str) -> bool:
    return rel.endswith((".sh", ".bash", ".zsh", ".slurm", ".sbatch", ".pbs", ".qsub"))


@dataclass(frozen=True, slots=True)
class ShellRules:
    """The rules a shell command is read by."""

    env: EnvVarTable | None  # `match.env_vars`
    requirements: Sequence[Rule]  # `match.requirements`
    commands: TokenTable | None  # `match.tokens`, on a program's name
    settings: Sequence[Rule] = ()  # `match.config_values`, on options and overrides


def shell_findings(text: str, rel: str, rules: ShellRules) -> list[Finding]:
    found: list[Finding] = []
    for number, line in enumerate(text.split("\n"), start=1):
        directive = _SBATCH.match(line)  # read as the options it gives the job, columns kept
        code = " " * directive.end() + line[directive.end():] if directive else line
        found += _line_findings(number, code, line, rel, rules)
    return found



def cog_run_findings(text: str, rel: str, rules: ShellRules) -> list[Finding]:
    """The `build.run` commands of Replicate's `cog.yaml`, each read as a shell line where it is
    written (its first line; columns those of the file). Raises Diagnosis for broken YAML."""
    found: list[Finding] = []
    lines = text.split("\n")
    pos = 0
    for command in cog_commands(text):
        first = command.split("\n", 1)[0]
        at = text.find(first, pos) if first.strip() else -1
        if at < 0:
            continue
        pos = at + len(first)
        col = at - text.rfind("\n", 0, at) - 1
        number = text.count("\n", 0, at) + 1
        found += _line_findings(number, " " * col + first, lines[number - 1], rel, rules)
    return found


def task_spec_findings(text: str, rel: str, rules: ShellRules) -> list[Finding]:
    """The shell of a YAML file (`matchers.task_specs`): a SkyPilot, dstack or Azure ML launch
    spec's commands, and the environment variables any configuration sets, each read where it
    is written."""
    lines = text.split("\n")
    found: list[Finding] = []
    for number, command in task_commands(text):
        found += _line_findings(number, command, lines[number - 1], rel, rules)
    return found


def ipython_findings(cell: CodeCell, rel: str, rules: ShellRules) -> list[Finding]:
    """A notebook cell's IPython lines read as shell commands: the `!` of a shell escape, the `%`
    of a magic and the name of the `env` magic are read as spaces (`%env NAME=value` is then an
    assignment, `%pip install x` an install), so columns stay those of the cell."""
    found: list[Finding] = []
    for number, line in cell.ipython:
        command = _IPYTHON_PREFIX.sub(lambda m: m.group(1) + " " * (m.end() - m.end(1)), line, count=1)
        found += [replace(f, cell=cell.index) for f in _line_findings(number, command, line, rel, rules)]
    return found


def _line_findings(number: int, command: str, line: str, rel: str, rules: ShellRules) -> list[Finding]:
    """The findings of one line (`command`: the line as a shell reads it; `line`: as written).
    What `echo` or `printf` prints is a message, not a setting (blanked to spaces)."""
    code = _MESSAGE.sub(lambda m: m.group(1) + " " * (m.end() - m.end(1)), _COMMENT.sub("", command))
    found: list[Finding] = []
    env = rules.env
    names: list[re.Match[str]] = []
    if "=" in code or "$" in code:
        names = list(_ASSIGN.finditer(code))
        names += [m for m in _QUOTED_ASSIGN.finditer(code) if code.count('"', 0, m.start()) % 2]
        names += [m for m in _EXPANSION.finditer(code) if not code.count("'", 0, m.start()) % 2]
        names.sort(key=lambda m: m.start())
    if "unset" in code:
        names += [n for u in _UNSET.finditer(code) for n in _NAME.finditer(code, u.start(1), u.end(1))]
    if env is not None:
        for m in names:
            name = m.group(1)
            span = Span(number, m.start(1), number, m.end(1))
            found += [rule.finding(rel, span, name, line) for rule in env.match(name)]
    if rules.requirements and "install" in code:
        for install in _INSTALL.finditer(code):
            found += _installed(number, install, line, rel, rules.requirements)
    if rules.settings and ("--" in code or "=" in code):
        found += _settings(number, code, line, rel, rules.settings)
    if rules.commands is not None:
        blanked = _quotes_blanked(code)
        for program in (*_PROGRAM.finditer(blanked), *_LOOKUP.finditer(blanked)):
            name = program.group(1).rpartition("/")[2]
            hit = rules.commands.string(name) if name else None
            if hit is not None:
                span = Span(number, program.start(1), number, program.end(1))
                found += [rule.finding(rel, span, name, line) for rule in hit[1]]
        for m in names:
            if m.group(1) in _SEARCH_PATHS and m.group().endswith("="):
                found += _cuda_directory(number, code, m.end(), line, rel, rules.commands)
        if "module" in code or "ml " in code or "install" in code:
            found += _toolkit_installs(number, code, line, rel, rules.commands)
        if not found:  # a script's own variable with a CUDA word (`USE_CUDA=True`, `--cuda $CUDA`), once a line
            for m in names:
                word = rules.commands.name(m.group(1))
                if word is not None:
                    span = Span(number, m.start(1), number, m.end(1))
                    found += [rule.finding(rel, span, m.group(1), line) for rule in word[1]]
                    break
        if not found:  # ... or a value with one (`TRANSFORMER_IMPL=transformer_engine`), as a Python string's
            found += _assigned_values(number, code, names, line, rel, rules.commands)
    return found


# A variable that names or tags a run or a job holds a label, whatever words it strings together
# (`JOB_NAME=onebit_adam_4k_seq128_nccl`).
_LABEL = re.compile(r"(?:^|_)(?:NAME|TAG|LABEL|TITLE|PREFIX|SUFFIX)$", re.IGNORECASE)


def _assigned_values(number: int, code: str, names: list[re.Match[str]], line: str, rel: str,
                     commands: TokenTable) -> list[Finding]:
    """The first assignment of the line whose one-word value holds a CUDA word (not a search
    path's: its CUDA directories are `_cuda_directory`'s; nor text in single quotes, which
    assigns nothing: `python -c 'run(opts="--device=cuda")'` is Python, read as such)."""
    for m in names:
        if (not m.group().endswith("=") or m.group(1) in _SEARCH_PATHS or code.count("'", 0, m.start()) % 2
                or _LABEL.search(m.group(1))):
            continue
        value = _ASSIGNED.match(code, m.end())
        if value is None or value.lastindex is None:
            continue
        text, start = value.group(value.lastindex), value.start(value.lastindex)
        # A path names what its last part is: `/usr/bin/nvidia-smi` a CUDA tool, not
        # `tensorrt/logs` (a directory of the project's).
        hit = commands.string(text.rpartition("/")[2]) if text.rpartition("/")[2] else None
        if hit is not None:
            span = Span(number, start, number, start + len(text))
            return [rule.finding(rel, span, text, line) for rule in hit[1]]
    return []


def inline_python(text: str) -> list[tuple[int, int, str]]:
    """(line, column, code) of each `python -c` command's code in a shell script (comments and
    what `echo` prints left out), for the engine to analyse as Python."""
    out: list[tuple[int, int, str]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if "-c" not in line:
            continue
        code = _MESSAGE.sub(lambda m: m.group(1) + " " * (m.end() - m.end(1)), _COMMENT.sub("", line))
        for m in _INLINE_PYTHON.finditer(code):
            group = 1 if m.group(1) is not None else 2
            if m.group(group).strip():
                out.append((number, m.start(group), m.group(group)))
    return out


def _cuda_directory(number: int, code: str, start: int, line: str, rel: str, commands: TokenTable) -> list[Finding]:
    """The first directory with a CUDA word in a search path's value (`/usr/local/cuda-11.0/lib64`,
    `/opt/aws-ofi-nccl/lib`); not an expansion (`$CUDA_HOME/lib64`: the variable is reported)."""
    end = _VALUE.match(code, start).end()  # type: ignore[union-attr]
    for entry in _PATH_ENTRY.finditer(code, start, end):
        if entry.group().startswith("$"):
            continue
        for part in entry.group().split("/"):
            hit = commands.name(part) if part else None
            if hit is not None:
                span = Span(number, entry.start(), number, entry.end())
                return [rule.finding(rel, span, entry.group(), line) for rule in hit[1]]
    return []


def _toolkit_installs(number: int, code: str, line: str, rel: str, commands: TokenTable) -> list[Finding]:
    """The environment modules a line loads, and the system packages it installs, whose name holds
    a CUDA word (`cuda/11.8`, `nccl`; `apt-get install cudnn-cuda-12 libnccl2`)."""
    found: list[Finding] = []
    for load in (*_MODULE_LOAD.finditer(code), *_SYSTEM_INSTALL.finditer(code)):
        for arg in _ARGUMENT.finditer(load.group(1)):
            hit = commands.string(arg.group().partition("/")[0]) if not arg.group().startswith("-") else None
            if hit is not None:
                start = load.start(1) + arg.start()
                span = Span(number, start, number, start + len(arg.group()))
                found += [rule.finding(rel, span, arg.group(), line) for rule in hit[1]]
    return found


def _quotes_blanked(code: str) -> str:
    """`code` with quoted text blanked to spaces (same columns), but for the commands a double-quoted
    string runs (`"$(nvidia-smi -L)"`): a `|` in `"| Model | CUDA Mem |"` separates no commands."""
    def blank(m: re.Match[str]) -> str:
        text = m.group()
        if text[0] == "'":
            return "'" + " " * (len(text) - 2) + "'"
        kept = [" "] * len(text)
        for sub in _SUBSTITUTION.finditer(text):
            kept[sub.start():sub.end()] = sub.group()
        kept[0] = kept[-1] = '"'
        return "".join(kept)
    return _QUOTED.sub(blank, code)


def _settings(number: int, code: str, line: str, rel: str, rules: Sequence[Rule]) -> list[Finding]:
    """The options and overrides of a line that the configuration rules match."""
    found: list[Finding] = []
    # A bare flag is true, unless it says it turns its setting off (`--disable_flash_attn`).
    pairs = [(m, m.group(1), m.group(2) or m.group(3) or ("false" if _OFF.match(m.group(1)) else "true"))
             for m in _OPTION.finditer(code)]
    pairs += [(m, m.group(1), m.group(2)) for m in _OVERRIDE.finditer(code)]
    for m, key, value in pairs:
        name = key.rpartition(".")[2].lower().replace("-", "_")
        for rule in setting_rules(name, value.strip("\"'").lower(), rules):
            span = Span(number, m.start(), number, m.end())
            found.append(rule.finding(rel, span, m.group(), line))
    return found


def _installed(number: int, install: re.Match[str], line: str, rel: str, rules: Sequence[Rule]) -> list[Finding]:
    """The packages and package indexes of one install command."""
    found: list[Finding] = []
    args = list(_ARGUMENT.finditer(install.group(1)))
    base = install.start(1)
    index = False  # the previous argument was an index option: this one is its URL
    for arg in args:
        text = arg.group().strip("\"'")
        if index:
            keys: tuple[str, ...] = (f"index:{text}",)
            index = False
        elif text.startswith("-"):
            option, _, value = text.partition("=")
            if option in INDEX_OPTIONS:
                index = not value
                keys = (f"index:{value}",) if value else ()
            else:
                continue
        else:
            keys = requirement_keys(text)
        span = Span(number, base + arg.start(), number, base + arg.end())
        found += [rule.finding(rel, span, arg.group(), line) for rule in matching(keys, rules)]
    return found
