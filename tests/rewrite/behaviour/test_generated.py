"""Property: generated programs that ran before the rewrite still run after it, printing the same
(but for the device they pick). Each example is a batch of programs built from the guard idioms
of issue 13, so one pair of runner processes covers many programs."""

from __future__ import annotations

from pathlib import Path

import pytest
from behaviour_harness import Program, _rewrite, _run_all, _same
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neuron_migrate.findings import Target

PICKS = (
    'device = "cuda" if torch.cuda.is_available() else "cpu"\n',
    'device = "cpu"\nif torch.cuda.is_available():\n    device = "cuda"\n',
    'device = str(torch.device("cuda" if torch.cuda.is_available() else "cpu"))\n',
    'device = "cuda:0" if torch.cuda.device_count() > 0 else "cpu"\n',
)
EXTRAS = (
    "if torch.cuda.is_available():\n    torch.cuda.synchronize()\n",
    'if torch.cuda.is_available():\n    cap = torch.cuda.get_device_capability()\n    print("cap", cap)\n',
    'flag = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8\nprint("flag", flag)\n',
    'name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"\nprint("name", name)\n',
    'if device.startswith("cuda"):\n    torch.backends.cudnn.benchmark = True\n    print("bench on")\n',
    'ok = device.split(":")[0] in ("cuda", "cpu")\nprint("listed", ok)\n',
    'use_cuda = torch.cuda.is_available()\nif use_cuda:\n    major, _ = torch.cuda.get_device_capability()\n    print("major", major)\n',
    'if "cuda" in device:\n    props = torch.cuda.get_device_properties(0)\n    print("mem", props.total_memory)\n',
    'def on_gpu(t):\n    return t.device.type == "cuda"\nprint("on gpu", on_gpu(torch.ones(1)))\n',
    ("def check():\n    assert torch.cuda.is_available(), \"CUDA needed\"\n    return torch.cuda.get_device_name(0)\n"
     'try:\n    print(check())\nexcept AssertionError as exc:\n    print("no:", exc)\n'),
    'torch.manual_seed(0)\nif torch.cuda.is_available():\n    torch.cuda.manual_seed_all(0)\nprint("r", round(torch.rand(1).item(), 6))\n',
    'def setup(use_gpu):\n    if use_gpu:\n        print("cap", torch.cuda.get_device_capability())\nsetup(torch.cuda.is_available())\n',
    ('def pick(gpu=torch.cuda.is_available()):\n    return torch.cuda.get_device_name(0) if gpu else "none"\n'
     'print("name", pick())\n'),
    ('if torch.cuda.is_available():\n    torch.backends.cudnn.benchmark = True\nelif len(__file__) > 1:\n    print("fallback")\n'
     'else:\n    print("other")\n'),
)

program_text = st.builds(
    lambda pick, extras, k: "import torch\n\n" + pick + "".join(extras)
    + f'print("picked", device)\nx = torch.arange(6.0, device=device).reshape(2, 3)\nprint("sum", (x * {k}).sum().item())\n',
    st.sampled_from(PICKS),
    st.lists(st.sampled_from(EXTRAS), max_size=3, unique=True),
    st.integers(1, 9),
)


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(program_text, min_size=6, max_size=6, unique=True), target=st.sampled_from(list(Target)))
def test_generated_programs_still_run_after_the_rewrite(tmp_path_factory: pytest.TempPathFactory,
                                                        batch: list[str], target: Target) -> None:
    root = tmp_path_factory.mktemp("gen")
    programs = []
    for i, text in enumerate(batch):
        path = root / f"p{i}.py"
        path.write_text(text, encoding="utf-8")
        programs.append(Program(path.stem, path))
    before = _run_all(programs, target)
    assert all(r["rc"] == 0 for r in before), [(p.path.read_text(), r["stderr"]) for p, r in zip(programs, before)]
    _rewrite(root, target)
    after = _run_all(programs, target)
    for program, old, new in zip(programs, before, after):
        text = Path(program.path).read_text(encoding="utf-8")
        assert new["rc"] == 0, f"{text}\n{new['stderr'][-1500:]}"
        assert _same(str(old["stdout"]), str(new["stdout"]), target) == "", text
