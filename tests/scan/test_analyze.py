"""The analyzer against a small hand-built pack: alias resolution, device-selecting contexts, the
never-flag cases, character columns, env-var access forms, argument values and fix edits."""

from __future__ import annotations

import textwrap

import pytest

from neuron_migrate.findings import Finding, FixClass, Severity, Span, Target
from neuron_migrate.ruleset.model import (
    ArgumentPattern,
    FixKind,
    FixSpec,
    Match,
    Rule,
    RulePack,
    TargetFix,
)
from neuron_migrate.scan.analyze import analyze_file_path, analyze_source

N, A = Target.NEURON, Target.ACCELERATOR


def _rule(code: str, match: Match, fix_class: FixClass = FixClass.MANUAL, **targets: TargetFix) -> Rule:
    return Rule(
        code=code, name=f"rule-{code.lower()}", title=code, category="device", severity=Severity.WARNING,
        match=match, fix=FixSpec(fix_class, {Target(k): v for k, v in targets.items()}, "changes things"),
        message="`{symbol}` found", why="because", references=(), invalid=(), valid=(),
    )


RULES = [
    _rule("NM101", Match(device_strings=("cuda",)), FixClass.SAFE,
          neuron=TargetFix(FixKind.DEVICE_STRING, "neuron"),
          accelerator=TargetFix(FixKind.FIXER, "accelerator_device_string")),
    _rule("NM102", Match(arguments=(ArgumentPattern((".cuda",), "device", 0, missing=True),)), FixClass.SAFE,
          neuron=TargetFix(FixKind.FIXER, "cuda_method"), accelerator=TargetFix(FixKind.FIXER, "cuda_method")),
    _rule("NM104", Match(attributes=("is_cuda",))),
    _rule("NM110", Match(methods=("double",))),
    _rule("NM206", Match(qualified_names=("torch.cuda.synchronize",)), FixClass.SAFE,
          neuron=TargetFix(FixKind.RENAME, "torch.neuron.synchronize"),
          accelerator=TargetFix(FixKind.RENAME, "torch.accelerator.synchronize")),
    _rule("NM207", Match(qualified_names=("torch.cuda.memory.*", "torch.cuda.empty_cache")), FixClass.SAFE,
          neuron=TargetFix(FixKind.RENAME, "torch.neuron.{name}")),
    _rule("NM299", Match(qualified_names=("torch.cuda.*",))),
    _rule("NM301", Match(qualified_names=("torch.cuda.amp.autocast",)), FixClass.UNSAFE,
          neuron=TargetFix(FixKind.FIXER, "amp_autocast"), accelerator=TargetFix(FixKind.FIXER, "amp_autocast")),
    _rule("NM401", Match(arguments=(ArgumentPattern(("torch.distributed.init_process_group",), "backend", 0,
                                                    values=("nccl",)),)), FixClass.SAFE,
          neuron=TargetFix(FixKind.DEVICE_STRING, "neuron")),
    _rule("NM503", Match(arguments=(ArgumentPattern(("torch.compile",), "mode", not_values=("default", None)),)),
          FixClass.UNSAFE, neuron=TargetFix(FixKind.REMOVE_ARGUMENT)),
    _rule("NM504", Match(arguments=(ArgumentPattern(("torch.compile",), "dynamic", values=(True,)),))),
    _rule("NM601", Match(qualified_names=("torch.backends.cudnn.benchmark",)), FixClass.UNSAFE,
          neuron=TargetFix(FixKind.REMOVE_STATEMENT)),
    _rule("NM107", Match(env_vars=("CUDA_VISIBLE_DEVICES",))),
    _rule("NM219", Match(env_vars=("CUDA_*",))),
    _rule("NM703", Match(files=("*.cu", "*.cuh"))),
    _rule("NM704", Match(imports=("triton", "triton.*"))),
    _rule("NM705", Match(qualified_names=("triton.jit",))),
]
PACK = RulePack(name="t", version="1", neuron_sdk="2.33", torch_neuronx="2.14", provenance="tests",
                rules={r.code: r for r in RULES})


