"""Values on their way to a call in another file (issue 12, "values that arrive from elsewhere"):
a config dataclass field, a module constant, a `self.` attribute or an argparse option holding a
value an argument rule matches (`named` in the rule table) is reported where it is assigned,
unless this file passes it to the call itself (then the call is the site, once). The cases are
written for these tests, shaped like HF fine-tuning scripts and deepspeed-style accelerators."""

from __future__ import annotations

import textwrap

from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan.analyze import analyze_source

PACK = load_pack()


def found(code: str) -> list[tuple[int, str, str]]:
    return [(f.span.line, f.code, f.fix_class.value) for f in analyze_source(textwrap.dedent(code).lstrip("\n"), "m.py", PACK)]


def test_a_dataclass_field_default_reaches_the_call_that_reads_it() -> None:
    lines = found("""
        from dataclasses import dataclass, field
        from transformers import AutoModelForCausalLM

        @dataclass
        class ScriptArguments:
            device_map: str = field(default="auto", metadata={"help": "placement"})
            load_in_8bit: bool = field(default=True)

        def load(args: ScriptArguments):
            return AutoModelForCausalLM.from_pretrained("m", device_map=args.device_map, load_in_8bit=args.load_in_8bit)
        """)
    # Passed on in this file: reported once, at the call, with the field's value.
    assert [(line, code) for line, code, _ in lines] == [(10, "NM717"), (10, "NM710")]


def test_a_value_passed_on_elsewhere_is_reported_where_it_is_assigned_with_no_fix() -> None:
    lines = found("""
        from dataclasses import dataclass

        DEVICE_MAP = {"": 0}
        DEVICE_MAP_OPTIONS = [{"": 0}, "auto"]

        class CudaAccelerator:
            def __init__(self):
                self._compile_backend = "inductor"

        @dataclass
        class ModelConfig:
            load_in_4bit: bool = True
            pin_memory: bool = True
            device_map: str = "sequential" if True else None
        """)
    assert lines == [(3, "NM721", "manual"), (4, "NM717", "manual"), (4, "NM721", "manual"),
                     (8, "NM502", "manual"), (12, "NM710", "manual"), (13, "NM105", "manual"),
                     (14, "NM717", "manual")]


def test_argparse_options_default_and_const_carry_a_compile_backend() -> None:
    lines = found("""
        import argparse

        parser = argparse.ArgumentParser()
        parser.add_argument("--compile", nargs="?", const="inductor", default=None)
        parser.add_argument("--device-map", default="auto")
        """)
    assert [(line, code) for line, code, _ in lines] == [(4, "NM502"), (5, "NM717")]


def test_names_that_only_label_list_or_hold_other_values_stay_silent() -> None:
    assert found("""
        SUPPORTED_DEVICE_MAP = ["balanced"]

        class InductorError(Exception):
            backend_name = "inductor"

        DEVICE_MAP = {"": "cpu"}
        PIN_MEMORY = False
        BACKEND = "eager"

        def check(device_map):
            if device_map not in SUPPORTED_DEVICE_MAP:
                raise ValueError(device_map)

        def run():
            backend = "inductor"  # a local: the file shows where it goes
            return backend
        """) == []


def test_a_local_dict_reaches_device_map_through_its_name() -> None:
    lines = found("""
        from transformers import AutoModelForCausalLM

        def load(name):
            device_map = {"": 0}
            return AutoModelForCausalLM.from_pretrained(name, device_map=device_map)
        """)
    assert [(line, code) for line, code, _ in lines] == [(5, "NM721")]


def test_an_environment_variable_default_is_the_value_it_stands_for() -> None:
    """torchtune's `_compile.py`: the backend is read from the environment, "inductor" unless set."""
    lines = found("""
        import os
        import torch

        BACKEND = os.getenv("COMPILE_BACKEND", "inductor")

        def compile_model(model):
            backend = os.environ.get("TORCH_COMPILE_BACKEND", "inductor")
            return torch.compile(model, backend=backend, fullgraph=True)

        def compile_other(model):
            return torch.compile(model, backend=BACKEND, fullgraph=True)

        def compile_named(model):
            backend = os.environ.get("TORCH_COMPILE_BACKEND")
            return torch.compile(model, backend=backend, fullgraph=True)
        """)
    assert [(line, code) for line, code, _ in lines if code == "NM502"] == [(8, "NM502"), (11, "NM502")]


def test_pin_memory_not_written_at_the_call() -> None:
    """MAE's and DeiT's `pin_memory=args.pin_mem` (on through `set_defaults`), wenet's
    `args.pin_memory`, RT-DETR's `loader.pin_memory`; a parameter that defaults to False, or a
    name only ever assigned False, is off."""
    lines = found("""
        import argparse
        from torch.utils.data import DataLoader

        parser = argparse.ArgumentParser()
        parser.add_argument("--pin_mem", action="store_true")
        parser.set_defaults(pin_mem=True)
        args = parser.parse_args()

        def loaders(ds, loader, pin_memory=False, workers=4):
            a = DataLoader(ds, pin_memory=args.pin_mem)
            b = DataLoader(ds, pin_memory=loader.pin_memory)
            c = DataLoader(ds, pin_memory=pin_memory, num_workers=workers)
            pin = False
            d = DataLoader(ds, pin_memory=pin)
            return a, b, c, d
        """)
    assert [(line, code) for line, code, _ in lines if code == "NM105"] == [(10, "NM105"), (11, "NM105")]


