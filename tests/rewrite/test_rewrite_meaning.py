"""A fix never changes what a program does other than the device it picks (issue 13): the guard
rule, device types as data, the accelerator target without an accelerator, and fixes that rely on
facts they cannot see. Real scan + rewrite of small sources."""

from __future__ import annotations

import textwrap
from dataclasses import replace

from neuron_migrate.findings import Finding, FixClass, Target
from neuron_migrate.rewrite.apply import apply_fixes_to_source
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan.analyze import analyze_source

PACK = load_pack(())
N, A = Target.NEURON, Target.ACCELERATOR


def scan(source: str) -> list[Finding]:
    return analyze_source(textwrap.dedent(source), "m.py", PACK)


def fixed(source: str, target: Target = N, *, unsafe: bool = False) -> str:
    source = textwrap.dedent(source)
    return apply_fixes_to_source(source, scan(source), target, unsafe=unsafe).new_source


def test_a_guard_around_code_with_no_neuron_equivalent_stays_with_its_block() -> None:
    src = """\
        import torch

        use_flash = False
        if torch.cuda.is_available():
            major, _ = torch.cuda.get_device_capability()
            use_flash = major >= 8
        """
    for target in Target:
        assert fixed(src, target, unsafe=True) == textwrap.dedent(src)
    guard = next(f for f in scan(src) if f.code == "NM201")
    assert guard.fix_class is FixClass.MANUAL and not guard.fixes
    assert "torch.cuda.get_device_capability" in guard.message and "line 5" in guard.message


def test_a_guard_whose_block_is_all_fixable_moves_with_it() -> None:
    src = """\
        import torch

        device = "cpu"
        if torch.cuda.is_available():
            device = "cuda"
            torch.cuda.synchronize()
        """
    assert fixed(src) == textwrap.dedent("""\
        import torch

        device = "cpu"
        if torch.neuron.is_available():
            device = "neuron"
            torch.neuron.synchronize()
        """)


def test_ternary_and_chain_assert_and_comparisons_are_guards() -> None:
    sources = [
        'import torch\nname = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"\n',
        "import torch\nfast = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8\n",
        'import torch\ndef f():\n    assert torch.cuda.is_available(), "needs CUDA"\n    return torch.cuda.get_device_name(0)\n',
        'import torch\ndef f(device):\n    if device == "cuda":\n        return torch.cuda.get_device_properties(0).name\n',
        'import torch\ndef f(device):\n    if "cuda" in device:\n        return torch.cuda.get_device_name()\n',
    ]
    for src in sources:
        for target in Target:
            assert fixed(src, target, unsafe=True) == src, (src, target)


def test_the_else_branch_and_code_outside_the_guard_are_still_fixed() -> None:
    src = """\
        import torch

        if torch.cuda.is_available():
            cap = torch.cuda.get_device_capability()
        x = torch.zeros(2, device="cuda")
        """
    out = fixed(src)
    assert "if torch.cuda.is_available():" in out and 'device="neuron"' in out


def test_a_blocked_inner_guard_holds_the_outer_one() -> None:
    src = """\
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
            if torch.cuda.device_count() > 1:
                cap = torch.cuda.get_device_capability()
        """
    assert fixed(src) == textwrap.dedent(src)


def test_an_unsafe_fix_left_out_holds_its_guard_at_rewrite_time() -> None:
    src = """\
        import torch

        torch.manual_seed(0)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(0)
        """
    assert fixed(src) == textwrap.dedent(src)  # NM209 is unsafe: without opt-in the guard stays
    assert "torch.neuron.is_available()" in fixed(src, unsafe=True)
    findings = scan(src)
    check = next(f for f in findings if f.code == "NM201")
    # The scan says so: the check's fix moves only with NM209's, so it is unsafe too.
    assert check.fix_class is FixClass.UNSAFE
    assert ("the guard at line 4 moves only with --unsafe-fixes: it guards `torch.cuda.manual_seed_all` "
            "(NM209, line 5), whose fix is unsafe") in check.fix_for(N).title  # type: ignore[union-attr]
    # The rewrite holds it all the same when a finding list calls it safe (one from an earlier scan).
    told = [replace(f, fix_class=FixClass.SAFE, fixes=tuple(replace(x, applicability=FixClass.SAFE) for x in f.fixes))
            if f is check else f for f in findings]
    result = apply_fixes_to_source(textwrap.dedent(src), told, N, unsafe=False)
    assert not result.applied and any("guard at line 4 stays" in s.reason for s in result.skipped)


def test_listed_device_types_get_a_neuron_entry_beside_the_cuda_one() -> None:
    src = 'def f(device):\n    return device.type in ("cuda", "xpu")\n'
    for target in Target:  # (unsafe: the comparison's value leaves the file, returned)
        out = fixed(src, target, unsafe=True)
        assert out == 'def f(device):\n    return device.type in ("cuda", "neuron", "xpu")\n'
        assert fixed(out, target, unsafe=True) == out  # converges: no second entry, no finding left
    assert not scan('def f(device):\n    return device.type in ("cuda", "neuron")\n')


def test_accelerator_placement_falls_back_to_cpu_and_comparisons_never_match_without_one() -> None:
    out = fixed('import torch\nDEVICE = "cuda"\ndef on(x):\n    return x.device.type == "cuda"\n', A, unsafe=True)
    assert 'DEVICE = (torch.accelerator.current_accelerator() or torch.device("cpu")).type' in out
    assert 'x.device.type == getattr(torch.accelerator.current_accelerator(), "type", "no accelerator")' in out
    import torch  # the CPU wheel: no accelerator, as on a plain CI machine

    namespace: dict[str, object] = {}
    exec(compile(out, "m.py", "exec"), namespace)
    assert namespace["DEVICE"] == "cpu"
    assert namespace["on"](torch.ones(1)) is False  # type: ignore[operator]


def test_accelerator_fstring_uses_the_other_quote_for_python_311() -> None:
    out = fixed('x = t.to("cuda:1")\ny = t.to(f"cuda:{i}")\n', A, unsafe=True)
    assert "torch.device('cpu')" in out.splitlines()[-2] and "torch.device('cpu')" in out.splitlines()[-1]
    compile(out, "m.py", "exec")  # 3.11 grammar: the same quote may not nest


def test_accelerator_autocast_stays_off_without_an_accelerator() -> None:
    out = fixed('import torch\nwith torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=flag):\n    pass\n',
                A, unsafe=True)
    assert "enabled=flag and torch.accelerator.is_available()" in out
    out = fixed("import torch\nwith torch.cuda.amp.autocast(True):\n    pass\n", A, unsafe=True)
    assert "enabled=True and torch.accelerator.is_available()" in out


def test_cuda_method_is_safe_only_on_an_evident_tensor_or_module() -> None:
    src = "import torch\nx = torch.ones(2).float().cuda()\ny = cfg.cuda()\n"
    out = fixed(src)
    assert 'x = torch.ones(2).float().to("neuron")' in out and "y = cfg.cuda()" in out
    classes = {f.source_line: f.fix_class for f in scan(src) if f.code == "NM102"}
    assert classes == {"x = torch.ones(2).float().cuda()": FixClass.SAFE, "y = cfg.cuda()": FixClass.UNSAFE}


def test_a_name_bound_more_than_once_is_not_safely_the_import() -> None:
    rebound = "import torch\ndef f():\n    return torch.cuda.is_available()\ntorch = None\n"
    assert fixed(rebound) == rebound
    assert "torch.neuron.is_available()" in fixed(rebound, unsafe=True)
    optional = ("try:\n    from torch.cuda import synchronize\nexcept ImportError:\n    synchronize = None\n"
                "def f():\n    synchronize()\n")
    assert fixed(optional) == optional
    plain = "import torch\ndef _f():\n    return torch.cuda.is_available()\n"
    assert "torch.neuron" in fixed(plain)
    # `import torch.distributed` binds `torch` to the same package again (espnet's trainers)
    submodules = "import torch\nimport torch.distributed\nimport torch.nn\ndef _f():\n    return torch.cuda.is_available()\n"
    assert "torch.neuron" in fixed(submodules)


def test_a_parameter_sharing_the_alias_name_is_not_rewritten() -> None:
    src = "from torch.cuda.amp import autocast\n\ndef train(x, autocast=False):\n    if autocast:\n        return x\n"
    assert "def train(x, autocast=False):\n    if autocast:" in fixed(src, unsafe=True)


def test_explicit_reexports_and_all_entries_are_kept() -> None:
    for head in ("from torch.cuda.amp import autocast as autocast\n",
                 "from torch.cuda.amp import autocast\n__all__ = ['autocast']\n"):
        src = head + "def g(x):\n    with autocast():\n        return x\n"
        out = fixed(src, unsafe=True)
        assert all(line in out.splitlines() for line in head.splitlines()) and 'torch.autocast("neuron")' in out


def test_a_guard_whose_whole_block_is_removed_goes_with_it() -> None:
    src = "import torch\n\nif torch.cuda.is_available():\n    torch.backends.cudnn.benchmark = True\nx = 1\n"
    assert fixed(src, unsafe=True) == "import torch\n\nx = 1\n"  # no `if ...: pass` left
    assert fixed(src) == src  # the removal is unsafe: so is the guard's share of it
    # The accelerator target keeps cuDNN flags (they still matter on a GPU): the guard just moves.
    assert fixed(src, A, unsafe=True) == src.replace("torch.cuda.is_available", "torch.accelerator.is_available")


def test_a_guard_with_side_effects_is_not_removed_with_its_block() -> None:
    src = "import torch\n\nif setup():\n    torch.backends.cudnn.benchmark = True\n"
    assert "if setup():\n    pass" in fixed(src, unsafe=True)


def test_a_moved_assert_stops_saying_cuda() -> None:
    src = 'import torch\n\nassert torch.cuda.is_available(), "CUDA is required"\nx = torch.ones(2).cuda()\n'
    assert 'assert torch.neuron.is_available(), "Neuron is required"' in fixed(src)
    assert 'assert torch.accelerator.is_available(), "an accelerator is required"' in fixed(src, A)
    held = 'import torch\n\nassert torch.cuda.is_available(), "CUDA is required"\nc = torch.cuda.get_device_capability()\n'
    assert fixed(held) == held


def test_cuda_inside_an_fstring_uses_the_other_quote_for_python_311() -> None:
    out = fixed('import torch\nx = torch.ones(2)\nprint(f"{x.cuda()}")\nprint(f"{x.cuda(i)}")\n', unsafe=True)
    assert "print(f\"{x.to('neuron')}\")" in out and "print(f\"{x.to(f'neuron:{i}')}\")" in out
    compile(out, "m.py", "exec")  # the 3.11 grammar


def test_a_device_tuple_beside_an_unrecognised_operand_gets_a_neuron_entry() -> None:
    """Found by the property test: the tuple's other operand is not device-like (issue 12 scan side)."""
    src = 'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\nok = device.split(":")[0] in ("cuda", "cpu")\n'
    assert '("cuda", "neuron", "cpu")' in fixed(src, unsafe=True)  # (a module's name: it leaves the file)


def test_an_unfixed_info_finding_with_a_fix_holds_its_guard() -> None:
    """cudnn.benchmark (info, unsafe fix) under a device-type guard: a safe run must not move the guard,
    or the flipped guard runs code the program used to skip (found by the behaviour property test)."""
    src = ('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
           'if device.startswith("cuda"):\n    torch.backends.cudnn.benchmark = True\n    print("bench on")\n')
    assert 'if device.startswith("cuda"):\n' in fixed(src)


def test_a_compared_device_string_stays_false_without_an_accelerator() -> None:
    """`device.startswith("cuda")` compares: with the cpu-fallback form it was true on a CPU-only machine."""
    src = 'import torch\ndef gpu(device):\n    return device.startswith("cuda")\n'
    out = fixed(src, A)
    assert 'device.startswith(getattr(torch.accelerator.current_accelerator(), "type", "no accelerator"))' in out
    namespace: dict[str, object] = {}
    exec(compile(out, "m.py", "exec"), namespace)  # our own rewrite of our own source
    assert namespace["gpu"]("cpu") is False  # type: ignore[operator]  (the CPU wheel: no accelerator)


def test_a_guard_held_in_a_variable_stays_with_its_cuda_only_block() -> None:
    src = """\
        import torch

        use_cuda = torch.cuda.is_available()
        if use_cuda:
            major, _ = torch.cuda.get_device_capability()
        """
    for target in Target:
        assert fixed(src, target, unsafe=True) == textwrap.dedent(src)
    guard = next(f for f in scan(src) if f.code == "NM201")
    assert guard.fix_class is FixClass.MANUAL and "torch.cuda.get_device_capability" in guard.message
    # A number compared is a condition too; through a second variable as well.
    for held in ("n_gpu = torch.cuda.device_count()\nif n_gpu > 1:\n    cap = torch.cuda.get_device_capability()\n",
                 ("ok = torch.cuda.is_available()\nuse = ok and flag\nif not use:\n    pass\nelse:\n"
                  "    cap = torch.cuda.get_device_capability()\n"),
                 ("class M:\n    def __init__(self):\n        self.gpu = torch.cuda.is_available()\n"
                  "    def f(self):\n        assert self.gpu\n        return torch.cuda.get_device_capability()\n"),
                 ("def main():\n    use_cuda = torch.cuda.is_available()\n    def step():\n        if use_cuda:\n"
                  "            return torch.cuda.get_device_capability()\n    return step\n"),
                 ("def use_gpu():\n    return torch.cuda.is_available()\n"
                  "if not use_gpu():\n    pass\nelse:\n    cap = torch.cuda.get_device_capability()\n")):
        held = "import torch\n" + held
        assert fixed(held, unsafe=True) == held, held