def scan(code: str) -> list[Finding]:
    return analyze_source(textwrap.dedent(code), "t.py", PACK)


def codes(code: str) -> list[tuple[str, int, int, str]]:
    return [(f.code, f.span.line, f.span.col, f.symbol) for f in scan(code)]


def fixed(code: str, target: Target = N) -> str:
    from neuron_migrate.rewrite.apply import apply_fixes_to_source

    src = textwrap.dedent(code)
    result = apply_fixes_to_source(src, analyze_source(src, "t.py", PACK), target, unsafe=True)
    assert not result.error and not result.skipped
    return result.new_source


# --- aliases ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "symbol"),
    [
        ("import torch\ntorch.cuda.synchronize()\n", "torch.cuda.synchronize"),
        ("import torch as th\nth.cuda.synchronize()\n", "torch.cuda.synchronize"),
        ("import torch.cuda as tc\ntc.synchronize()\n", "torch.cuda.synchronize"),
        ("from torch import cuda\ncuda.synchronize()\n", "torch.cuda.synchronize"),
        ("from torch.cuda import synchronize as sync\nsync()\n", "torch.cuda.synchronize"),
        ("import torch.cuda\ntorch.cuda.synchronize()\n", "torch.cuda.synchronize"),
        ("from torch.cuda import *\nsynchronize()\n", "torch.cuda.synchronize"),
        ("torch.cuda.synchronize()\n", "torch.cuda.synchronize"),  # a notebook cell: torch imported elsewhere
    ],
)
def test_aliases_resolve(code: str, symbol: str) -> None:
    assert [(f.code, f.symbol) for f in scan(code)] == [("NM206", symbol)]


def test_amp_aliases_resolve() -> None:
    assert codes("from torch.cuda.amp import autocast\nwith autocast():\n    pass\n")[0][:2] == ("NM301", 2)
    assert codes("from torch.cuda import amp\nwith amp.autocast():\n    pass\n")[0][:2] == ("NM301", 2)


def test_relative_and_unbound_names_do_not_resolve() -> None:
    assert codes("from . import cuda\ncuda.synchronize()\n") == []
    assert codes("from .torch import cuda\ncuda.synchronize()\n") == []
    assert codes("def synchronize():\n    pass\nsynchronize()\n") == []
    assert codes("from mylib import torch\n") == []


def test_most_specific_pattern_wins_once_per_chain() -> None:
    # torch.cuda.* and torch.cuda.memory.* both match: the longer pattern wins, one finding.
    assert codes("import torch\ntorch.cuda.memory.empty_cache()\n") == [
        ("NM207", 2, 0, "torch.cuda.memory.empty_cache")]
    # exact beats glob
    assert codes("import torch\ntorch.cuda.empty_cache()\n") == [("NM207", 2, 0, "torch.cuda.empty_cache")]
    assert codes("import torch\ntorch.cuda.ipc_collect()\n") == [("NM299", 2, 0, "torch.cuda.ipc_collect")]
    # a chain broken by a call is two chains
    assert [c[0] for c in codes("import torch\ntorch.cuda.current_stream().synchronize()\n")] == ["NM299"]


def test_nested_attribute_chain_reports_the_outermost_match() -> None:
    found = codes("import torch\nx = torch.backends.cudnn.benchmark.real\ntorch.backends.cudnn.benchmark = True\n")
    assert found == [("NM601", 2, 4, "torch.backends.cudnn.benchmark"), ("NM601", 3, 0, "torch.backends.cudnn.benchmark")]


def test_decorator_and_imports() -> None:
    found = codes("""\
        import triton
        import triton.language as tl
        from triton import jit

        @triton.jit
        def k(x):
            pass

        @jit
        def k2(x):
            pass
        """)
    assert [(c, line) for c, line, _, _ in found] == [("NM704", 1), ("NM704", 2), ("NM704", 3), ("NM705", 5), ("NM705", 9)]
    decorator = next(f for f in scan("import triton\n\n@triton.jit\ndef k():\n    pass\n") if f.code == "NM705")
    assert decorator.statement_line == 3 and decorator.span == Span(3, 1, 3, 11)