def test_a_name_assigned_several_literals_may_pass_each() -> None:
    """torch's FSDP test helpers pick `DEVICE_TYPE = "cuda"` (or "xpu", "cpu") by the host; either
    literal reaches the use, as a conditional's branches do. A name also assigned a computed value
    (auto-gptq's `device_map = "auto"`, then `infer_auto_device_map(...)` unless it is a dict) may
    hold anything by the use: unknown."""
    lines = found("""
        from transformers import AutoModelForCausalLM

        def load(args, balanced):
            device_map = "auto"
            if balanced:
                device_map = "balanced_low_0"
            return AutoModelForCausalLM.from_pretrained(args.model, device_map=device_map)

        def load_computed(args, infer):
            device_map = "auto"
            if not isinstance(device_map, dict):
                device_map = infer(args)
            return AutoModelForCausalLM.from_pretrained(args.model, device_map=device_map)
        """)
    assert [(line, code) for line, code, _ in lines if code == "NM717"] == [(7, "NM717")]


def test_a_literal_assigned_after_a_computed_value_may_pass() -> None:
    """sparseml's `device_map = None; if oneshot: device_map = args.device elif not fsdp:
    device_map = "auto"`: the literal comes after the computed value, so it may reach the call
    (through a dict too); a computed value assigned after the literal overwrites it."""
    lines = found("""
        from transformers import AutoModelForCausalLM

        def load(args, oneshot, fsdp):
            device_map = None
            if oneshot:
                device_map = args.device
            elif not fsdp:
                device_map = "auto"
            kwargs = {"device_map": device_map}
            return AutoModelForCausalLM.from_pretrained(args.model, device_map=device_map), kwargs

        def later(args, plan):
            device_map = plan(args)
            device_map = "auto"
            return AutoModelForCausalLM.from_pretrained(args.model, device_map=device_map)

        def overwritten(args, plan):
            device_map = "auto"
            device_map = plan(args)
            return AutoModelForCausalLM.from_pretrained(args.model, device_map=device_map)
        """)
    assert [line for line, code, _ in lines if code == "NM717"] == [9, 10, 15]


def test_a_name_in_a_conditional_s_branch_holds_its_literals() -> None:
    """COMET's `Trainer(accelerator=accelerator if gpus > 0 else "cpu")` with the parameter's
    default `"auto"`: the branch that is a name stands for what the name holds."""
    lines = found("""
        import pytorch_lightning as ptl

        def predict(gpus=1, accelerator="auto"):
            return ptl.Trainer(accelerator=accelerator if gpus > 0 else "cpu")

        def fixed(gpus=1, accelerator="cpu"):
            return ptl.Trainer(accelerator=accelerator if gpus > 0 else "cpu")
        """)
    assert [(line, code) for line, code, _ in lines if code == "NM733"] == [(4, "NM733")]


def test_a_bare_get_call_is_no_environment_read() -> None:
    """vllm's mooncake config: `get(...)` with two arguments, a function of its own and no
    attribute of anything, once crashed the analysis of the whole file (NM003). Its fallback is a
    device string like any lookup's."""
    lines = found("""
        from config import get

        DEVICE = get("device", "cuda")
        BACKEND = get("backend", 1)
        """)
    assert [(line, code) for line, code, _ in lines] == [(3, "NM101")]


def test_a_switch_not_written_as_a_literal_may_be_on() -> None:
    """LLaVA's `load_in_4bit=training_args.bits == 4`; a store_true option, off unless given."""
    lines = found("""
        import argparse
        from transformers import AutoModelForCausalLM

        parser = argparse.ArgumentParser()
        parser.add_argument("--load_in_8bit", action="store_true")
        args = parser.parse_args()

        def load(bits):
            return AutoModelForCausalLM.from_pretrained("m", load_in_4bit=bits == 4, load_in_8bit=args.load_in_8bit)

        def load_plain():
            return AutoModelForCausalLM.from_pretrained("m", load_in_4bit=False, load_in_8bit=None)

        class QuantConfig:
            def to_dict(self):  # serialises the setting: loads nothing
                output = {}
                output["load_in_4bit"] = self.load_in_4bit
                return output
        """)
    assert [(line, code) for line, code, _ in lines if code == "NM710"] == [(9, "NM710"), (9, "NM710")]


def test_a_lookups_fallback_is_the_device_it_stands_for() -> None:
    """open_clip's `device=getattr(args, 'device', 'cuda')`: the fallback of `getattr`, `.get`,
    `os.getenv` or `.pop` is the device when nothing else is given, a device string like any
    other (NM101 with its fix); a fallback that names no device stays the CUDA word it is."""
    lines = found("""
        import os

        def setup(args, cfg, launch):
            device = getattr(args, "device", "cuda")
            launch(device=getattr(args, "device", "cuda"), rank_device=cfg.pop("device", "cuda:0"))
            local_device = os.getenv("DEVICE", "cuda")
            kernels = getattr(args, "backend", "cuda_kernels")
            return device, local_device, kernels
        """)
    assert lines == [(4, "NM101", "safe"), (5, "NM101", "safe"), (5, "NM101", "safe"), (6, "NM101", "safe"),
                     (7, "NM290", "manual")]


def test_a_local_name_given_as_the_device_holds_the_literals_assigned_it() -> None:
    """YOLOv5's `select_device`: `arg = "cuda:0"` in one branch, `"mps"` or `"cpu"` in the others,
    then `torch.device(arg)`: the CUDA one is a device string (NM101 with its fix), though the
    name says nothing of a device; a name passed to no device call stays the CUDA word it is."""
    lines = found("""
        import torch

        def select_device(cpu, mps, x):
            if not cpu:
                arg = "cuda:0"
            elif mps:
                arg = "mps"
            else:
                arg = "cpu"
            kind = "cuda"
            return torch.device(arg), x.to(arg), kind
        """)
    assert lines == [(5, "NM101", "safe"), (10, "NM290", "manual")]