def test_a_value_tested_only_for_none_feeds_a_guard_only_where_a_condition_makes_it_none() -> None:
    """DINO's k-NN evaluation: `features = features.cuda()` is never None, so the `features is None`
    test it meets later decides nothing the fix changes; a value that a CUDA condition makes None
    (`GradScaler() if torch.cuda.is_available() else None`) still holds its test."""
    src = """\
        import torch

        def extract(loader, use_cuda=True):
            features = None
            for x in loader:
                if features is None:
                    features = torch.zeros(3)
                    if use_cuda:
                        features = features.cuda(non_blocking=True)
            return features
        """
    assert fixed(src, unsafe=True) == textwrap.dedent(src).replace(".cuda(non_blocking=True)", '.to("neuron", non_blocking=True)')
    held = """\
        import torch

        scaler = torch.cuda.amp.GradScaler() if torch.cuda.is_available() else None
        if scaler is not None:
            major, _ = torch.cuda.get_device_capability()
        """
    guard = next(f for f in scan(held) if f.code == "NM201")
    assert guard.fix_class is FixClass.MANUAL


def test_a_guard_held_in_a_variable_moves_when_its_block_is_fixable() -> None:
    src = "import torch\ndef main():\n    use_cuda = torch.cuda.is_available()\n    if use_cuda:\n        torch.cuda.synchronize()\n"
    assert fixed(src) == src.replace(".cuda.", ".neuron.")


def test_the_mnist_style_args_cuda_guard_moves_only_with_what_it_guards() -> None:
    """pytorch/examples: `args.cuda = not args.no_cuda and torch.cuda.is_available()`, then
    `if args.cuda:` over an unsafe seed fix: a safe run keeps the CPU path whole."""
    src = """\
        import torch

        args.cuda = not args.no_cuda and torch.cuda.is_available()
        if args.cuda:
            torch.cuda.manual_seed(args.seed)
        device = torch.device("cuda" if args.cuda else "cpu")
        """
    safe = fixed(src)
    assert "torch.cuda.is_available()" in safe and "torch.cuda.manual_seed(args.seed)" in safe
    # the device pick stays with the test that feeds it: renamed alone, a CUDA host would pick `neuron`
    assert 'torch.device("cuda" if args.cuda else "cpu")' in safe
    moved = fixed(src, unsafe=True)
    assert "torch.neuron.is_available()" in moved and "torch.neuron.manual_seed(args.seed)" in moved
    assert 'torch.device("neuron" if args.cuda else "cpu")' in moved


def test_a_variable_compared_with_a_string_holds_a_device_not_a_condition() -> None:
    """`device == "cuda"` keeps its comparison (held by the guard rule); the device pick still moves."""
    src = ('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'
           'if device == "cuda":\n    cap = torch.cuda.get_device_capability()\n')
    out = fixed(src)
    assert out.splitlines()[1] == 'device = "neuron" if torch.neuron.is_available() else "cpu"'
    assert 'if device == "cuda":' in out


def test_a_device_read_by_a_held_comparison_whose_branch_does_more_than_cuda_stays() -> None:
    """Renamed while `device == "cuda"` is held, the device skips the branch: its CUDA code, but
    also its `dtype = torch.float16`, so the program would compute in float32 on Trainium. The
    value stays with the comparison: a parameter's default, a local, through `.type`,
    `str(...).startswith` and `in`; a branch of only CUDA code (and messages) lets it move."""
    cases = [("def f(device='cuda'):", "device == 'cuda'", 2),
             ("def f():\n    device = 'cuda'", "device == 'cuda'", 3),
             ("def f():\n    device = torch.device('cuda:0')", "device.type == 'cuda'", 3),
             ("def f(device='cuda'):", "str(device).startswith('cuda')", 2),
             ("def f(device='cuda'):", "not device in ('cuda', 'mps')", 2)]
    for head, test, line in cases:
        src = (f"import torch\n{head}\n    if {test}:\n        cap = torch.cuda.get_device_capability()\n"
               "        dtype = torch.float16\n")
        assert fixed(src) == src, src
        value = next(f for f in scan(src) if f.code == "NM101" and f.span.line == line)
        assert value.fix_class is FixClass.MANUAL and "feeds the test at line" in value.message, src
    only_cuda = ("import torch\ndef f(device='cuda'):\n    if device == 'cuda':\n"
                 "        cap = torch.cuda.get_device_capability()\n        print('on CUDA')\n")
    assert "def f(device='neuron'):" in fixed(only_cuda) and "if device == 'cuda':" in fixed(only_cuda)


def test_a_device_test_over_an_expected_cuda_error_is_not_renamed_safely() -> None:
    """sbi's `if dev.type == "cuda": with pytest.raises(NotImplementedError): histogram(...)`:
    the branch asserts what CUDA lacks; renamed, the test would claim Neuron lacks it too."""
    src = """\
        import pytest
        import torch

        def check(dev):
            if dev.type == "cuda":
                with pytest.raises(NotImplementedError):
                    torch.histogram(torch.zeros(3, device=dev), bins=4)

        def check_unittest(self, dev):
            if str(dev) != "cuda":
                self.assertRaises(RuntimeError, torch.histogram, torch.zeros(3, device=dev))
        """
    assert fixed(src) == textwrap.dedent(src)
    found = [f for f in scan(src) if f.code == "NM101"]
    assert len(found) == 2 and all(f.fix_class is FixClass.UNSAFE for f in found)
    assert all("expects an error of CUDA's" in fix.title for fix in found[0].fixes)
    assert 'if dev.type == "neuron":' in fixed(src, unsafe=True)


def test_a_fallback_to_the_cpu_for_a_device_the_caller_gives_is_not_renamed_safely() -> None:
    """sparseml's `fallback_to_cpu(device)`: `if "cuda" in device and not torch.cuda.is_available():
    return "cpu"`. Renamed, a caller's `cuda:0` (its command line's) passes through on a host
    without CUDA; so does lama-cleaner's parametrized `"cuda"` test case, which returned early. A
    device the function picks itself moves with its fallback."""
    src = """\
        import torch

        def fallback_to_cpu(device):
            if "cuda" in device and not torch.cuda.is_available():
                return "cpu"
            return device

        def main(args):
            if args.device == "cuda" and not torch.cuda.is_available():
                args.device = "cpu"

        def local(flag):
            device = "cuda" if flag else "cpu"
            if device == "cuda" and not torch.cuda.is_available():
                device = "cpu"
            return device

        def test_ones(device):
            if device == "cuda" and not torch.cuda.is_available():
                return
            assert torch.ones(2, device=device).sum() == 2
        """
    found = {f.span.line: f for f in scan(src) if f.code == "NM101"}
    assert {line: f.fix_class for line, f in found.items()} == {
        4: FixClass.UNSAFE, 9: FixClass.UNSAFE, 13: FixClass.SAFE, 14: FixClass.SAFE, 19: FixClass.UNSAFE}
    assert all("is no longer checked for CUDA" in fix.title for fix in found[4].fixes)
    out = fixed(src)
    assert 'if "cuda" in device and not torch.cuda.is_available():' in out
    assert 'if device == "neuron" and not torch.neuron.is_available():' in out


def test_a_device_test_and_ed_with_a_dtype_test_is_not_renamed_safely() -> None:
    """brevitas' kthvalue: `(dtype == torch.float16 and 'cpu' in device) or (dtype == torch.bfloat16
    and 'cuda' in device)` lists the kernels each device lacks; renamed, CUDA loses its workaround
    and Neuron is said to lack bfloat16. A device test alone still moves."""
    src = """\
        import torch

        def kthvalue(x, k):
            device = str(x.device)
            if (x.dtype == torch.float16 and "cpu" in device) or (x.dtype == torch.bfloat16 and "cuda" in device):
                x = x.float()
            fast = x.dtype is torch.float16 and device.startswith("cuda")
            if "cuda" in device:
                torch.cuda.synchronize()
            return torch.kthvalue(x, k), fast
        """
    found = {f.span.line: f for f in scan(src) if f.code == "NM101"}
    assert {line: f.fix_class for line, f in found.items()} == {5: FixClass.UNSAFE, 7: FixClass.UNSAFE, 8: FixClass.SAFE}
    assert all("tested with a dtype" in fix.title for fix in found[5].fixes)
    out = fixed(src)
    assert '"cuda" in device):' in out and 'device.startswith("cuda")' in out and 'if "neuron" in device:' in out


def test_a_list_that_is_the_parts_of_one_value_gets_no_neuron_entry() -> None:
    """ModelScope's `eles = ['cuda'] + eles[1:]; "".join(eles)` and a pick by position
    (`["cuda", "cpu"][i]`): an added entry would make `cudaneuron1` or shift the pick. A list of
    device types kept as data still gets its entry."""
    src = """\
        def to_hf(device_name):
            eles = device_name.split(':')
            if eles[0] == 'gpu':
                eles = ['cuda'] + eles[1:]
                device_name = ''.join(eles)
            return device_name

        def pick(i):
            return ["cuda", "cpu"][i]

        SUPPORTED = ["cuda", "cpu"]
        """
    out = fixed(src, unsafe=True)
    assert "eles = ['cuda'] + eles[1:]" in out and 'return ["cuda", "cpu"][i]' in out
    assert 'SUPPORTED = ["cuda", "neuron", "cpu"]' in out


def test_a_device_test_that_turns_faiss_gpu_on_is_not_renamed_safely() -> None:
    """simpletransformers' `use_cuda = "cuda" in str(device)` ... `faiss.Kmeans(..., gpu=use_cuda)`:
    renamed, a Neuron device would ask FAISS for its GPU index (NM744 keeps its value)."""
    src = """\
        import faiss

        def cluster(x, k, device):
            use_cuda = True if "cuda" in str(device) else False
            kmeans = faiss.Kmeans(x.shape[1], k, gpu=use_cuda)
            return kmeans
        """
    assert fixed(src) == textwrap.dedent(src)
    assert next(f for f in scan(src) if f.code == "NM101").fix_class is FixClass.UNSAFE


def test_a_device_that_reaches_an_unsafe_autocast_fix_is_renamed_only_with_it() -> None:
    """WhisperSpeech's `def train(..., device="cuda")` ... `torch.autocast(device_type=device,
    dtype=torch.float16)`: NM302 holds the autocast (unsafe), so renaming the default would make
    that change without its caution (float16 on Neuron beside a CUDA GradScaler)."""
    src = """\
        import torch

        def train(model, x, device="cuda"):
            with torch.autocast(device_type=device, dtype=torch.float16):
                return model(x.to(device))
        """
    assert fixed(src) == textwrap.dedent(src)
    default = next(f for f in scan(src) if f.code == "NM101")
    assert default.fix_class is FixClass.UNSAFE and "whose own fix is unsafe" in default.fixes[0].title
    assert 'def train(model, x, device="neuron"):' in fixed(src, unsafe=True)


def test_a_partial_s_arguments_are_the_wrapped_function_s() -> None:
    """vector-quantize-pytorch's `partial(autocast, "cuda", enabled=False)`: a region that opts out
    of autocast, renamed as the direct call is (NM101); `partial(torch.autocast, "cuda",
    dtype=...)` is an autocast region, NM302 with its unsafe fix."""
    src = """\
        from functools import partial

        import torch
        from torch.amp import autocast

        def quantize(x):
            off = partial(autocast, "cuda", enabled=False)
            on = partial(torch.autocast, "cuda", dtype=torch.bfloat16)
            return off, on
        """
    found = {f.span.line: f for f in scan(src)}
    assert (found[7].code, found[7].fix_class) == ("NM101", FixClass.SAFE)
    assert (found[8].code, found[8].fix_class) == ("NM302", FixClass.UNSAFE)
    out = fixed(src)
    assert 'partial(autocast, "neuron", enabled=False)' in out and 'partial(torch.autocast, "cuda"' in out


def test_a_device_string_paired_with_a_cuda_member_is_not_renamed_safely() -> None:
    """Thunder's `{DeviceType.CUDA: "cuda"}`: renamed, the CUDA member would stand for Neuron
    (Thunder's CUDA-only executors would claim Neuron tensors). Its parser's `if devicestr ==
    "cuda": return DeviceType.CUDA` and a profiler's `ProfilerActivity.CUDA` branch are held by
    the guard rule already."""
    src = """\
        import torch
        from thunder.core.devices import DeviceType

        device_names = {DeviceType.CPU: "cpu", DeviceType.CUDA: "cuda"}

        def parse(devicestr):
            if devicestr == "cuda":
                return DeviceType.CUDA
            return DeviceType.CPU

        def activities(device):
            acts = [torch.profiler.ProfilerActivity.CPU]
            if device == "cuda":
                acts.append(torch.profiler.ProfilerActivity.CUDA)
            return acts
        """
    found = {f.span.line: f for f in scan(src) if f.code == "NM101"}
    assert {line: f.fix_class for line, f in found.items()} == {
        4: FixClass.UNSAFE, 7: FixClass.MANUAL, 13: FixClass.MANUAL}  # (the checks guard their CUDA member)
    assert "paired with a `CUDA` member" in found[4].fixes[0].title
    assert fixed(src) == textwrap.dedent(src)


