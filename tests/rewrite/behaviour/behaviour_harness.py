"""The behaviour harness (shared by test_behaviour and test_generated): programs run before and after `rewrite --apply` (safe fixes), per target.

Before = on the emulated `neuron` device for the neuron target, and with no accelerator at all
for the accelerator target (the CPU torch wheel). A program that exited 0 before must exit 0
after, printing the same lines; the one intended change is the device a program picks: with the
neuron target a printed `cpu` may become `neuron[:i]` (`picked cpu` -> `picked neuron`). Timings and memory
figures are masked. Programs: one per guard idiom (programs/), and the sample projects.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from neuron_migrate.api import rewrite_paths
from neuron_migrate.config import Settings
from neuron_migrate.findings import Target
from neuron_migrate.rewrite.engine import FileStatus

HERE = Path(__file__).parent
SAMPLES = HERE.parents[2] / "sample_projects"
RUNNER = HERE / "runner.py"
# sample project -> (entry point, arguments that keep it tiny)
SAMPLE_RUNS = {
    "custom_kernels": ("train.py", ["--steps", "2"]),
    "gpt_train": ("train.py", ["--steps", "2", "--eval-iters", "1"]),
    "vision_cnn": ("train.py", ["--steps", "2"]),
    "hf_inference": ("generate.py", []),
}
# Samples that cannot run before (they name "cuda" outright) and that the safe rewrite makes run.
# (vision_cnn's `.cuda()` receivers are not evidently tensors or modules, so moving them is
# unsafe; hf_inference times with `torch.cuda.Event`, which has no automatic rewrite.)
RUN_AFTER_NEURON_REWRITE = {"gpt_train"}

_MASKS = (re.compile(r"\d+(?:\.\d+)?\s*(?:ms|s|[KMG]i?B)\b"),)
# The intended change: the device a program picks (`picked cpu`, `device=cpu`) becomes neuron.
_DEVICE = re.compile(r"\b(?:cpu|neuron(?::\d+)?)\b")


@dataclass(frozen=True)
class Program:
    name: str
    path: Path  # inside the working copy
    args: tuple[str, ...] = ()


def _env(target: Target) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEURON_MIGRATE_", "CUDA_"))}
    env["CUDA_VISIBLE_DEVICES"] = ""
    if target is Target.NEURON:
        env["NEURON_MIGRATE_EMULATE"] = "1"
    return env


def _run_all(programs: list[Program], target: Target) -> list[dict[str, object]]:
    spec = [{"path": str(p.path), "args": list(p.args), "cwd": str(p.path.parent), "timeout": 240} for p in programs]
    done = subprocess.run([sys.executable, str(RUNNER)], input=json.dumps(spec), capture_output=True,
                          text=True, env=_env(target), timeout=900, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _lines(out: str) -> list[str]:
    text = out
    for mask in _MASKS:
        text = mask.sub("<n>", text)
    return text.splitlines()


def _same(before: str, after: str, target: Target) -> str:
    """'' when `after` prints what `before` did (but for the intended device change), else why."""
    a, b = _lines(before), _lines(after)
    if len(a) != len(b):
        return f"printed {len(b)} lines, not {len(a)}:\n  before: {a}\n  after:  {b}"
    for x, y in zip(a, b):
        if x == y:
            continue
        if target is Target.NEURON and "neuron" in y and _DEVICE.sub("<device>", x) == _DEVICE.sub("<device>", y):
            continue
        return f"printed {y!r} where it printed {x!r}"
    return ""


def _working_copy(tmp_path: Path) -> list[Program]:
    root = tmp_path / "work"
    shutil.copytree(HERE / "programs", root / "programs")
    programs = [Program(p.stem, p) for p in sorted((root / "programs").glob("*.py"))]
    for name, (entry, args) in SAMPLE_RUNS.items():
        shutil.copytree(SAMPLES / name, root / name)
        programs.append(Program(name, root / name / entry, tuple(args)))
    return programs


def _rewrite(root: Path, target: Target) -> None:
    settings = Settings(target=target, unsafe_fixes=False, respect_gitignore=False)
    result = rewrite_paths([root], settings, apply=True, unsafe=False, allow_dirty=True, target=target, use_cache=False)
    broken = [o for o in result.files if o.status is FileStatus.SKIPPED and o.reason.startswith("internal error")]
    assert not broken, broken