# --- device strings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        'x = torch.zeros(3, device="cuda")',
        "x = t.to('cuda:1')",
        "x = t.to(f'cuda:{rank}')",
        "d = torch.device('cuda', i)",
        "torch.set_default_device('cuda')",
        "m = torch.load(f, 'cuda')",
        "m = torch.load(f, map_location='cuda:0')",
        "parser.add_argument('--device', default='cuda', help='cuda or cpu')",
        "device = 'cuda'",
        "self.device = 'cuda:0'",
        "cfg['device'] = 'cuda'",
        "config = {'device': 'cuda'}",
        "ok = 'cuda' in device",
        "ok = device == 'cuda'",
        "ok = x.device.type != 'cuda'",
        "ok = str(device).startswith('cuda')",
        "ok = args.device in ('cuda', 'mps')",
        "d = 'cuda' if torch.cuda.is_available() else 'cpu'",
        "x = t.to('cuda:%d' % rank)",
        "x = t.to('cuda:{}'.format(rank))",
        "x = t.to('cuda:' + str(rank))",
        "def f(device='cuda'):\n    pass",
        "def get_device():\n    return 'cuda'",
        "match device:\n    case 'cuda':\n        pass",
        "class Cfg:\n    device: str = field(default='cuda')",
    ],
)
def test_device_strings_where_they_select_a_device(code: str) -> None:
    assert [f.code for f in scan(code + "\n") if f.code == "NM101"] == ["NM101"], code


@pytest.mark.parametrize(
    "code",
    [
        '"""Runs on cuda when available."""',
        "# x.to('cuda')",
        "print('cuda')",
        "logger.info('moving to cuda')",
        "raise RuntimeError('cuda is required')",
        "parser.add_argument('--device', default='cpu', help='cuda')",
        "use_cuda = True",
        "cuda_kernels = 'cuda'",  # the name contains cuda, it does not hold a device
        "x = model.to(device)",
        "x = torch.accelerator.current_accelerator()",
        "name = 'cuda'",
        "ok = kind == 'cuda'",
        "x = t.to('cudaX')",
        "x = t.to(f'cuda{rank}')",
        "d = 'cuda' if ok else 'fast'",
    ],
)
def test_never_flagged(code: str) -> None:
    assert scan(code + "\n") == [], code


def test_columns_are_characters_after_non_ascii_text() -> None:
    (f,) = scan('x = ("é€😀", t.to("cuda"))\n')
    assert f.span == Span(1, 17, 1, 23)
    assert f.source_line[f.span.col : f.span.end_col] == '"cuda"'
    neuron = f.fix_for(N)
    assert neuron is not None and neuron.edits[0].span == Span(1, 18, 1, 22)


def test_fstring_fixes_keep_their_parts() -> None:
    assert fixed("y = x.to(f'cuda:{rank}')\n") == "y = x.to(f'neuron:{rank}')\n"
    assert fixed("y = x.to(f'cuda:{rank}')\n", A) == (
        "import torch\n\ny = x.to(f'{(torch.accelerator.current_accelerator() or torch.device(\"cpu\")).type}:{rank}')\n")
    assert fixed("import torch\ny = x.to('cuda:{}'.format(r))\n", A) == (
        "import torch\ny = x.to(f'{(torch.accelerator.current_accelerator() or torch.device(\"cpu\")).type}:{{}}'.format(r))\n")


def test_statement_line_is_the_first_line_of_a_multiline_statement() -> None:
    (f,) = scan("x = torch.zeros(\n    3,\n    device='cuda',\n)\n")
    assert (f.span.line, f.statement_line) == (3, 1)


# --- methods, attributes, arguments --------------------------------------------------------------