def test_a_rename_never_writes_torch_where_only_another_function_binds_it() -> None:
    """sktime's `empty_cache = _safe_import("torch.cuda.empty_cache")` and a method's own `from
    torch.cuda import empty_cache`, with `import torch` only in another method: written as
    `torch.neuron.empty_cache()` the call needs an import the module lacks (a NameError), and torch
    is optional there, so the fix that adds it is unsafe. With torch imported at the top it stays
    safe, and a function that imports torch itself uses its own binding."""
    lazy = """\
        from skbase.utils.dependencies import _safe_import

        empty_cache = _safe_import("torch.cuda.empty_cache")

        class M:
            def fit(self):
                empty_cache()

            def predict(self):
                from torch.cuda import empty_cache as ec
                ec()

            def _run_epoch(self):
                import torch
                torch.cuda.synchronize()
        """
    found = {f.span.line: f for f in scan(lazy) if f.code in ("NM206", "NM207")}
    assert {line: f.fix_class for line, f in found.items()} == {
        7: FixClass.UNSAFE, 11: FixClass.UNSAFE, 15: FixClass.SAFE}
    assert "import torch" in found[7].fixes[0].add_imports and "hard" not in found[7].fixes[0].title
    out = fixed(lazy)
    assert "        empty_cache()" in out and "torch.neuron.synchronize()" in out
    compile(fixed(lazy, unsafe=True), "m.py", "exec")
    eager = "import torch.nn\nfrom torch.cuda import empty_cache\n\ndef free():\n    empty_cache()\n"
    assert fixed(eager) == "import torch.nn\n\ndef free():\n    torch.neuron.empty_cache()\n"


def test_a_parameter_is_not_the_module_variable_of_the_same_name() -> None:
    src = ("import torch\nuse_cuda = torch.cuda.is_available()\nprint(use_cuda)\n"
           "def f(use_cuda):\n    if use_cuda:\n        return torch.cuda.get_device_capability()\n")
    assert "use_cuda = torch.neuron.is_available()" in fixed(src)


def test_a_condition_passed_to_a_function_moves_only_with_what_the_parameter_guards() -> None:
    """`setup(torch.cuda.is_available())` decides `if use_gpu:` in setup: a parameter used as a
    condition is fed by the arguments of the file's calls and by its default."""
    src = """\
        import torch

        def setup(use_gpu, fast=torch.cuda.is_available()):
            if use_gpu:
                print(torch.cuda.get_device_capability())
            if fast:
                torch.cuda.synchronize()

        setup(torch.cuda.is_available())
        setup(use_gpu=torch.cuda.is_available())
        """
    out = fixed(src)
    assert out.count("torch.cuda.is_available()") == 2 and "torch.cuda.get_device_capability()" in out
    assert "fast=torch.neuron.is_available()" in out and "torch.neuron.synchronize()" in out
    messages = [f.message for f in scan(textwrap.dedent(src)) if f.code == "NM201" and f.span.line > 3]
    # the calls' values feed the test of `if use_gpu:`, which guards the capability query
    assert len(messages) == 2 and all("it feeds the test at line 4, and that test guards "
                                      "`torch.cuda.get_device_capability`" in m for m in messages)


def test_a_condition_whose_value_leaves_the_file_is_an_unsafe_fix() -> None:
    """Code in another module may be what the value decides: the fix needs a fact it cannot see."""
    leaving = ["HAS_GPU = torch.cuda.is_available()\n",  # another module may import it
               "class Config:\n    use_cuda = torch.cuda.is_available()\n",
               "def build(cfg):\n    cfg.cuda = torch.cuda.is_available()\n",
               "def has_gpu():\n    return torch.cuda.device_count() > 0\n",
               "def run(trainer):\n    trainer.fit(gpus=torch.cuda.device_count())\n",
               "def run():\n    ok = torch.cuda.is_available()\n    return [ok]\n",
               # converted, it goes where the conversion's value goes (MONAI's launch settings)
               "class Gen:\n    def __init__(self):\n        self.setting = {'n': int(torch.cuda.device_count())}\n"]
    for body in leaving:
        src = "import torch\n" + body
        assert fixed(src) == src, body
        fix = next(f for f in scan(src) if f.code in ("NM201", "NM202")).fix_for(N)
        assert fix is not None and fix.applicability is FixClass.UNSAFE and "outside this file" in fix.title
        assert ".neuron." in fixed(src, unsafe=True)
    staying = ["def run():\n    ok = torch.cuda.is_available()\n    if ok:\n        print('gpu')\n",
               "def run():\n    print('gpu', torch.cuda.is_available())\n",
               "def run(log):\n    log.info('%d devices', torch.cuda.device_count())\n",
               "def run():\n    print('devices: ' + str(torch.cuda.device_count()))\n",
               "def _count():\n    return torch.cuda.device_count()\nif _count() > 1:\n    print('many')\n",
               # a program: its module-level names are not imported
               "HAS_GPU = torch.cuda.is_available()\nif __name__ == '__main__':\n    print(HAS_GPU)\n"]
    for body in staying:
        src = "import torch\n" + body
        assert ".neuron." in fixed(src), body


def test_the_accelerator_seed_fix_never_writes_torch_manual_seed_twice() -> None:
    src = "import torch\n\ntorch.manual_seed(0)\ntorch.cuda.manual_seed(0)\ntorch.cuda.manual_seed_all(0)\n"
    assert fixed(src, A, unsafe=True) == "import torch\n\ntorch.manual_seed(0)\n"
    guarded = ("import random\nimport torch\n\ndef seed(s):\n    torch.manual_seed(s)\n    random.seed(s)\n"
               "    if torch.cuda.is_available():\n        torch.cuda.manual_seed_all(s)\n    return s\n")
    assert fixed(guarded, A, unsafe=True) == ("import random\nimport torch\n\ndef seed(s):\n    torch.manual_seed(s)\n"
                                              "    random.seed(s)\n    return s\n")  # no `if ...: pass` left
    # A draw or another seed in between: the CUDA call seeds a later state, so it is kept (renamed).
    for between in ("x = torch.rand(1)\n", "torch.cuda.manual_seed(1)\n"):
        kept = f"import torch\n\ntorch.manual_seed(0)\n{between}torch.cuda.manual_seed_all(0)\n"
        assert fixed(kept, A, unsafe=True).endswith("\ntorch.manual_seed(0)\n"), between
    # The neuron target keeps its own call (torch.neuron.manual_seed_all).
    assert "torch.neuron.manual_seed(0)" in fixed(src, N, unsafe=True)


def test_a_table_keyed_by_device_type_gets_a_neuron_key_mapped_to_the_neuron_backend() -> None:
    src = 'def backend_for(dev_type):\n    return {"xpu": "ccl", "cuda": "nccl"}.get(dev_type, "gloo")\n'
    for target in Target:
        out = fixed(src, target)
        assert out == src.replace('"nccl"}', '"nccl", "neuron": "neuron"}')  # the CUDA key keeps "nccl"
        assert not scan(out)  # converges: the table is ported, its "nccl" is CUDA's own
        namespace: dict[str, object] = {}
        exec(compile(out, "m.py", "exec"), namespace)  # our own rewrite of our own source
        assert [namespace["backend_for"](t) for t in ("cuda", "neuron", "cpu")] == ["nccl", "neuron", "gloo"]  # type: ignore[operator]
    lines = 'BACKENDS = {\n    "cuda": "nccl",\n    "cpu": "gloo",\n}\n'
    assert fixed(lines) == 'BACKENDS = {\n    "cuda": "nccl",\n    "neuron": "neuron",\n    "cpu": "gloo",\n}\n'


def test_a_table_value_is_copied_only_as_an_unsafe_fix_and_a_cuda_specific_one_is_manual() -> None:
    src = "import torch\nDTYPES = {'cuda': torch.float16, 'cpu': torch.bfloat16}\n"
    assert fixed(src) == src
    assert "{'cuda': torch.float16, 'neuron': torch.float16, 'cpu'" in fixed(src, unsafe=True)
    manual = "KERNELS = {'cuda': 'cudnn', 'cpu': 'mkl'}\nSTREAMS = {'cuda': make_stream(), 'cpu': None}\n"
    for target in Target:
        assert fixed(manual, target, unsafe=True) == manual
    keys = [f for f in scan(manual) if f.code == "NM101"]
    assert {f.fix_class for f in keys} == {FixClass.MANUAL} and all("add a `neuron` one by hand" in f.message for f in keys)


def test_map_location_keeps_the_checkpoints_cuda_key() -> None:
    """The key is where a GPU checkpoint's storages were saved: renaming it stops the remap."""
    src = 'import torch\nstate = torch.load("c.pt", map_location={"cuda:1": "cuda:0"})\n'
    assert 'map_location={"cuda:1": "neuron", "neuron:1": "neuron"}' in fixed(src)


def test_an_explicit_device_0_becomes_each_processs_own_device() -> None:
    """Under a launcher local rank r owns only neuron:r, where every CUDA rank can address GPU 0:
    a safe fix never writes an index another rank owns (tests/rewrite/behaviour runs this on 2 ranks)."""
    for src, safe in [('x = t.to("cuda:0")\n', 'x = t.to("neuron")\n'),
                      ('s = torch.load(p, map_location="cuda:0")\n', 's = torch.load(p, map_location="neuron")\n'),
                      ('dev = torch.device("cuda:0")\n', 'dev = torch.device("neuron")\n'),
                      ('dev = torch.device("cuda", 0)\n', 'dev = torch.device("neuron")\n'),
                      ('dev = torch.device("cuda", 1)\n', 'dev = torch.device("cuda", 1)\n'),  # unsafe
                      ("x = torch.ones(1).cuda(0)\n", "x = torch.ones(1).cuda(0)\n")]:  # NM103 is unsafe
        assert fixed("import torch\n" + src) == "import torch\n" + safe
    assert fixed('import torch\nx = torch.ones(1).cuda(0)\n', unsafe=True) == 'import torch\nx = torch.ones(1).to("neuron")\n'
    acc = fixed('import torch\nx = t.to("cuda:0")\n', A)
    assert acc == 'import torch\nx = t.to((torch.accelerator.current_accelerator() or torch.device("cpu")).type)\n'


def test_a_kept_index_is_never_a_safe_fix() -> None:
    other = 'import torch\nhead = t.to("cuda:1")\n'
    assert fixed(other) == other and fixed(other, A) == other
    assert fixed(other, unsafe=True) == 'import torch\nhead = t.to("neuron:1")\n'
    # A file that takes device strings apart keeps the index (`"neuron".split(":")[1]` would raise).
    for reads in ('i = int(dev.split(":")[1])\n', 'i = torch.device(dev).index\n', 'kind, _, i = dev.partition(":")\n'):
        src = 'import torch\ndev = "cuda:0"\n' + reads
        assert fixed(src) == src
        assert fixed(src, unsafe=True) == src.replace('"cuda:0"', '"neuron:0"')
    assert fixed('import torch\ni = x.index(3)\ndev = "cuda:0"\n') == 'import torch\ni = x.index(3)\ndev = "neuron"\n'  # a call
    # mmdet3d's `device='cuda:0'` default passed to `torch.cuda.set_device(device)`, which needs an index
    setter = 'import torch\n\n\ndef init(model, device="cuda:0"):\n    torch.accelerator.set_device_index(device)\n'
    assert fixed(setter) == setter and '"neuron:0"' in fixed(setter, unsafe=True)
    assert fixed('import torch\ntorch.cuda.set_device(0)\ndev = "cuda:0"\n').endswith('dev = "neuron"\n')  # a literal index
    table = 'import torch\nstate = torch.load("c.pt", map_location={"cuda:0": "cuda:1"})\n'
    assert '"neuron:0"' not in fixed(table)  # the value keeps index 1: unsafe
    assert 'map_location={"cuda:0": "neuron:1", "neuron:0": "neuron:1"}' in fixed(table, unsafe=True)


def test_a_compared_device_string_keeps_its_index() -> None:
    src = 'import torch\ndef first(x):\n    return str(x.device) == "cuda:0"\n'
    assert fixed(src, unsafe=True) == src.replace('"cuda:0"', '"neuron:0"')  # (returned: unsafe)


def test_a_guard_whose_block_goes_with_an_else_is_inverted_not_left_as_pass() -> None:
    src = ('import torch\n\nif torch.cuda.is_available():\n    torch.backends.cudnn.benchmark = True\n'
           'else:\n    print("cpu")\n')
    assert fixed(src, unsafe=True) == 'import torch\n\nif not torch.neuron.is_available():\n    print("cpu")\n'
    assert fixed(src) == src  # the removal is unsafe
    compound = ('import torch\ndef f(device, x):\n    if not device.type == "cuda" or x:\n'
                '        torch.backends.cudnn.benchmark = True\n    else:\n        return 1\n')
    assert "    if not (not device.type == \"neuron\" or x):\n        return 1\n" in fixed(compound, unsafe=True)
    negated = 'import torch\nif not torch.cuda.is_available():\n    torch.backends.cudnn.enabled = False\nelse:\n    x = 1\n'
    assert fixed(negated, unsafe=True) == "import torch\nif torch.neuron.is_available():\n    x = 1\n"
    # An `elif` chain after the emptied body is nested under the inverted test.
    chained = ('import torch\nif torch.cuda.is_available():\n    torch.backends.cudnn.benchmark = True\n'
               'elif x:\n    y = 1\n\n  # note\nelse:\n    y = (1,\n2)\n')
    assert fixed(chained, unsafe=True) == ('import torch\nif not torch.neuron.is_available():\n    if x:\n        y = 1\n\n'
                                           '      # note\n    else:\n        y = (1,\n    2)\n')
    inner = ('import torch\ndef f(a, x):\n    if a:\n        return 0\n    elif torch.cuda.is_available():\n'
             '        torch.backends.cudnn.benchmark = True\n    elif x:\n        return 1\n    return 2\n')
    assert ("    elif not torch.neuron.is_available():\n        if x:\n            return 1\n    return 2\n"
            in fixed(inner, unsafe=True))
    # Indenting a string that spans lines would change its text: the body keeps a `pass`.
    text = chained.replace("y = 1", 'y = """a\nb"""')
    assert "if torch.neuron.is_available():\n    pass\nelif x:" in fixed(text, unsafe=True)
    for src_ in (chained, inner, text):
        for target in Target:
            compile(fixed(src_, target, unsafe=True), "m.py", "exec")


