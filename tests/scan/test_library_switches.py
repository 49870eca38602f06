"""Library switches that pick a CUDA device or the CPU behind the user's back (issue 12): a
`device_map` dict naming device 0, accelerate's `Accelerator()` device choice, PaddlePaddle's GPU
switches. The cases are written for these tests, shaped like fine-tuning and training scripts."""

from __future__ import annotations

import textwrap

from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan.analyze import analyze_source

PACK = load_pack()


def codes_by_line(code: str) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for f in analyze_source(textwrap.dedent(code), "train.py", PACK):
        out.setdefault(f.span.line, set()).add(f.code)
    return out


QLORA = """
    import torch
    from accelerate import Accelerator, PartialState
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    def load(args, on_xpu):
        kwargs = dict(torch_dtype=torch.bfloat16, device_map={"": 0})
        base = AutoModelForCausalLM.from_pretrained(args.model, **kwargs)
        ref = AutoModelForCausalLM.from_pretrained(
            args.ref_model,
            device_map={"": "xpu:0"} if on_xpu else {"": 0},
        )
        sharded = AutoModelForCausalLM.from_pretrained(args.model, device_map={"": PartialState().process_index})
        offload = AutoModelForCausalLM.from_pretrained(args.model, device_map={"lm_head": "cpu", "model": "disk"})
        return base, ref, sharded, offload
"""


def test_device_map_dict_with_a_bare_index_is_flagged_also_in_kwargs_and_conditionals() -> None:
    found = codes_by_line(QLORA)
    nm721 = sorted(line for line, codes in found.items() if "NM721" in codes)
    assert nm721 == [7, 11]  # dict(...) kwargs and the conditional's else branch
    # A device index computed per process, and cpu/disk offload maps, are not CUDA device 0.
    assert "NM721" not in found.get(13, set()) and "NM721" not in found.get(14, set())


def test_device_map_cuda_strings_keep_their_device_rules() -> None:
    found = codes_by_line("""
        import torch
        from transformers import AutoModelForCausalLM

        a = AutoModelForCausalLM.from_pretrained("m", device_map={"": "cuda:0"})
        b = AutoModelForCausalLM.from_pretrained("m", device_map={"": torch.cuda.current_device()})
        """)
    assert "NM101" in found[5] and "NM204" in found[6]
    assert "NM721" not in found[5] | found[6]


def test_accelerator_device_choice_is_a_review_finding_unless_cpu_is_chosen() -> None:
    found = codes_by_line("""
        import accelerate
        from accelerate import Accelerator

        def main(cfg):
            accelerator = Accelerator(
                gradient_accumulation_steps=cfg.accum,
                mixed_precision="bf16",
                log_with="tensorboard",
            )
            debug = Accelerator(cpu=True)
            other = accelerate.Accelerator(**cfg.accelerator_kwargs)
            return accelerator, debug, other
        """)
    assert [line for line, codes in found.items() if "NM722" in codes] == [6]


def test_paddle_gpu_switches_are_flagged_and_paddle_cpu_is_not() -> None:
    found = codes_by_line("""
        import paddle
        from paddle.distributed import fleet

        def setup(args):
            if paddle.is_compiled_with_cuda() and args.use_gpu:
                paddle.set_device("gpu")
            elif paddle.device.is_compiled_with_cuda():
                paddle.device.set_device("gpu:0")
            else:
                paddle.set_device("cpu")
            fleet.init(is_collective=True)
        """)
    assert {line for line, codes in found.items() if "NM723" in codes} == {6, 7, 8, 9}
    assert "NM723" not in found.get(11, set())