def test_methods_and_attributes_skip_modules() -> None:
    assert [c[0] for c in codes("import torch\ny = x.double()\nz = torch.double\nok = x.is_cuda\n")] == [
        "NM110", "NM104"]
    assert codes("import numpy as np\ny = np.double(1)\n") == []


def test_cuda_method_fix_keeps_other_arguments() -> None:
    assert fixed("y = x.cuda(non_blocking=True)\n") == 'y = x.to("neuron", non_blocking=True)\n'
    assert fixed("import torch as th\ny = x.cuda()\n", A) == "import torch as th\ny = x.to(th.accelerator.current_accelerator())\n"
    assert codes("y = x.cuda(0)\n") == []  # NM102 is only the argument-less form


def test_argument_values_literal_and_through_variables() -> None:
    base = "import torch.distributed as dist\n"
    assert [c[0] for c in codes(base + "dist.init_process_group('nccl')\n")] == ["NM401"]
    assert [c[0] for c in codes(base + "dist.init_process_group(backend='gloo')\n")] == []
    via_default = base + "def setup(backend='nccl'):\n    dist.init_process_group(backend=backend)\n"
    assert [c[0] for c in codes(via_default)] == ["NM401"]
    assert fixed(via_default) == base + "def setup(backend='neuron'):\n    dist.init_process_group(backend=backend)\n"
    via_const = base + "def setup():\n    dist.init_process_group(BACKEND)\nBACKEND = 'nccl'\n"
    assert [(f.code, f.symbol) for f in scan(via_const)] == [("NM401", "torch.distributed.init_process_group(BACKEND (= 'nccl'))")]
    via_argparse = base + "p.add_argument('--dist-backend', default='nccl')\ndist.init_process_group(args.dist_backend)\n"
    assert [c[0] for c in codes(via_argparse)] == ["NM401"]
    assert [c[0] for c in codes(base + "def setup(backend):\n    dist.init_process_group(backend)\nbackend = 'nccl'\n")] == []
    shadowed = base + "BACKEND = 'nccl'\ndef setup():\n    BACKEND = pick()\n    dist.init_process_group(BACKEND)\n"
    assert [c[0] for c in codes(shadowed)] == []


def test_bool_values_do_not_match_numbers() -> None:
    assert [c[0] for c in codes("import torch\nm = torch.compile(m, dynamic=True)\n")] == ["NM504"]
    assert codes("import torch\nm = torch.compile(m, dynamic=1)\n") == []


def test_remove_argument_takes_its_comma() -> None:
    assert fixed("import torch\nm = torch.compile(m, mode='max-autotune', fullgraph=True)\n") == (
        "import torch\nm = torch.compile(m, fullgraph=True)\n")
    assert fixed("import torch\nm = torch.compile(m, mode='max-autotune')\n") == "import torch\nm = torch.compile(m)\n"


def test_rename_keeps_the_alias_style_and_adds_imports() -> None:
    assert fixed("import torch as th\nth.cuda.synchronize()\n") == "import torch as th\nth.neuron.synchronize()\n"
    assert fixed("import torch.cuda as tc\ntc.synchronize()\n") == "import torch\ntorch.neuron.synchronize()\n"
    assert fixed("import torch\ntorch.cuda.memory.empty_cache()\n") == "import torch\ntorch.neuron.empty_cache()\n"
    (f,) = scan("from torch.cuda import synchronize\nsynchronize()\n")
    fix = f.fix_for(A)
    assert fix is not None and fix.add_imports == ("import torch",) and fix.remove_imports == ("torch.cuda.synchronize",)


def test_amp_autocast_turns_positional_arguments_into_keywords() -> None:
    assert fixed("import torch\nwith torch.cuda.amp.autocast(True, torch.bfloat16):\n    pass\n") == (
        'import torch\nwith torch.autocast("neuron", enabled=True, dtype=torch.bfloat16):\n    pass\n')