def test_a_moved_raise_or_fstring_assert_message_stops_saying_cuda() -> None:
    src = ('import torch\nif not torch.cuda.is_available():\n    raise RuntimeError("CUDA is required")\n'
           'assert torch.cuda.is_available(), f"CUDA needed, {torch.cuda.device_count()} CUDA devices"\n')
    out = fixed(src)
    assert 'raise RuntimeError("Neuron is required")' in out
    assert 'f"Neuron needed, {torch.neuron.device_count()} Neuron devices"' in out
    assert 'raise RuntimeError("an accelerator is required")' in fixed(src, A)
    # Only a lone raise is the guard's message; other text under a guard is left alone.
    other = 'import torch\nif torch.cuda.is_available():\n    print("CUDA found")\n    torch.cuda.synchronize()\n'
    assert 'print("CUDA found")' in fixed(other)


def test_an_assigned_is_cuda_attribute_gets_no_comparison_written_into_the_assignment() -> None:
    """timm's loader: `self.is_cuda = torch.cuda.is_available() and device.type == 'cuda'`. The
    accelerator target's `x.device.type == ...` cannot be an assignment target: the whole file
    used to be skipped as not parsing."""
    src = "import torch\nclass L:\n    def __init__(self, device):\n        self.is_cuda = device.type == 'cuda'\n"
    out = fixed(src, A, unsafe=True)
    assert "self.is_cuda = device.type == getattr(torch.accelerator.current_accelerator(), 'type', 'no accelerator')" in out
    # the class's own attribute keeps its name (pyro's readers of `model.is_cuda`); only its value moves
    assert fixed(src, N, unsafe=True) == src.replace("'cuda'", "'neuron'")


def test_a_torch_cuda_value_of_a_device_type_table_stays_and_gains_a_neuron_entry() -> None:
    """diffusers' testing_utils: `{"cuda": torch.cuda.empty_cache, ...}`. Renaming the value made the
    CUDA entry call Neuron's function, and a second run then copied it into a `neuron` entry (not
    idempotent); the value is table data like its key."""
    src = ('import torch\nEMPTY = {"cuda": torch.cuda.empty_cache, "cpu": None}\nN = {"cuda": torch.cuda.device_count(), "cpu": 0}\n'
           'SEED = {"cuda": torch.cuda.manual_seed, "cpu": torch.manual_seed}\n')
    seeds = {N: '"neuron": torch.neuron.manual_seed', A: '"neuron": torch.manual_seed'}  # a fixer's value, not a rename
    for target, name in ((N, "torch.neuron"), (A, "torch.accelerator")):
        once = fixed(src, target, unsafe=True)
        assert once.splitlines()[1].startswith('EMPTY = {"cuda": torch.cuda.empty_cache, "neuron": ' + name)
        assert f'N = {{"cuda": torch.cuda.device_count(), "neuron": {name}.device_count(), "cpu": 0}}' in once
        assert f'SEED = {{"cuda": torch.cuda.manual_seed, {seeds[target]}, "cpu": torch.manual_seed}}' in once
        assert fixed(once, target, unsafe=True) == once
        assert not [f for f in scan(once) if f.code.startswith(("NM1", "NM2"))]  # ported: nothing left to report


def test_a_table_value_is_found_in_a_long_table_in_an_if_header_and_in_a_decorator() -> None:
    """The table test reads the statement's text only up to the value (an `if` or `with` header's
    statement is the whole block), and a long statement by its tree; each shape still gains its
    `neuron` entry."""
    rows = "".join(f'    "dev{i}": None,\n' for i in range(60))
    long = f'import torch\nTABLE = {{\n{rows}    "cuda": torch.cuda.empty_cache,\n}}\n'
    assert '    "cuda": torch.cuda.empty_cache,\n    "neuron": torch.neuron.empty_cache,\n' in fixed(long, N, unsafe=True)
    header = ('import torch\nif {"cuda": torch.cuda.is_available, "cpu": None}.get(kind):\n'
              + "".join(f"    x{i} = {i}\n" for i in range(60)))
    assert '{"cuda": torch.cuda.is_available, "neuron": torch.neuron.is_available, "cpu": None}' in fixed(header, N, unsafe=True)
    decorated = ('import torch\n@register({"cuda": torch.cuda.synchronize,\n'
                 '           "cpu": None})\ndef f():\n    pass\n')
    assert '"cuda": torch.cuda.synchronize, "neuron": torch.neuron.synchronize,' in fixed(decorated, N, unsafe=True)
    for src in (long, header, decorated):
        once = fixed(src, N, unsafe=True)
        assert fixed(once, N, unsafe=True) == once


def test_a_backend_renamed_in_a_file_that_dispatches_on_the_backend_is_an_unsafe_fix() -> None:
    """Transformer-XL's `all_reduce_item` branches on `get_backend()` (NCCL, Gloo, else it raises):
    `"nccl"` renamed to `"neuron"` would reach the raise, so the rename waits for `--unsafe-fixes`;
    a file that does not test the backend keeps the safe rename."""
    src = '''\
        import torch.distributed as dist

        def init(cuda):
            dist.init_process_group(backend="nccl" if cuda else "gloo")

        def all_reduce_item(value):
            if dist.get_backend() == dist.Backend.NCCL:
                return value.cuda()
            raise RuntimeError("Unsupported distributed backend")
        '''
    assert fixed(src) == textwrap.dedent(src)
    assert 'backend="neuron" if cuda else "gloo"' in fixed(src, unsafe=True)
    plain = 'import torch.distributed as dist\ndist.init_process_group(backend="nccl")\n'
    assert fixed(plain) == plain.replace('"nccl"', '"neuron"')


def test_cuda_given_a_device_object_becomes_to_that_device() -> None:
    """VICReg binds `gpu = torch.device(args.device)` and calls `.cuda(gpu)`: the argument is a
    device, not an index (`f"neuron:{gpu}"` would be `"neuron:cuda"`)."""
    src = '''\
        import torch

        def main(args, model, idx):
            gpu = torch.device(args.device)
            model = model.cuda(gpu)
            head = model.head.cuda(idx)
            return model, head
        '''
    out = fixed(src, unsafe=True)
    assert "model = model.to(gpu)" in out and 'head = model.head.to(f"neuron:{idx}")' in out
    assert "model.to(gpu)" in fixed(src, A, unsafe=True)


def test_a_guard_stays_when_a_function_it_calls_holds_code_that_is_not_rewritten() -> None:
    """pix2tex's `if torch.cuda.is_available(): gpu_memory_check(model, args)`: the function
    switches CUDA devices (an unsafe fix), so flipping the guard alone would run it on Trainium,
    where the program used to skip it. A guard whose callees are all rewritten still moves."""
    src = '''\
        import torch


        def gpu_memory_check(model, args):
            with torch.cuda.device(args.device):
                warm_up(model)


        def warm_up(model):
            torch.cuda.empty_cache()


        def train(model, args):
            if torch.cuda.is_available() and not args.no_cuda:
                gpu_memory_check(model, args)
            if torch.cuda.is_available():
                warm_up(model)
            return model
        '''
    out = fixed(src)
    assert "if torch.cuda.is_available() and not args.no_cuda:" in out
    assert "if torch.neuron.is_available():\n        warm_up(model)" in out
    assert "torch.neuron.empty_cache()" in out


def test_a_guard_stays_when_a_class_it_instantiates_holds_code_that_is_not_rewritten() -> None:
    """MONAI's `trt_compile`: `if trt_imported and torch.cuda.is_available():` wraps the model in
    `TrtCompiler(model)`, a class of the same file whose methods build TensorRT engines. Flipped
    alone, the guard would build them on Trainium, where the call used to leave the model as it
    was; a class whose code is all rewritten lets its guard move."""
    src = '''\
        import tensorrt
        import torch


        class TrtCompiler:
            def __init__(self, model):
                self.model = model

            def forward(self, x):
                return tensorrt.Runtime(x)


        class Mover:
            def __init__(self, model):
                self.model = model.cuda()


        def trt_compile(model, ok):
            if ok and torch.cuda.is_available():
                model = TrtCompiler(model)
            if torch.cuda.is_available():
                model = Mover(model)
            return model
        '''
    out = fixed(src, unsafe=True)  # (an `is_available` test in a file that uses TensorRT is unsafe)
    assert "if ok and torch.cuda.is_available():" in out
    assert "if torch.neuron.is_available():\n        model = Mover(model)" in out
    assert 'self.model = model.to("neuron")' in out


def test_a_device_comparison_whose_value_leaves_the_file_is_an_unsafe_fix() -> None:
    """TorchRL's `is_cuda = device.type == "cuda"`, returned to pick CUDA graphs; LAVIS's
    `cuda_enabled` property; kornia's `non_blocking = device.type == "cuda" and ...` given to
    `.to()`: renamed, each turns true on Trainium in code this file does not show, as a flipped
    `torch.cuda.is_available()` would. A comparison an `if` or a ternary decides here still moves."""
    src = '''\
        class Learner:
            def resolve(self, device):
                is_cuda = device.type == "cuda"
                return is_cuda

            @property
            def cuda_enabled(self):
                return self.device.type == "cuda"

            def move(self, x, device):
                non_blocking = device.type == "cuda" and not x.is_pinned()
                kind = "fast" if device.type == "cuda" else "slow"
                if device.type == "cuda":
                    x = x.contiguous()
                return x.to(device, non_blocking=non_blocking), kind
        '''
    found = {f.span.line: f for f in scan(src) if f.code == "NM101"}
    assert {line: f.fix_class for line, f in found.items()} == {
        3: FixClass.UNSAFE, 8: FixClass.UNSAFE, 11: FixClass.UNSAFE, 12: FixClass.SAFE, 13: FixClass.SAFE}
    assert "the comparison's value decides code outside this file" in found[3].fixes[0].title
    out = fixed(src)
    assert 'is_cuda = device.type == "cuda"' in out and 'kind = "fast" if device.type == "neuron" else "slow"' in out


def test_a_check_that_picks_a_gpu_request_is_an_unsafe_fix() -> None:
    """TorchRL's Ray collector: `{"num_gpus": 0.2 if torch.cuda.is_available() else None}`. Flipped,
    a Trainium run asks Ray for a GPU its node does not have, and the actor is never scheduled;
    a device count (`n_gpu`) still moves."""
    src = '''\
        import torch


        def options(remote):
            config = {"num_cpus": 1, "num_gpus": 0.2 if torch.cuda.is_available() else None}
            n_gpu = 1 if torch.cuda.is_available() else 0
            return remote(config, gpus_per_node=1 if torch.cuda.is_available() else 0), n_gpu
        '''
    found = {f.span.line: f for f in scan(src) if f.code == "NM201"}
    assert {line: f.fix_class for line, f in found.items()} == {5: FixClass.UNSAFE, 6: FixClass.SAFE, 7: FixClass.UNSAFE}
    assert "asks for GPUs (`num_gpus`)" in found[5].fixes[0].title
    assert "n_gpu = 1 if torch.neuron.is_available() else 0" in fixed(src)


def test_a_guard_stays_when_a_function_it_picks_holds_code_that_is_not_rewritten() -> None:
    """RF-DETR's `measure = _measure_cuda if device == "cuda" else _measure_wall`: the function is
    picked, not called, inside the guard, and called later; its CUDA-only code (a CUDA graph, not
    rewritten) runs on Trainium once the comparison is renamed."""
    src = '''\
        import torch


        def _measure_cuda(fn):
            graph = torch.cuda.CUDAGraph()
            return graph, fn()


        def _measure_wall(fn):
            return None, fn()


        def measure(fn, device):
            timer = _measure_cuda if device == "cuda" else _measure_wall
            return timer(fn)
        '''
    out = fixed(src, unsafe=True)
    assert 'timer = _measure_cuda if device == "cuda" else _measure_wall' in out
    found = {f.span.line: f for f in scan(src) if f.code == "NM101"}
    assert "it guards `torch.cuda.CUDAGraph`" in found[14].message


def test_a_device_string_given_to_lightnings_accelerator_is_not_renamed() -> None:
    """litgpt's `accelerator = "cuda"` (under `torch.cuda.is_available()`, else "cpu") then
    `L.Fabric(accelerator=accelerator)`: Lightning has no "neuron" accelerator, so the renamed
    program raises where a Trainium host used to run on the CPU. The string stays, and so does
    the check that picks it."""
    src = '''\
        import lightning as L
        import torch


        def build(devices):
            if torch.cuda.is_available():
                accelerator = "cuda"
            else:
                accelerator = "cpu"
            return L.Fabric(accelerator=accelerator, devices=devices), L.Fabric(accelerator="cuda")
        '''
    assert fixed(src, unsafe=True) == textwrap.dedent(src)
    found = {(f.span.line, f.code): f for f in scan(src)}
    assert "it reaches `L.Fabric` at line 10" in found[7, "NM101"].message
    assert {(10, "NM729"), (6, "NM201")} <= set(found) and (10, "NM101") not in found


def test_what_a_test_that_stays_cuda_guards_stays_too() -> None:
    """RF-DETR's `torch.device("cuda" if backend == "nccl" else "cpu")`, NeMo's `if self._sync_cuda
    and torch.cuda.is_initialized(): torch.cuda.synchronize()`: the test is CUDA's and has no fix,
    so renaming what it guards gives a branch Trainium never takes and a CUDA host breaks in. A
    test whose only CUDA word is a name (`if use_cuda:`) or a dtype hazard does not hold its block."""
    src = '''\
        import torch


        def device_for(backend):
            return torch.device("cuda" if backend == "nccl" else "cpu")


        def sync(timer):
            if timer.sync and torch.cuda.is_initialized():
                torch.cuda.synchronize()


        def move(model, use_cuda):
            if use_cuda:
                model = model.cuda()
            if model.dtype == torch.float64:
                model = model.cuda()
            return model
        '''
    out = fixed(src, unsafe=True)
    assert 'torch.device("cuda" if backend == "nccl" else "cpu")' in out and "        torch.cuda.synchronize()" in out
    assert out.count('model = model.to("neuron")') == 2
    held = {f.span.line: f.message for f in scan(src) if "stays CUDA's" in f.message}
    assert sorted(held) == [5, 10] and "the condition at line 9" in held[10]


