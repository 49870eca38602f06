"""Property tests: on many generated programs the rewriter never crashes, its output always
parses, and a second pass changes nothing. Programs are assembled from CUDA-ish snippets with
random imports, nesting, indentation, comments and newlines; hypothesmith adds arbitrary
grammatical Python when it is installed. Random edits check the safety net on its own."""

from __future__ import annotations

import ast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neuron_migrate.findings import Edit, Finding, Fix, FixClass, Severity, Span, Target
from neuron_migrate.rewrite.apply import apply_fixes_to_source, line_starts
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan.analyze import analyze_source

IMPORTS = [
    "import torch",
    "import torch as th",
    "import torch.nn as nn",
    "from torch.cuda.amp import autocast, GradScaler",
    "from torch.cuda.amp import autocast as ac",
    "from torch.cuda import synchronize, is_available",
    "from torch import cuda",
    "import torch.distributed as dist",
    "from torch.distributed.device_mesh import init_device_mesh",
    "from torch.amp import autocast as amp_autocast",
    "import os, argparse",
]
SNIPPETS = [
    'x = torch.zeros(3, device="cuda")',
    "y = x.to('cuda:1')",
    'z = x.to(f"cuda:{i}")',
    "d = torch.device('cuda', i)",
    'dev = "cuda" if torch.cuda.is_available() else "cpu"',
    "m = m.cuda()",
    "b = b.cuda(non_blocking=True)",
    "t = t.cuda(0).half()",
    "ok = x.is_cuda and y.is_cuda",
    "torch.cuda.synchronize()",
    "synchronize()",
    "cuda.synchronize()",
    "n = torch.cuda.device_count()",
    "torch.cuda.set_device(i)",
    "idx = torch.cuda.current_device()",
    "torch.cuda.empty_cache(); used = torch.cuda.max_memory_allocated()",
    "torch.cuda.manual_seed_all(0)",
    "s = torch.cuda.memory_stats()['allocated_bytes.all.peak']",
    "e = torch.cuda.Event(enable_timing=True)",
    "with torch.cuda.amp.autocast():\n    pass",
    "with autocast(dtype=torch.float16):\n    y = m(x)",
    "with ac():\n    pass",
    "scaler = GradScaler()",
    "scaler = torch.cuda.amp.GradScaler(init_scale=2.0 ** 16)",
    "with torch.autocast(device_type='cuda', dtype=torch.bfloat16):\n    pass",
    "with amp_autocast('cuda'):\n    pass",
    "dist.init_process_group(backend='nccl')",
    "dist.init_process_group(\n    'nccl',\n    init_method='env://',\n)",
    "mesh = init_device_mesh('cuda', (2, 4))",
    "model = torch.compile(model, mode='max-autotune')",
    "model = torch.compile(model)",
    "torch.backends.cudnn.benchmark = True",
    "torch.backends.cuda.matmul.allow_tf32 = True",
    "parser.add_argument('--device', default='cuda')",
    "th.cuda.synchronize()",
    "print('cuda')  # a string that is not a device",
    "x = torch.ones(\n    2,\n    device='cuda',  # inline\n)",
]
COMMENTS = ["", "  # comment", "  # type: ignore", "  # cuda here"]


@st.composite
def programs(draw: st.DrawFn) -> str:
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    indent = draw(st.sampled_from(["    ", "  ", "\t"]))
    lines: list[str] = []
    if draw(st.booleans()):
        lines += ['"""Module docstring."""']
    if draw(st.booleans()):
        lines.insert(0, "# -*- coding: utf-8 -*-")
    if draw(st.booleans()):
        lines.append("from __future__ import annotations")
    lines += draw(st.lists(st.sampled_from(IMPORTS), max_size=5, unique=True))
    body = [s + draw(st.sampled_from(COMMENTS)) if "\n" not in s else s
            for s in draw(st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=8))]
    wrap = draw(st.sampled_from(["top", "def", "if", "class"]))
    prefix = {"top": "", "def": indent, "if": indent, "class": indent * 2}[wrap]
    if wrap == "def":
        lines.append("def f(i, x, y, m, b, t, model, parser):")
    elif wrap == "if":
        lines.append("if __name__ == '__main__':")
    elif wrap == "class":
        lines += ["class C:", f"{indent}def run(self, i, x, m, b, t, model, parser):"]
    for snippet in body:
        for part in snippet.split("\n"):
            lines.append(prefix + part.replace("    ", indent))
        if draw(st.booleans()):
            lines.append("")
    if draw(st.booleans()):
        lines.append("late = torch.cuda.is_available()")
    text = newline.join(lines)
    return text + (newline if draw(st.booleans()) else "")


PACK = load_pack()


def _rewrite_twice(source: str, target: Target) -> None:
    first = apply_fixes_to_source(source, analyze_source(source, "p.py", PACK), target, unsafe=True)
    ast.parse(first.new_source)
    if first.error:
        assert first.new_source == source and first.applied == ()
        return
    if first.skipped:
        return  # an overlapping fix is left for the next run, so a second pass may change more
    second = apply_fixes_to_source(first.new_source, analyze_source(first.new_source, "p.py", PACK), target, unsafe=True)
    assert second.new_source == first.new_source, "a second rewrite changed the code again"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=programs(), target=st.sampled_from(list(Target)))
def test_generated_programs_rewrite_to_parsable_idempotent_code(source: str, target: Target) -> None:
    ast.parse(source)
    _rewrite_twice(source, target)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), source=programs())
def test_random_edits_never_crash_and_never_produce_unparsable_code(data: st.DataObject, source: str) -> None:
    starts = line_starts(source)
    lines = source.splitlines()
    findings = []
    for n in range(data.draw(st.integers(1, 4))):
        line = data.draw(st.integers(1, len(starts) + 1))
        width = len(lines[line - 1]) if line <= len(lines) else 0
        col = data.draw(st.integers(0, width + 2))
        end_line = data.draw(st.integers(line, line + 1))
        end_col = data.draw(st.integers(0, width + 3))
        replacement = data.draw(st.sampled_from(["", "'neuron'", "(", "torch.neuron.x", "\n", "a b", "é"]))
        add = data.draw(st.sampled_from([(), ("import torch",), ("from torch.amp import GradScaler",), ("not an import",)]))
        remove = data.draw(st.sampled_from([(), ("torch.cuda.amp.autocast",), ("torch.cuda",)]))
        span = Span(line, col, end_line, end_col)
        fix = Fix(Target.NEURON, FixClass.SAFE, "t", (Edit(span, replacement),), add, remove)
        findings.append(Finding(f"NM{100 + n}", Severity.WARNING, FixClass.SAFE, "device", "p.py", span, "m", fixes=(fix,)))
    result = apply_fixes_to_source(source, findings, Target.NEURON, unsafe=False)
    ast.parse(result.new_source)
    assert len(result.applied) + len(result.skipped) == len(findings)
    if result.error or not result.applied:
        assert result.new_source == source


hypothesmith = pytest.importorskip("hypothesmith")


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(source=hypothesmith.from_grammar(), target=st.sampled_from(list(Target)))
def test_arbitrary_grammatical_python_never_crashes(source: str, target: Target) -> None:
    try:
        findings = analyze_source(source, "p.py", PACK)
    except (SyntaxError, ValueError):
        return  # the scan reports these as NM001; there is nothing to rewrite
    result = apply_fixes_to_source(source, findings, target, unsafe=True)
    ast.parse(result.new_source)