def test_remove_statement_keeps_blocks_non_empty() -> None:
    code = "import torch\nif fast():\n    torch.backends.cudnn.benchmark = True\n"
    assert fixed(code) == "import torch\nif fast():\n    pass\n"
    # A test that only asks (no call outside torch) goes with its emptied block: no `if x: pass`.
    assert fixed("import torch\nif fast:\n    torch.backends.cudnn.benchmark = True\n") == "import torch\n"


# --- env vars ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        "os.environ['CUDA_VISIBLE_DEVICES'] = '0'",
        "v = os.environ['CUDA_VISIBLE_DEVICES']",
        "v = os.environ.get('CUDA_VISIBLE_DEVICES')",
        "v = os.getenv('CUDA_VISIBLE_DEVICES', '')",
        "os.environ.setdefault('CUDA_VISIBLE_DEVICES', '0')",
        "os.putenv('CUDA_VISIBLE_DEVICES', '0')",
        "ok = 'CUDA_VISIBLE_DEVICES' in os.environ",
        "os.environ.pop('CUDA_VISIBLE_DEVICES', None)",
        "os.environ.update({'CUDA_VISIBLE_DEVICES': '0'})",
        "os.environ.update(CUDA_VISIBLE_DEVICES='0')",
        "env = dict(os.environ, CUDA_VISIBLE_DEVICES='0')",
        "subprocess.run(cmd, env={**os.environ, 'CUDA_VISIBLE_DEVICES': '0'})",
        "env = os.environ.copy()\nenv['CUDA_VISIBLE_DEVICES'] = '0'",
        "from os import environ\nenviron['CUDA_VISIBLE_DEVICES'] = '0'",
        "monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '0')",
        # a dict handed to a worker's environment (horovod's `worker.update_env_vars.remote({...})`)
        "worker.update_env_vars.remote({'CUDA_VISIBLE_DEVICES': ids})",
    ],
)
def test_env_vars_in_every_access_form(code: str) -> None:
    assert [(f.code, f.symbol) for f in scan("import os\n" + code + "\n")] == [("NM107", "CUDA_VISIBLE_DEVICES")]


def test_env_var_most_specific_glob_and_never_in_messages() -> None:
    assert [f.code for f in scan("import os\nos.environ['CUDA_HOME'] = '/x'\n")] == ["NM219"]
    assert scan("print('set CUDA_VISIBLE_DEVICES first')\nx = {'CUDA_VISIBLE_DEVICES is set': 1}\n") == []


# --- files, errors --------------------------------------------------------------------------------


def test_file_matches() -> None:
    (f,) = analyze_file_path("csrc/kernels/add.cu", PACK)
    assert (f.code, f.span.line, f.symbol) == ("NM703", 1, "add.cu")
    assert analyze_file_path("src/add.cpp", PACK) == []


def test_unparsable_source_raises() -> None:
    with pytest.raises(SyntaxError):
        analyze_source("print 'python 2'\n", "t.py", PACK)
    with pytest.raises((SyntaxError, ValueError)):
        analyze_source("x = 1\0\n", "t.py", PACK)


def test_findings_are_sorted_and_carry_the_source_line() -> None:
    found = scan("import torch\ntorch.cuda.synchronize(); x.to('cuda')\n")
    assert [(f.code, f.span.col) for f in found] == [("NM206", 0), ("NM101", 31)]
    assert all(f.source_line == "torch.cuda.synchronize(); x.to('cuda')" for f in found)


def test_analysis_with_fixes_imports_neither_torch_nor_libcst() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from neuron_migrate.ruleset.load import load_pack\n"
        "from neuron_migrate.scan.analyze import analyze_source\n"
        "src = 'import torch\\nx = torch.zeros(1).cuda()\\nwith torch.cuda.amp.autocast():\\n    pass\\n'\n"
        "assert all(f.fixes for f in analyze_source(src, 'a.py', load_pack()) if f.code in ('NM102', 'NM301'))\n"
        "print(sorted(m for m in ('torch', 'libcst') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