def test_a_check_an_inner_guard_keeps_cuda_s_keeps_what_it_guards_in_turn() -> None:
    """sparseml's `if name != "cuda" or not torch.cuda.is_available(): raise`: the `or` keeps the
    availability check CUDA's, so the rest of the block it guards (the device ids counted against
    `torch.cuda.device_count()`) stays too."""
    src = '''\
        import torch


        def ids_of(device):
            name, _, ids = device.partition(":")
            if name != "cuda" or not torch.cuda.is_available():
                raise ValueError(device)
            count = torch.cuda.device_count()
            return [i for i in map(int, ids.split(",")) if i < count]
        '''
    assert fixed(src, unsafe=True) == textwrap.dedent(src)
    held = {f.span.line: f.message for f in scan(src)}
    assert sorted(held) == [6, 8] and "the condition at line 6, which stays CUDA's" in held[8]


def test_a_check_fed_by_a_value_that_stays_cuda_s_keeps_what_it_guards() -> None:
    """bentoml's `gpus = os.getenv("CUDA_VISIBLE_DEVICES", "")` (no fix) then `torch.device("cuda"
    if gpus not in ("", "-1") else "cpu")`: the choice stays CUDA's, so its device does too."""
    src = '''\
        import os

        import torch


        def load(model):
            gpus = os.getenv("CUDA_VISIBLE_DEVICES", "")
            return model.to(torch.device("cuda" if gpus not in ("", "-1") else "cpu"))
        '''
    assert fixed(src, unsafe=True) == textwrap.dedent(src)
    device = next(f for f in scan(src) if f.code == "NM101")
    assert device.fix_class is FixClass.MANUAL and "the condition at line 8, which stays CUDA's" in device.message


def test_a_comparison_of_a_device_a_function_returns_as_cuda_stays() -> None:
    """docling's `decide_device()` returns `"cuda:0"`, which stays (the check choosing it guards
    it); `if device_str.startswith("cuda"):` on its result stays too, and what it guards: renamed,
    a CUDA host would fall to the CPU branch and Trainium would never take the renamed one."""
    src = '''\
        import torch


        def decide(d):
            if d == "auto" and torch.cuda.is_available():
                return "cuda:0"
            return "cpu"


        def resolve(d):
            device_str = decide(d)
            if device_str.startswith("cuda"):
                torch.cuda.empty_cache()
                return torch.device(device_str)
            return torch.device("cpu")
        '''
    assert fixed(src, unsafe=True) == textwrap.dedent(src)
    held = {f.span.line: f.message for f in scan(src)}
    assert 'the device its test compares may be `"cuda:0"`' in held[12]


def test_what_a_test_left_unfixed_in_this_run_guards_stays_with_it() -> None:
    """deepchem's `if torch.cuda.is_available(): device = torch.device("cuda")` whose check is an
    unsafe fix, flair's `if not data.is_cuda and cuda.is_available(): raise ...` with an unsafe
    `is_cuda`: without --unsafe-fixes the test stays CUDA's, and so does what it guards; with it,
    both move."""
    src = '''\
        import torch

        HAS_GPU = torch.cuda.is_available()


        def pick():
            if HAS_GPU:
                return torch.device("cuda")
            return torch.device("cpu")


        def check(data):
            if not data.is_cuda and torch.cuda.is_available():
                raise RuntimeError("data is not on the GPU")
        '''
    safe = fixed(src)
    assert 'return torch.device("cuda")' in safe and "if not data.is_cuda and torch.cuda.is_available():" in safe
    moved = fixed(src, unsafe=True)
    assert 'return torch.device("neuron")' in moved and "torch.neuron.is_available()" in moved

    # (the scan says why each fix is unsafe: what it moves with)
    titles = {f.span.line: f.fix_for(N).title for f in scan(src) if f.fix_for(N) is not None}
    assert "its test depends on `torch.cuda.is_available` (NM201, line 3), whose fix is unsafe" in titles[8]
    assert "`is_cuda` (NM104, line 13), whose fix is unsafe" in titles[13]  # the statement's (and the test's) other CUDA check


def test_values_unpacked_or_returned_together_are_no_list_of_device_types() -> None:
    """super-gradients' `multi_gpu, num_gpus, device = MultiGPUMode.DDP, None, "cuda"`: an added
    `"neuron"` entry broke the unpacking (too many values); the name's own value is renamed."""
    src = '''\
        def setup(mode):
            multi_gpu, num_gpus, device = mode.DDP, None, "cuda"
            return multi_gpu, num_gpus, device


        def pick():
            return "cuda", 0


        def supported_devices():
            return ["cuda", "npu"]


        def reload(graph, op, x):
            return graph.call_function(op, args=(x, "cuda"))
        '''
    out = fixed(src, unsafe=True)
    assert 'multi_gpu, num_gpus, device = mode.DDP, None, "neuron"' in out and 'return "cuda", 0' in out
    # a list returned is the list of devices a plugin supports (ColossalAI): CUDA stays in it
    assert 'return ["cuda", "neuron", "npu"]' in out
    # an op's arguments are no list of device types: an added entry would land in its next parameter
    assert 'args=(x, "cuda")' in out
    compile(out, "m.py", "exec")


def test_a_tests_device_pairs_and_its_skip_conditions_move_together() -> None:
    """skorch's `parametrize('device_from, device_to', [('cpu', 'cuda'), ('cuda', 'cpu')])`: each
    tuple is a row of values (an added entry broke pytest's collection), so its device is renamed;
    so are the skip test beside it (`'cuda' in (device_from, device_to)`) and a `skipif` whose
    check only decides whether the test runs; optimum's `device.type.lower() == "cuda"` too."""
    src = '''\
        import pytest
        import torch


        @pytest.mark.parametrize("device_from, device_to", [("cpu", "cuda"), ("cuda", "cpu"), ("cuda", "cuda")])
        def test_move(device_from, device_to):
            if "cuda" in (device_from, device_to) and not torch.cuda.is_available():
                pytest.skip()
            return torch.zeros(1, device=device_from).to(device_to)


        @pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
        def test_on(device):
            assert device.type.lower() == "cuda"
        '''
    out = fixed(src)
    assert '[("cpu", "neuron"), ("neuron", "cpu"), ("neuron", "neuron")]' in out
    assert 'if "neuron" in (device_from, device_to) and not torch.neuron.is_available():' in out
    assert "@pytest.mark.skipif(not torch.neuron.is_available()" in out and 'device.type.lower() == "neuron"' in out


def test_a_check_that_picks_map_location_none_is_an_unsafe_fix() -> None:
    """MONAI's `map_location = None if torch.cuda.is_available() else torch.device("cpu")`:
    `None` loads each tensor to the device it was saved from. Flipped to Neuron, a Trainium run
    takes that branch and loads a GPU checkpoint onto CUDA, where it used to load to the CPU; an
    ordinary device choice beside it still moves."""
    src = '''\
        import torch


        def load(path):
            map_location = None if torch.cuda.is_available() else torch.device("cpu")
            state = torch.load(path, map_location="cpu" if not torch.cuda.is_available() else None)
            device = "cuda" if torch.cuda.is_available() else "cpu"
            return torch.load(path, map_location=map_location), state, device
        '''
    found = {f.span.line: f for f in scan(src) if f.code == "NM201"}
    assert {line: f.fix_class for line, f in found.items()} == {5: FixClass.UNSAFE, 6: FixClass.UNSAFE, 7: FixClass.SAFE}
    assert "map_location=None" in found[5].fixes[0].title
    out = fixed(src)
    assert 'map_location = None if torch.cuda.is_available() else torch.device("cpu")' in out
    assert 'map_location="cpu" if not torch.cuda.is_available() else None' in out
    assert 'device = "neuron" if torch.neuron.is_available() else "cpu"' in out


def test_an_if_that_loads_a_checkpoint_with_no_map_location_on_its_cuda_branch_is_an_unsafe_fix() -> None:
    """torchmultimodal's `if not torch.cuda.is_available(): torch.load(p, map_location=cpu) else:
    torch.load(p)`, the early-return and `map_location = None` forms of the same choice: flipped to
    Neuron, a Trainium run loads a GPU checkpoint onto CUDA. A branch that loads to the CPU moves."""
    src = '''\
        import torch
        from torch.hub import load_state_dict_from_url


        def load(path):
            if not torch.cuda.is_available():
                return torch.load(path, map_location=torch.device("cpu"))
            else:
                return torch.load(path)


        def load_hub(url):
            if torch.cuda.is_available():
                return load_state_dict_from_url(url)
            return load_state_dict_from_url(url, map_location="cpu")


        def load_statement(path):
            if torch.cuda.is_available():
                map_location = None
            else:
                map_location = "cpu"
            return torch.load(path, map_location=map_location)


        def fine(path):
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            return torch.load(path, map_location="cpu")
        '''
    found = {f.span.line: f for f in scan(src) if f.code == "NM201"}
    assert {line: f.fix_class for line, f in found.items()} == {
        6: FixClass.UNSAFE, 13: FixClass.UNSAFE, 19: FixClass.UNSAFE, 27: FixClass.SAFE}
    assert "calls `torch.load` with no `map_location`" in found[6].fixes[0].title
    assert "calls `load_state_dict_from_url` with no `map_location`" in found[13].fixes[0].title
    assert "map_location=None" in found[19].fixes[0].title
    assert fixed(src).count("torch.cuda.is_available()") == 3


def test_a_check_that_picks_a_device_given_from_elsewhere_is_an_unsafe_fix() -> None:
    """Ax's `torch.device(json["device"]) if torch.cuda.is_available() else torch.device("cpu")`
    and `args.device if torch.cuda.is_available() else "cpu"`: a Trainium run would take the saved
    or default device (`cuda`) where it fell back to the CPU. A flag or a CUDA literal the fix
    renames beside it still moves."""
    src = '''\
        import torch


        def load(d, args, rank):
            dev = torch.device(d["device"]) if torch.cuda.is_available() else torch.device("cpu")
            device = args.device if torch.cuda.is_available() else "cpu"
            use_amp = args.amp if torch.cuda.is_available() else False
            ok = torch.device(f"cuda:{rank}") if torch.cuda.is_available() else torch.device("cpu")
            return dev, device, use_amp, ok
        '''
    found = {f.span.line: f for f in scan(src) if f.code == "NM201"}
    assert {line: f.fix_class for line, f in found.items()} == {
        5: FixClass.UNSAFE, 6: FixClass.UNSAFE, 7: FixClass.SAFE, 8: FixClass.SAFE}
    assert "the device it is given" in found[5].fixes[0].title


def test_a_check_that_sets_a_flag_choosing_a_load_with_no_map_location_is_an_unsafe_fix() -> None:
    """terratorch's `if not torch.cuda.is_available(): self.CPU_ONLY = True else: self.CPU_ONLY =
    False`, then `if self.CPU_ONLY: torch.load(p, map_location="cpu") else: torch.load(p)`; the
    same through a local flag set in one branch only. A flag nothing loads by still moves."""
    src = '''\
        import torch


        class Factory:
            def build(self, path):
                if not torch.cuda.is_available():
                    self.CPU_ONLY = True
                else:
                    self.CPU_ONLY = False
                if self.CPU_ONLY:
                    state = torch.load(path, map_location="cpu")
                else:
                    state = torch.load(path)
                return state


        def load(path):
            cpu = False
            if not torch.cuda.is_available():
                cpu = True
            if not cpu:
                return torch.load(path)
            return torch.load(path, map_location="cpu")


        def unread(self):
            if not torch.cuda.is_available():
                self.ON_CPU = True
        '''
    found = {f.span.line: f for f in scan(src) if f.code == "NM201"}
    assert {line: f.fix_class for line, f in found.items()} == {
        6: FixClass.UNSAFE, 19: FixClass.UNSAFE, 27: FixClass.SAFE}
    assert "calls `torch.load` with no `map_location`" in found[6].fixes[0].title


def test_a_physics_simulators_device_is_not_renamed() -> None:
    """Isaac Lab's `env_cfg.sim.device` and Isaac Gym's `sim_device=` go to PhysX, which takes
    only `cuda[:N]` or `cpu` (Isaac Sim raises, Isaac Gym silently falls back to CPU physics); the
    agent's own torch device beside them is renamed."""
    src = '''\
        def make(env_cfg, agent_cfg, rank, VecTask, cfg):
            env_cfg.sim.device = f"cuda:{rank}"
            agent_cfg.device = f"cuda:{rank}"
            _sim_device = f"cuda:{rank}"
            return VecTask(cfg, rl_device=f"cuda:{rank}", sim_device=_sim_device), VecTask(cfg, sim_device="cuda:0")
        '''
    found = {f.span.line: f for f in scan(src)}
    assert [line for line, f in sorted(found.items()) if f.fix_class is FixClass.MANUAL] == [2, 4, 5]
    assert "physics simulator's device" in found[2].message
    out = fixed(src, unsafe=True)
    assert 'env_cfg.sim.device = f"cuda:{rank}"' in out and 'agent_cfg.device = f"neuron:{rank}"' in out
    assert 'rl_device=f"neuron:{rank}"' in out and 'sim_device="cuda:0"' in out


def test_a_backend_chosen_by_a_guard_moves_with_its_guard_when_the_call_renames_it() -> None:
    """openpi's `backend = "nccl" if torch.cuda.is_available() else "gloo"` then
    `init_process_group(backend=backend)`: the call's fix renames the `"nccl"` inside the guard, so
    the guard decides it too; that rename also settles the literal's own (fixless) finding, so
    test and backend move together, never one without the other."""
    src = '''\
        import torch
        import torch.distributed as dist


        def setup():
            backend = "nccl" if torch.cuda.is_available() else "gloo"
            dist.init_process_group(backend=backend)
        '''
    assert 'backend = "neuron" if torch.neuron.is_available() else "gloo"' in fixed(src)
    held = textwrap.dedent('''\
        import torch
        import torch.distributed as dist


        def setup():
            if torch.cuda.is_available():
                backend = "nccl"
                major, _ = torch.cuda.get_device_capability()
            else:
                backend = "gloo"
            dist.init_process_group(backend=backend)
        ''')
    assert fixed(held) == held  # the capability query stays CUDA's: the guard, and the backend under it, stay


def test_an_if_that_leaves_its_block_guards_the_rest_of_it() -> None:
    """sevenn's `if not torch.cuda.is_available(): raise NotImplementedError(...)` and tabpfn's
    `... return False` stand before CUDA-only code (`get_device_capability`): flipped alone, the
    test would let Trainium into that code instead of the clear error or the CPU answer."""
    src = '''\
        import torch


        def d3(x):
            if not torch.cuda.is_available():
                raise NotImplementedError("CPU + D3 is not implemented yet")
            major, _ = torch.cuda.get_device_capability()
            return major


        def sync(x):
            if not torch.cuda.is_available():
                return x
            torch.cuda.synchronize()
            return x
        '''
    out = fixed(src)
    assert "    if not torch.cuda.is_available():\n        raise" in out
    assert "    if not torch.neuron.is_available():\n        return x\n    torch.neuron.synchronize()" in out


def test_an_if_not_with_no_else_guards_the_rest_of_its_block() -> None:
    """alpaca_eval's `if not torch.cuda.is_available(): model_kwargs["load_in_8bit"] = False` readies
    the load that follows for the CPU: flipped alone, Trainium would keep 8-bit loading on."""
    src = '''\
        import torch
        from transformers import AutoModelForCausalLM


        def load(name, model_kwargs):
            if not torch.cuda.is_available():
                model_kwargs["load_in_8bit"] = False
            return AutoModelForCausalLM.from_pretrained(name, device_map="auto", **model_kwargs)
        '''
    assert fixed(src) == textwrap.dedent(src)


def test_a_skip_condition_guards_the_test_it_skips() -> None:
    """sentence-transformers, ignite, opacus: `@pytest.mark.skipif(not torch.cuda.is_available())`
    (also `unittest.skipIf`/`skipUnless` on a function or class, and a `pytest.param`'s marks)
    decides whether the test runs: renamed while the test keeps CUDA code, the test runs on
    Trainium and fails. With a test that is all fixable, the condition moves with it."""
    src = '''\
        import unittest

        import pytest
        import torch

        DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU"))]


        @pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
        def test_moves():
            x = torch.ones(2, device="cuda")
            assert x.cuda().is_cuda


        @unittest.skipUnless(torch.cuda.is_available(), "needs CUDA")
        class TestKernels(unittest.TestCase):
            def test_graph(self):
                torch.cuda.CUDAGraph()


        @pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a device")
        def test_sync():
            torch.cuda.synchronize()
        '''
    out = fixed(src)
    assert out.count("torch.cuda.is_available()") == 3 and 'device="cuda"' in out
    assert "@pytest.mark.skipif(not torch.neuron.is_available()" in out and "torch.neuron.synchronize()" in out
    # what stays CUDA's whatever the run: the listed "cuda", the CUDA graph
    held = sorted(f.span.line for f in scan(src) if f.code == "NM201" and not f.fixes)
    assert held == [6, 15]
    assert '@pytest.mark.skipif(not torch.neuron.is_available(), reason="needs CUDA")' in fixed(src, unsafe=True)


def test_a_module_or_class_pytestmark_and_a_named_skip_mark_guard_their_tests() -> None:
    """liger-kernel's `pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), ...)` over
    CUDA graph tests, and its `cuda_required = pytest.mark.skipif(...)` used as `@cuda_required`:
    renamed alone, the skip lets the CUDA-only tests run on Trainium."""
    graph = """
        def test_graph():
            x = torch.randn(4, device="cuda")
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = x * 2
            g.replay()
        """
    module = "import pytest\nimport torch\n\npytestmark = [pytest.mark.slow, pytest.mark.skipif(not torch.cuda.is_available(), reason='CUDA')]\n"
    named = "import pytest\nimport torch\n\ncuda_required = pytest.mark.skipif(not torch.cuda.is_available(), reason='CUDA')\n\n@cuda_required"
    in_class = "import pytest\nimport torch\n\nclass TestGraph:\n    pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='CUDA')\n"
    cases = [module + textwrap.dedent(graph), named + textwrap.dedent(graph),
             in_class + textwrap.indent(textwrap.dedent(graph).replace("test_graph()", "test_graph(self)"), "    ")]
    for src in cases:
        for target in Target:
            assert fixed(src, target, unsafe=True) == src, src
    # with nothing CUDA-only under it, the mark moves with the tests
    plain = named + '\ndef test_add():\n    assert (torch.ones(2, device="cuda") + 1).sum() == 4\n'
    out = fixed(plain)
    assert "skipif(not torch.neuron.is_available()" in out and 'device="neuron"' in out


def test_the_same_test_twice_in_one_function_stays_or_moves_together() -> None:
    """ColossalAI's Gemini optimizer: two loops test `chunk.device_type == "cuda" or ... == "npu"`;
    the first guards CUDA-only code and stays, so the second, renamed alone, would disagree with
    it. In another function the same test is decided on its own."""
    src = """\
        import torch


        def step(chunks, state):
            for chunk in chunks:
                if chunk.device_type == "cuda" or chunk.device_type == "npu":
                    continue
                torch.cuda.set_stream(chunk.stream)
            for chunk in chunks:
                if chunk.device_type == "cuda" or chunk.device_type == "npu":
                    state[chunk] = state[chunk].to("cuda")


        def other(chunk, state):
            if chunk.device_type == "cuda" or chunk.device_type == "npu":
                state[chunk] = state[chunk].to("cuda")
        """
    out = fixed(src).splitlines()
    assert out[5] == out[9] == '        if chunk.device_type == "cuda" or chunk.device_type == "npu":'
    assert out[10] == '            state[chunk] = state[chunk].to("cuda")'
    assert out[14:16] == ['    if chunk.device_type == "neuron" or chunk.device_type == "npu":',
                          '        state[chunk] = state[chunk].to("neuron")']


def test_a_cuda_word_in_a_variables_name_holds_no_guard_a_called_one_does() -> None:
    """torch-audiomentations' `cuda_device = torch.device("cuda")` under a CUDA skip, ColossalAI's
    `used_cuda_margin += chunk.mem`: the value does not depend on CUDA, so the guard moves with the
    code; a function or object whose name says CUDA (`cuda_kernel(x)`, `cuda_ext.run()`) is CUDA
    code, and holds it."""
    src = """\
        import torch


        def place(x):
            if torch.cuda.is_available():
                cuda_device = torch.device("cuda")
                used_cuda_margin = x.numel()
                return x.to(cuda_device), used_cuda_margin
            return x, 0


        def run(x):
            if torch.cuda.is_available():
                x = x.to("cuda")
                return cuda_kernel(x)
            return x


        def ext(x):
            if torch.cuda.is_available():
                x = x.to("cuda")
                return cuda_ext.run(x)
            return x
        """
    out = fixed(src)
    assert 'if torch.neuron.is_available():\n        cuda_device = torch.device("neuron")' in out
    assert out.count("if torch.cuda.is_available():") == 2 and out.count('x.to("cuda")') == 2
    finding = next(f for f in scan(src) if f.symbol == "used_cuda_margin")
    assert finding.details == {"variable": True} and finding.fix_class is FixClass.MANUAL


def test_a_params_marks_chosen_by_a_condition_guard_its_values() -> None:
    """torch-audiomentations' `pytest.param("cuda", marks=pytest.mark.skip("Requires CUDA") if not
    torch.cuda.is_available() else [])`: the condition decides whether the `cuda` case runs, as a
    `skipif` mark's would."""
    src = """\
        import pytest
        import torch


        @pytest.mark.parametrize("device_name", [
            pytest.param("cpu"),
            pytest.param("cuda", marks=pytest.mark.skip("Requires CUDA") if not torch.cuda.is_available() else []),
            pytest.param("cuda", marks=() if torch.cuda.is_available() else pytest.mark.skip("no")),
        ])
        def test_ones(device_name):
            assert torch.ones(2, device=torch.device(device_name)).sum().item() == 2
        """
    for target in Target:
        assert fixed(src, target, unsafe=True) == textwrap.dedent(src)


def test_a_cuda_call_with_a_cuda_argument_is_not_fixed_by_the_arguments_rename() -> None:
    """ColossalAI's `if model_device.type == "cuda": model.cuda(torch.cuda.current_device())`:
    the `.cuda(...)` finding stands at its argument, whose own rename edits nearly the same text;
    it is still unfixed (its fix is unsafe), so the guard stays in a safe run."""
    src = """\
        import torch


        def move(model, dev):
            if dev.type == "cuda":
                model.cuda(torch.cuda.current_device())
            return model
        """
    assert fixed(src) == textwrap.dedent(src)


def test_a_held_guard_cites_a_cuda_word_left_out_of_the_report_by_its_line() -> None:
    """torch-fidelity's `if torch.cuda.is_available() and not args["cuda"]:`: the `"cuda"` key holds
    the check but is no finding of its own (another is on its line), so no code is cited for it."""
    src = 'import torch\n\n\ndef a(args):\n    if torch.cuda.is_available() and not args["cuda"]:\n        print("x")\n'
    (check,) = scan(src)
    assert check.code == "NM201" and check.message.endswith('it guards `"cuda"` (line 5), which is not rewritten')


def test_a_device_string_that_holds_a_cuda_call_moves_with_it() -> None:
    """espnet's `map_location=f"cuda:{torch.cuda.current_device()}"`: where the call's rename is
    unsafe (`torch` may be None here), the f-string is not renamed around it either."""
    src = """\
        try:
            import torch
        except ImportError:
            torch = None


        def load(ngpu):
            return f"cuda:{torch.cuda.current_device()}" if ngpu > 0 else "cpu"
        """
    assert fixed(src) == textwrap.dedent(src)
    assert 'f"neuron:{torch.neuron.current_device()}"' in fixed(src, unsafe=True)


def test_a_removed_setting_goes_only_where_it_is_set_not_where_it_is_read() -> None:
    """espnet's `add_argument("--cudnn_enabled", default=torch.backends.cudnn.enabled)`: removing
    the statement would take the option with it (configurations that set it would fail to load)."""
    src = ("import argparse\nimport torch\n\ntorch.backends.cudnn.benchmark = True\np = argparse.ArgumentParser()\n"
           'p.add_argument("--cudnn_enabled", default=torch.backends.cudnn.enabled)\n')
    out = fixed(src, unsafe=True)
    assert "torch.backends.cudnn.benchmark" not in out and 'p.add_argument("--cudnn_enabled", default=torch.backends.cudnn.enabled)' in out
    read = next(f for f in scan(src) if f.span.line == 6)
    assert read.fix_class is FixClass.MANUAL and not read.fixes


def test_a_device_index_stays_where_the_other_choice_names_one_too() -> None:
    """d3rlpy's `"cuda:0" if value else "cpu:0"`, taken apart as `cuda:<i>` in another file: the
    index stays (an unsafe fix, as for a kept index); beside a bare `"cpu"` it goes."""
    src = 'def pick(gpu):\n    return "cuda:0" if gpu else "cpu:0"\n\n\nDEVICE = "cuda:0" if True else "cpu"\n'
    assert fixed(src) == 'def pick(gpu):\n    return "cuda:0" if gpu else "cpu:0"\n\n\nDEVICE = "neuron" if True else "cpu"\n'
    assert '"neuron:0" if gpu else "cpu:0"' in fixed(src, unsafe=True)


def test_an_or_chain_guards_its_later_operands() -> None:
    """optimum-quanto's `not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 8`:
    the capability query runs only when the check lets it; renamed alone, it runs on Trainium."""
    src = "import torch\nold = not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 8\n"
    for target in Target:
        assert fixed(src, target, unsafe=True) == src


def test_each_operand_of_a_longer_chain_is_guarded_by_those_before_it() -> None:
    """liger-kernel's `mm_ok and x.device.type == "cuda" and torch.cuda.get_device_capability(x.device)[0] >= 8
    and ...`: the capability query in the middle runs only on CUDA; renaming the device test alone
    sends a `neuron` tensor to it."""
    src = """\
        import torch


        def project(x, w, mm_ok):
            if (mm_ok and x.device.type == "cuda"
                    and torch.cuda.get_device_capability(x.device)[0] >= 8 and x.dtype is torch.float16):
                return torch.mm(x, w.t(), out_dtype=torch.float32)
            return (x @ w.t()).float()
        """
    for target in Target:
        assert fixed(src, target, unsafe=True) == textwrap.dedent(src)


def test_a_cuda_string_in_a_test_holds_what_it_guards() -> None:
    """pyro's `if "cuda" in example and np > torch.cuda.device_count()`: the example's CUDA run is
    chosen by name, so the count it is gated by stays CUDA's too (a CUDA name, `use_cuda`, does
    not hold its test: the flag moves with the code)."""
    src = '''\
        import torch


        def launch(example, np):
            if "cuda" in example and np > torch.cuda.device_count():
                return None
            return example


        def count(use_cuda):
            if use_cuda and torch.cuda.device_count() > 1:
                return 2
            return 1
        '''
    out = fixed(src, unsafe=True)
    assert 'if "cuda" in example and np > torch.cuda.device_count():' in out
    assert "if use_cuda and torch.neuron.device_count() > 1:" in out


def test_one_statement_s_cuda_calls_are_rewritten_together() -> None:
    """gpytorch's `[torch.cuda.max_memory_allocated(i) for i in range(torch.cuda.device_count())]`
    with the count's fix unsafe, autoawq's counter over `get_device_properties(d).total_memory`
    (no fix): renamed in part, Neuron's counters are read for CUDA's devices. Separate statements
    on one line are not held by each other."""
    src = '''\
        import torch


        def least_used():
            return torch.tensor([torch.cuda.max_memory_allocated(i) for i in range(torch.cuda.device_count())])


        def frac(d):
            return torch.cuda.max_memory_allocated(d) / torch.cuda.get_device_properties(d).total_memory


        def fine():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        '''
    out = fixed(src)
    assert "torch.cuda.max_memory_allocated(i)" in out and "torch.cuda.max_memory_allocated(d)" in out
    assert "torch.neuron.synchronize()" in out and "torch.neuron.empty_cache()" in out
    assert "torch.neuron.max_memory_allocated(i) for i in range(torch.neuron.device_count())" in fixed(src, unsafe=True)
    held = next(f for f in scan(src) if f.span.line == 9 and f.code == "NM207")
    assert not held.fixes and "its statement also uses `torch.cuda.get_device_properties` (NM214, line 9)" in held.message


def test_an_asserted_or_raised_cuda_device_is_a_precondition_outside_tests() -> None:
    """optimum-quanto's `assert data.device.type == "cuda"` before packing for a CUDA kernel: the
    rename is unsafe (CUDA hosts would fail it, and the code after it needs CUDA). In a test
    function the assert checks the device the test chose, and moves with it."""
    src = '''\
        import torch


        class Packed:
            def __init__(self, data):
                assert data.device.type == "cuda"
                self.data = data


        def test_packed():
            x = torch.ones(2, device="cuda")
            assert x.device.type == "cuda"


        def check(x):
            if x.device.type != "cuda":
                raise ValueError("x must be a CUDA tensor")
            return x
        '''
    out = fixed(src)
    assert 'assert data.device.type == "cuda"' in out and 'assert x.device.type == "neuron"' in out
    precondition = next(f for f in scan(src) if f.span.line == 6)
    assert precondition.fix_class is FixClass.UNSAFE and "asserts a CUDA device" in precondition.fixes[0].title
    # liger-kernel's `if x.device.type != "cuda": raise ...`: the same requirement, stated by a raise
    assert 'if x.device.type != "cuda":' in out


def test_a_finding_whose_rule_has_a_fix_but_not_for_this_site_is_manual() -> None:
    """fairscale's `class GradScaler(TorchGradScaler)`: NM303's fixer has no edit for a base class;
    the finding is manual, not an unsafe fix that `--unsafe-fixes` would not apply."""
    src = "from torch.cuda.amp import GradScaler as TorchGradScaler\n\n\nclass GradScaler(TorchGradScaler):\n    pass\n"
    base = next(f for f in scan(src) if f.code == "NM303")
    assert not base.fixes and base.fix_class is FixClass.MANUAL


def test_a_function_that_picks_neuron_itself_keeps_its_cuda_branch() -> None:
    """sentence-transformers' `get_device_name`: CUDA first, Neuron behind `hasattr(torch,
    "neuron")`. Renamed, CUDA hosts lose their device and hosts without `torch.neuron` fail on the
    unguarded check put first. Another function of the file still moves."""
    src = '''\
        import torch


        def get_device_name():
            if torch.cuda.is_available():
                return "cuda"
            if hasattr(torch, "neuron") and torch.neuron.is_available():
                return "neuron"
            return "cpu"


        def other():
            return "cuda" if torch.cuda.is_available() else "cpu"
        '''
    out = fixed(src, unsafe=True)
    assert "    if torch.cuda.is_available():\n        return \"cuda\"" in out
    assert 'return "neuron" if torch.neuron.is_available() else "cpu"' in out
    kept = [f for f in scan(src) if f.span.line in (5, 6)]
    assert len(kept) == 2 and all(f.fix_class is FixClass.MANUAL and "picks Neuron itself (line 7)" in f.message
                                  for f in kept)


def test_a_listed_cuda_entry_under_a_guard_holds_it() -> None:
    """optimum-quanto's conftest: `if torch.cuda.is_available(): devices += ["cuda"]`. The entry
    keeps its `"cuda"` beside an added `"neuron"`, so a moved guard would make Trainium run every
    test's `cuda` case: the guard stays, and so does the entry. Outside a guard the entry is added."""
    src = 'import torch\nDEVICES = ["cpu", "cuda"]\ndevices = ["cpu"]\nif torch.cuda.is_available():\n    devices += ["cuda"]\n'
    out = fixed(src, unsafe=True)
    assert out.splitlines()[1:] == ['DEVICES = ["cpu", "cuda", "neuron"]', 'devices = ["cpu"]',
                                    "if torch.cuda.is_available():", '    devices += ["cuda"]']


def test_cuda_of_a_parameter_that_defaults_to_none_moves_to_the_default_neuron_device() -> None:
    """gpytorch's and mmdet's `def cuda(self, device=None): ... .cuda(device)`: `f"neuron:{device}"`
    was `"neuron:None"` for the usual call; `torch.device("neuron", device)` is the default device
    then, and the numbered one otherwise. An index that has no None default keeps the f-string."""
    src = "import torch\n\n\ndef move(model, device=None, rank=0):\n    return model.cuda(device), model.cuda(rank)\n"
    out = fixed(src, unsafe=True)
    assert 'return model.to(torch.device("neuron", device)), model.to(f"neuron:{rank}")' in out


def test_an_option_not_named_as_a_device_keeps_its_cuda_default_unless_unsafe() -> None:
    """stanza's `--profile_sort` (`default='cuda', choices=['cpu', 'cuda']`) picks the profiler's
    sort key: renamed, the default output sorts by CPU time. A `--device` option still moves."""
    src = ("import argparse\np = argparse.ArgumentParser()\n"
           "p.add_argument('--profile_sort', default='cuda', choices=['cpu', 'cuda'])\n"
           "p.add_argument('--device', default='cuda')\n")
    out = fixed(src)
    assert "p.add_argument('--profile_sort', default='cuda', choices=['cpu', 'cuda'])" in out
    assert "p.add_argument('--device', default='neuron')" in out
    assert all("`--profile_sort` is not named as a device" in f.fixes[0].title for f in scan(src) if f.span.line == 3)


def test_a_rocm_test_and_a_server_assigned_gpu_are_unsafe_renames() -> None:
    """sentence-transformers' `"rocm" if device.type == "cuda" and torch.version.hip`: ROCm devices
    are `cuda` too, and `neuron` would never be one. A TorchServe handler's `torch.device(loc + ":" +
    str(properties.get("gpu_id"))) if torch.cuda.is_available() else loc`: a Trainium host is
    assigned no GPU, and the check would build `"neuron:None"`."""
    src = '''\
        import torch


        def kind(device):
            return "rocm" if device.type == "cuda" and torch.version.hip else device.type


        def place(properties, loc):
            return torch.device(loc + ":" + str(properties.get("gpu_id")) if torch.cuda.is_available() else loc)
        '''
    assert fixed(src) == textwrap.dedent(src)
    titles = {f.span.line: f.fixes[0].title for f in scan(src)}
    assert "runs only for another device" in titles[5] and "reads `gpu_id`" in titles[9]


def test_code_that_runs_only_for_rocm_or_another_vendors_device_is_no_safe_rename() -> None:
    """unsloth's `if DEVICE_TYPE_TORCH == "hip": DEVICE_TYPE_TORCH = "cuda"`, its `if
    torch.version.hip:` wavefront query, liger-kernel's `torch.cuda.is_available() and
    torch.version.hip`: AMD GPUs are `cuda` devices too, so renamed these stop working there and
    claim Neuron is one. The CUDA side of the same tests (`else "cuda"`, `and not is_rocm`) moves."""
    src = """\
        import torch

        DEVICE_TYPE = "hip" if torch.version.hip else "cuda"
        if DEVICE_TYPE == "hip":
            DEVICE_TYPE = "cuda"
        if torch.cuda.is_available() and torch.version.hip:
            torch.cuda.empty_cache()
        if torch.cuda.is_available() and not is_rocm():
            torch.cuda.empty_cache()


        def wavefront(index):
            if torch.version.hip:
                return torch.device("cuda", index)
            return torch.device("cuda", index)


        def probe(is_rocm):
            if not is_rocm or not torch.cuda.is_available():
                return None
            return torch.cuda.current_device()


        def bucket(tensor):
            device_type = tensor.device.type
            if device_type == "npu":
                device_type = "cuda"
            return device_type
        """
    out = fixed(src)
    assert out.splitlines()[2:9] == [
        'DEVICE_TYPE = "hip" if torch.version.hip else "neuron"', 'if DEVICE_TYPE == "hip":',
        '    DEVICE_TYPE = "cuda"', "if torch.cuda.is_available() and torch.version.hip:",
        "    torch.cuda.empty_cache()", "if torch.neuron.is_available() and not is_rocm():",
        "    torch.neuron.empty_cache()"]
    assert 'return torch.device("cuda", index)\n    return torch.device("neuron", index)' in out
    assert "if not is_rocm or not torch.cuda.is_available():" in out and "torch.cuda.current_device()" in out
    # ColossalAI counts an NPU's memory under "cuda": a label of the NPU branch, not a device it picks
    assert 'if device_type == "npu":\n        device_type = "cuda"' in out
    label = textwrap.dedent(src).splitlines().index('        device_type = "cuda"') + 1
    assert "runs only for another device" in next(f.fixes[0].title for f in scan(src) if f.span.line == label)


def test_a_flag_passed_to_a_function_of_the_file_holds_the_check_it_was_assigned() -> None:
    """fairseq's `use_cuda = torch.cuda.is_available() and not cfg.cpu` then `optimize_models(cfg,
    use_cuda, models)`, whose `if use_cuda: model.cuda()` stays (an unsafe fix): renamed, the check
    sends Trainium into `.cuda()`, where it used to stay on the CPU."""
    src = '''\
        import torch


        def optimize_models(use_cuda, models):
            for model in models:
                if use_cuda:
                    model.cuda()


        def main(models, cpu):
            use_cuda = torch.cuda.is_available() and not cpu
            optimize_models(use_cuda, models)
        '''
    assert fixed(src) == textwrap.dedent(src)
    assert "use_cuda = torch.neuron.is_available() and not cpu" in fixed(src, unsafe=True)


def test_a_missing_cuda_tested_with_where_a_value_is_is_no_safe_rename() -> None:
    """chemprop's `if not torch.cuda.is_available() and metric.device.type != "cpu":` rebuilds a
    checkpoint's metric saved on a GPU: it asks whether the device the value is on is missing
    here. Renamed, it asks about Neuron, which a Trainium host has, and the CUDA-placed metric is
    no longer rebuilt. A check beside `torch.device(...)` (no value's placement) still moves."""
    src = '''\
        import torch


        def load(d):
            metric = d["metric"]
            if not torch.cuda.is_available() and metric.device.type != "cpu":
                metric = rebuild(metric)
            if not torch.cuda.is_available() and d["weights"].is_cuda:
                d["weights"] = d["weights"].cpu()
            return metric


        def fallback(metric):
            if not torch.cuda.is_available() and torch.device("cpu").type == "cpu":
                return metric
            return metric
        '''
    found = {f.span.line: f for f in scan(src) if f.code == "NM201"}
    assert {line: f.fix_class for line, f in found.items()} == {6: FixClass.UNSAFE, 8: FixClass.UNSAFE,
                                                                14: FixClass.SAFE}
    assert "`metric.device`" in found[6].fixes[0].title and "Neuron is there" in found[6].fixes[0].title
    out = fixed(src)
    assert 'if not torch.cuda.is_available() and metric.device.type != "cpu":' in out
    assert 'if not torch.neuron.is_available() and torch.device("cpu").type == "cpu":' in out


def test_the_same_check_twice_in_a_function_stays_when_one_is_an_unsafe_fix() -> None:
    """mmpose's and mmdet3d's TorchServe handlers: `'cuda' if torch.cuda.is_available() else 'cpu'`
    picks `map_location`, then the same check picks `map_location + ':' + gpu_id`, an unsafe fix (a
    Trainium host is assigned no GPU). Renamed alone, the first gives bare `neuron` while the
    second takes its CPU branch: every worker lands on the default core. Both stay, or both move."""
    src = '''\
        import torch


        class Handler:
            def initialize(self, context):
                properties = context.system_properties
                self.map_location = 'cuda' if torch.cuda.is_available() else 'cpu'
                self.device = torch.device(self.map_location + ':' + str(properties.get('gpu_id'))
                                           if torch.cuda.is_available() else self.map_location)
        '''
    assert fixed(src) == textwrap.dedent(src)
    out = fixed(src, unsafe=True)
    assert "self.map_location = 'neuron' if torch.neuron.is_available() else 'cpu'" in out
    assert "if torch.neuron.is_available() else self.map_location)" in out


def test_a_flag_set_in_the_branches_of_a_check_holds_the_check() -> None:
    """allennlp's trainer: `if cuda.device_count() > 0: cuda_device = 0 else: cuda_device = -1`, then
    `if cuda_device >= 0: model = model.cuda(cuda_device)`, which stays (an unsafe fix). Renamed,
    the count sends Trainium into `.cuda(0)`, where it used to stay on the CPU; as the ternary
    `0 if torch.cuda.is_available() else -1` already did."""
    src = '''\
        import torch


        def build(model, cuda_device=None):
            if cuda_device is None:
                if torch.cuda.device_count() > 0:
                    cuda_device = 0
                else:
                    cuda_device = -1
            if cuda_device >= 0:
                model = model.cuda(cuda_device)
            return model


        def count():
            if torch.cuda.device_count() > 0:
                workers = 4
            else:
                workers = 1
            return workers
        '''
    out = fixed(src)
    assert "if torch.cuda.device_count() > 0:\n            cuda_device = 0" in out
    assert "if torch.neuron.device_count() > 0:\n        workers = 4" in out
    assert "if torch.neuron.device_count() > 0:\n            cuda_device = 0" in fixed(src, unsafe=True)


def test_a_cuda_module_returned_under_a_device_test_holds_the_test() -> None:
    """xtuner's `get_torch_device_module`: `if device == "cuda": return torch.cuda`. The module is
    no value's name (the generic finding's `variable` detail is for `args.cuda`, `use_cuda`):
    renamed alone, the test hands Trainium the `torch.cuda` module, where it used to raise."""
    src = '''\
        import torch


        def get_torch_device_module(device):
            if device == "cuda":
                return torch.cuda
            raise NotImplementedError(device)


        def flag(args, device):
            if device == "cuda":
                return args.cuda
            return False
        '''
    out = fixed(src)
    assert 'if device == "cuda":\n        return torch.cuda' in out
    assert 'if device == "neuron":\n        return args.cuda' in out
    found = {f.span.line: f for f in scan(src) if f.code == "NM290"}
    assert not found[6].details and found[12].details == {"variable": True}


def test_a_cuda_call_with_a_keyword_to_does_not_take_gets_no_fix() -> None:
    """controlnet-aux's `network.cuda(device_id=gpu_ids[0])`: `.to("neuron", device_id=...)` would
    raise a TypeError; `non_blocking=` passes on."""
    src = '''\
        def place(network, gpu_ids):
            network.cuda(device_id=gpu_ids[0])
            network.cuda(non_blocking=True)
        '''
    found = {f.span.line: f for f in scan(src) if f.code == "NM102"}
    assert found[2].fix_class is FixClass.MANUAL and not found[2].fixes
    assert 'network.to("neuron", non_blocking=True)' in fixed(src, unsafe=True)


def test_a_file_that_mocks_the_cuda_api_keeps_its_checks_and_expectations() -> None:
    """sahi's tests: `monkeypatch.setattr(torch.cuda, "is_available", lambda: True)`, then `assert
    select_device().type == "cuda"`. The mock stays CUDA's: renamed, the check no longer reads it
    and the expectation no longer meets it (the test failed on every host)."""
    src = '''\
        import torch
        from unittest import mock


        def select_device():
            if torch.cuda.is_available():
                return torch.device("cuda")
            return torch.device("cpu")


        def test_selects_cuda(monkeypatch):
            monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
            assert select_device().type == "cuda"


        @mock.patch("torch.cuda.device_count", return_value=2)
        def test_counts(_):
            assert torch.cuda.device_count() == 2
        '''
    assert fixed(src) == textwrap.dedent(src)
    titles = [f.fixes[0].title for f in scan(src) if f.fixes]
    assert titles and all("mocks `torch.cuda`" in t for t in titles)
    plain = src.replace('monkeypatch.setattr(torch.cuda, "is_available", lambda: True)', "pass").replace(
        '@mock.patch("torch.cuda.device_count", return_value=2)', "@mock.patch('os.cpu_count')")
    assert 'return torch.device("neuron")' in fixed(plain)


def test_a_check_that_sets_the_gpu_ids_is_no_safe_rename() -> None:
    """controlnet-aux's LeReS: `if not torch.cuda.is_available(): opt.gpu_ids = []  # cpu mode`,
    then `Pix2Pix4DepthModel(opt)`, whose `init_net` asserts CUDA for a non-empty list. Renamed, a
    Trainium host keeps `gpu_ids=[0]` and the CPU fallback that worked becomes a crash."""
    src = '''\
        import torch


        def build(opt, make):
            if not torch.cuda.is_available():
                opt.gpu_ids = []
            return make(opt)


        def workers(opt):
            if torch.cuda.is_available():
                opt.workers = 4
            return opt
        '''
    out = fixed(src)
    assert "if not torch.cuda.is_available():\n        opt.gpu_ids = []" in out
    assert "if torch.neuron.is_available():\n        opt.workers = 4" in out
    (held,) = [f for f in scan(src) if f.span.line == 5]
    assert "decides `opt.gpu_ids`" in held.fixes[0].title


def test_a_backend_chosen_under_a_device_type_test_moves_with_the_test() -> None:
    """compressed-tensors: `accel_type = torch.accelerator.current_accelerator().type`, `if
    accel_type == "cuda": backend = "nccl"`, then `init_process_group(backend=backend)`. The
    comparison is a device type's (renamed with the backend); were it to stay CUDA's, the backend
    it chooses, renamed from the call, would stay too (a CUDA host would get `neuron`)."""
    src = '''\
        import torch
        import torch.distributed as dist


        def init():
            accel_type = torch.accelerator.current_accelerator().type
            if accel_type == "cuda":
                backend = "nccl"
            else:
                backend = "gloo"
            dist.init_process_group(backend=backend)


        def init_other(kind):
            if kind.lower() == "cuda":
                backend = "nccl"
            else:
                backend = "gloo"
            dist.init_process_group(backend=backend)
        '''
    out = fixed(src)
    assert 'if accel_type == "neuron":\n        backend = "neuron"' in out
    assert 'if kind.lower() == "cuda":\n        backend = "nccl"' in out


def test_a_cuda_attribute_of_a_module_in_a_chain_holds_the_test_before_it() -> None:
    """auto-round's SVD probe: `if device.type != "cuda" or torch.version.cuda is None: return None`,
    then cuSOLVER drivers. `torch.version.cuda` is left out of the report for the line's device
    string, but it still stays CUDA's: renamed alone, the first test sends Neuron into the probe."""
    src = '''\
        import torch


        def drivers(device, probe):
            if device.type != "cuda" or torch.version.cuda is None:
                return None
            torch.cuda.synchronize()
            return torch.linalg.svd(probe, driver="gesvda")
        '''
    assert fixed(src) == textwrap.dedent(src)
    assert [f.code for f in scan(src) if f.span.line == 5] == ["NM101"]


def test_a_shim_that_replaces_a_cuda_function_is_never_renamed() -> None:
    """auto-round's `fake_cuda_for_hpu`: `saved = torch.cuda.is_available`, `torch.cuda.is_available
    = lambda: True`, later put back. Renamed, the shim patches and restores `torch.neuron` (which
    an HPU host lacks). The file patches `torch.cuda`: its other fixes are unsafe too."""
    src = '''\
        import torch


        class fake_cuda_for_hpu:
            def __enter__(self):
                self._orig_is_available = torch.cuda.is_available
                torch.cuda.is_available = lambda: True

            def __exit__(self, *exc):
                torch.cuda.is_available = self._orig_is_available


        def pick():
            return "cuda" if torch.cuda.is_available() else "cpu"
        '''
    assert fixed(src) == textwrap.dedent(src)
    out = fixed(src, unsafe=True)
    assert out.count("torch.cuda.is_available") == 3 and 'return "neuron" if torch.neuron.is_available()' in out


def test_a_list_of_indexed_devices_is_renamed_whole_or_not_at_all() -> None:
    """compressed-tensors' tests: `[torch.device("cuda:0"), torch.device("cuda:1")]` lists devices
    to use. Renamed in part (`cuda:0` to the bare `neuron`, `cuda:1` unsafe) it mixes devices, and
    a `"neuron:0"` entry added beside `"cuda:0"` is one more device to use; each keeps its index."""
    src = '''\
        import torch


        def run(convert):
            a = convert(device=["cuda:0", torch.device("cuda:1")])
            b = [torch.device("cuda:0"), torch.device("cuda:1")]
            return a, b, ("cuda", "cpu")
        '''
    assert fixed(src) == textwrap.dedent(src).replace('("cuda", "cpu")', '("cuda", "neuron", "cpu")')
    out = fixed(src, unsafe=True)
    assert 'convert(device=["neuron:0", torch.device("neuron:1")])' in out
    assert 'b = [torch.device("neuron:0"), torch.device("neuron:1")]' in out


def test_a_recursive_function_passing_its_flag_on_is_followed_once() -> None:
    """torch's `_inductor/ir.py`: a function that calls itself with its own parameter. Each call
    used to append the parameter's values to themselves, doubling them per call site (32 calls:
    billions of values, the process killed for memory with the partial parse off)."""
    calls = "\n".join(f"    walk(node.children[{i}], use_cuda)" for i in range(32))
    src = f'import torch\n\n\ndef walk(node, use_cuda):\n    if use_cuda:\n        node.cuda()\n{calls}\n\n\nwalk(root, torch.cuda.is_available())\n'
    found = {f.code: f for f in scan(src)}
    assert found["NM201"].span.line == 41 and "NM102" in found


def test_a_device_list_built_from_a_cuda_count_moves_with_the_count() -> None:
    """poutyne's `Model.to("all")`: `[f"cuda:{i}" for i in range(torch.cuda.device_count())]`,
    whose count is an unsafe fix. Renamed alone, the string builds `neuron:i` devices from a CUDA
    count (a GPU host then moves the network to `neuron:0`)."""
    src = '''\
        import torch


        class Model:
            def to(self, device):
                if device == "all":
                    device = [f"cuda:{i}" for i in range(torch.cuda.device_count())]
                self.devices = device
                return self
        '''
    assert 'f"cuda:{i}" for i in range(torch.cuda.device_count())' in fixed(src)
    assert 'f"neuron:{i}" for i in range(torch.neuron.device_count())' in fixed(src, unsafe=True)


def test_a_device_compared_later_by_its_name_keeps_its_index() -> None:
    """poutyne's tests: `device = torch.device("cuda:0")` ... `assert x.device == device`. A
    tensor on `neuron` reports `neuron:0`, which is not equal to the bare `torch.device("neuron")`."""
    src = '''\
        import torch


        def check():
            device = torch.device("cuda:0")
            x = torch.zeros(2).to(device)
            assert x.device == device


        def place(t):
            device = torch.device("cuda:0")
            return t.to(device)
        '''
    out = fixed(src)
    assert 'device = torch.device("cuda:0")\n    x = torch.zeros(2)' in out
    assert 'device = torch.device("neuron")\n    return t.to(device)' in out


def test_a_check_held_for_another_check_of_its_function_says_which() -> None:
    """fastai's `show_install`: `available = "..." if torch.cuda.is_available() else "..."` stays
    with the same check at line 7, which guards cuDNN's version; its note names that check rather
    than claiming it guards the cuDNN call itself. A TorchServe handler's first choice names the
    check that reads its value."""
    src = '''\
        import torch


        def show_install(rep):
            available = "available" if torch.cuda.is_available() else "not available"
            rep.append(["torch", available])
            if torch.cuda.is_available():
                rep.append(["torch cudnn", torch.backends.cudnn.version()])
            return rep
        '''
    first = next(f for f in scan(src) if f.code == "NM201" and f.span.line == 5)
    assert first.fix_class is FixClass.MANUAL and "the same check at line 7 stays" in first.message
    handler = '''\
        import torch


        def initialize(properties):
            loc = 'cuda' if torch.cuda.is_available() else 'cpu'
            return torch.device(loc + ':' + str(properties.get('gpu_id')) if torch.cuda.is_available() else loc)
        '''

    titles = [fix.title for f in scan(handler) for fix in f.fixes]
    assert any("the check at line 6, which reads the value it picks, stays" in title for title in titles)


def test_a_device_a_held_conditional_compares_stays_with_it() -> None:
    """nnsight's worker: `device_map={"": 0} if device == "cuda" else {"": "cpu"}` stays (NM721 has no
    fix); the device its caller gives, or the parameter's default, renamed, would take the CPU
    branch on Trainium and load the model on the CPU. Both stay with the comparison."""
    src = '''\
        from transformers import AutoModelForCausalLM


        def build(repo, device="cuda"):
            return AutoModelForCausalLM.from_pretrained(repo, device_map={"": 0} if device == "cuda" else {"": "cpu"})


        def main():
            device = "cuda"
            return build("m", device)
        '''
    assert fixed(src, unsafe=True) == textwrap.dedent(src)
    held = {f.span.line: f.message for f in scan(src) if f.code == "NM101"}
    assert "it feeds the test at line 5, and that test guards" in held[9]
    assert "it feeds the test at line 5, and that test guards" in held[4]


def test_a_compile_backend_is_renamed_as_a_backend() -> None:
    """NM502's fix names what it renames: a backend, not a device."""
    found = scan('import torch\n\ndef build(m):\n    return torch.compile(m, backend="inductor")\n')
    titles = [fix.title for f in found if f.code == "NM502" for fix in f.fixes]
    assert titles and all(t.startswith("Use backend `neuron`") for t in titles)


def test_a_fallback_for_a_torch_without_torch_accelerator_is_left_as_is() -> None:
    """langchain-huggingface's `if hasattr(torch, "accelerator"): ... else: torch.cuda.device_count()`:
    the else branch runs only on a torch before 2.6, never on TorchNeuron's, and there
    `torch.neuron` does not exist: renamed, the fallback would raise where it runs."""
    src = '''\
        import torch


        def count():
            if hasattr(torch, "accelerator"):
                return torch.accelerator.device_count()
            else:
                return torch.cuda.device_count()


        def sync():
            if not hasattr(torch, "accelerator"):
                torch.cuda.synchronize()
        '''
    assert fixed(src, unsafe=True) == textwrap.dedent(src)
    found = {f.span.line: f for f in scan(src)}
    assert all(found[line].fix_class is FixClass.MANUAL and "runs only where torch has no `torch.accelerator`"
               in found[line].message for line in (8, 13))
