"""Library switches that pick a CUDA device or the CPU behind the user's back (issue 12): a
`device_map` dict naming device 0, accelerate's `Accelerator()` device choice, PaddlePaddle's GPU
switches. The cases are written for these tests, shaped like fine-tuning and training scripts."""

from __future__ import annotations

import textwrap

from neuron_migrate.findings import Finding, FixClass
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


def test_a_dict_spread_into_a_call_gives_its_keywords_when_this_scope_wrote_all_its_keys() -> None:
    found = codes_by_line("""
        import lightning.pytorch as pl
        from accelerate import Accelerator

        def tune(extra):
            trainer_kwargs = dict(
                accelerator="auto",
                max_epochs=20,
            )
            trainer = pl.Trainer(**trainer_kwargs)
            opts = {"mixed_precision": "bf16"}
            opts["gradient_accumulation_steps"] = 2
            acc = Accelerator(**opts)
            grown = {"mixed_precision": "bf16"}
            grown.update(extra)
            other = Accelerator(**grown)
            keyed = {"mixed_precision": "bf16"}
            keyed[extra] = True
            third = Accelerator(**keyed)
            cpu = dict(cpu=True)
            fourth = Accelerator(**cpu)
            inline = Accelerator(**dict(mixed_precision="fp16"))
            return trainer, acc, other, third, fourth, inline

        def elsewhere(trainer_kwargs):
            return pl.Trainer(**trainer_kwargs)
        """)
    assert "NM733" in found[7]  # the dict's entry, passed on by `**trainer_kwargs`
    assert "NM722" in found[13]  # every key known, `cpu` not among them
    assert "NM722" not in found.get(16, set()) | found.get(19, set())  # keys added that are not known
    assert "NM722" not in found.get(21, set())  # cpu=True given through the dict
    assert "NM722" in found[22]
    assert "NM733" not in found.get(26, set())  # a parameter: what it holds is unknown


def test_ray_data_workers_and_tunes_gpu_wait_are_ray_gpu_sites() -> None:
    found = codes_by_line("""
        from ray.tune.utils import wait_for_gpu

        def infer(ds, num_gpus, gpu_id):
            wait_for_gpu(gpu_id)
            return ds.map_batches(predict, num_gpus=num_gpus, batch_size=4), ds.map_batches(predict, num_gpus=0)
        """)
    assert "NM713" in found[2] and "NM713" in found[5]
    assert "NM734" in found[6]
    assert sum(1 for f in analyze_source(textwrap.dedent("""
        def infer(ds, num_gpus):
            return ds.map_batches(predict, num_gpus=num_gpus), ds.map_batches(predict, num_gpus=0)
        """), "train.py", PACK) if f.code == "NM734") == 1


def test_a_backend_named_cuda_is_rewritten_only_as_an_unsafe_fix() -> None:
    """olmo-core's `backend = "cuda"` picks its CUDA kernels over Triton's: "neuron" there matches
    no dispatch branch, so the device-string fix may change what runs."""
    found = {f.span.line: f for f in analyze_source(textwrap.dedent("""
        import torch

        def pick(x, kernel_backend):
            backend = "cuda"
            if kernel_backend == "cuda":
                return permute(x, backend="cuda")
            device = "cuda"
            return x.to(device), backend
        """), "train.py", PACK) if f.code == "NM101"}
    assert sorted(found) == [5, 6, 7, 8]
    assert all(fix.applicability.value == "unsafe" for line in (5, 6, 7) for fix in found[line].fixes)
    # (line 8 runs where the check at line 6 fails: it moves with that check, unsafe too)
    assert found[8].fixes and all(fix.applicability.value == "unsafe" and "the guard at line 6 moves only with "
                                  "--unsafe-fixes: its test depends on `cuda` (NM101, line 6)" in fix.title
                                  for fix in found[8].fixes)


def test_a_dict_assigned_more_than_once_or_a_parameter_spreads_nothing_known() -> None:
    found = codes_by_line("""
        import torch
        from accelerate import Accelerator

        def sampler(f, compile):
            if compile is not True:
                kwargs = compile
            else:
                kwargs = {}
            return torch.compile(f, **kwargs)

        def make(opts):
            if not opts:
                opts = {"mixed_precision": "no"}
            return Accelerator(**opts)
        """)
    assert "NM501" not in found.get(10, set())  # the caller's dict may name a backend
    assert "NM722" not in found.get(15, set())  # the caller's dict may say cpu=True


def test_a_device_string_a_non_pytorch_library_checks_itself_gets_no_neuron_fix() -> None:
    """CTranslate2 and the gradient-boosting libraries validate their device: `"neuron"` makes
    them raise, so the string is their rule's manual finding, never NM101's safe rename."""
    code = textwrap.dedent("""
        import torch
        import ctranslate2
        import xgboost as xgb
        from catboost import CatBoostRegressor
        from faster_whisper import WhisperModel

        asr = WhisperModel("large-v3", device="cuda", compute_type="int8")
        generator = ctranslate2.Generator("ct2_model", "cuda")
        booster = xgb.XGBRegressor(device="cuda:0")
        trees = CatBoostRegressor(task_type="GPU")
        x = torch.zeros(3, device="cuda")
        """)
    found = analyze_source(code, "train.py", PACK)
    by_line = {f.span.line: f for f in found}
    assert {line: f.code for line, f in by_line.items()} == {8: "NM753", 9: "NM753", 10: "NM754", 11: "NM754",
                                                                12: "NM101"}
    assert all(not by_line[line].fixes for line in (8, 9, 10, 11))
    assert by_line[12].fixes  # a PyTorch device string keeps its rename


def test_a_device_string_that_reaches_such_a_library_from_elsewhere_is_not_renamed() -> None:
    """`device = "cuda" if ... else "cpu"` passed on to faster-whisper: renaming the string would
    make CTranslate2 raise, and rewriting the test alone would send it `"cuda"` on Trainium."""
    code = textwrap.dedent("""
        import argparse
        import torch
        from faster_whisper import WhisperModel

        parser = argparse.ArgumentParser()
        parser.add_argument("--asr-device", default="cuda")
        args = parser.parse_args()
        device = "cuda" if torch.cuda.is_available() else "cpu"
        asr = WhisperModel("large-v3", device=device, compute_type="int8")
        other = WhisperModel("small", device=args.asr_device)
        x = torch.ones(2).to("cuda")
        """)
    found = analyze_source(code, "transcribe.py", PACK)
    by_line: dict[int, dict[str, Finding]] = {}
    for f in found:
        by_line.setdefault(f.span.line, {})[f.code] = f
    for line, call_line in ((7, 11), (9, 10)):
        literal = by_line[line]["NM101"]
        assert literal.fixes == () and literal.fix_class is FixClass.MANUAL
        assert f"reaches `WhisperModel` at line {call_line}" in literal.message
    assert not by_line[9]["NM201"].fixes  # the test guards the string kept
    assert set(by_line[10]) == {"NM753"} and set(by_line[11]) == {"NM753"}
    assert by_line[12]["NM101"].fixes  # a PyTorch device keeps its rename


def test_in_a_file_that_gives_ctranslate2_a_device_the_device_strings_are_renamed_only_as_unsafe_fixes() -> None:
    """whisper_live computes `device = "cuda" if ... else "cpu"` and hands it to a method that builds
    `WhisperModel(device=device)`: the scan does not follow the parameter, so no device string of
    that file is safely renamed (`"neuron"` could reach CTranslate2, which raises on it)."""
    code = textwrap.dedent("""
        import torch
        from faster_whisper import WhisperModel


        class Backend:
            def initialize_model(self):
                device = "cuda" if torch.cuda.is_available() else "cpu"
                self.create_model(device)

            def create_model(self, device):
                self.model = WhisperModel("small", device=device, compute_type="int8")
        """)
    found = {(f.span.line, f.code): f for f in analyze_source(code, "backend.py", PACK)}
    literal = found[8, "NM101"]
    assert literal.fix_class is FixClass.UNSAFE and all(fix.applicability is FixClass.UNSAFE for fix in literal.fixes)
    assert "hands data to `faster_whisper.WhisperModel` at line 12" in literal.fixes[0].title
    assert found[12, "NM753"].fix_class is FixClass.MANUAL


def test_a_device_string_safetensors_loads_onto_is_not_renamed() -> None:
    """TimesFM and Toto load checkpoints with `load_file(path, device=device)`; safetensors rejects
    `neuron` ("device neuron is invalid"), so the string that reaches it keeps `cuda`."""
    code = textwrap.dedent("""
        import torch
        from safetensors.torch import load_file

        def load(path):
            device = "cuda" if torch.cuda.is_available() else "cpu"
            return load_file(path, device=device)
        """)
    found = {(f.span.line, f.code): f for f in analyze_source(code, "util.py", PACK)}
    assert found[6, "NM101"].fix_class is FixClass.MANUAL and not found[6, "NM101"].fixes
    assert "reaches `load_file` at line 7" in found[6, "NM101"].message
    assert found[7, "NM759"].fix_class is FixClass.MANUAL


def test_only_a_ctranslate2_models_second_argument_is_its_device() -> None:
    """CTranslate2's converters call `utils.fuse_linear(spec, layers)`: the second argument of any
    other call is no device; a model class's is (`Generator(path, device)`)."""
    code = textwrap.dedent("""
        import ctranslate2
        from ctranslate2.converters import utils

        def convert(spec, split_layers, path, device):
            utils.fuse_linear(spec.linear[0], split_layers)
            return ctranslate2.Generator(path, device)
        """)
    assert [(f.span.line, f.code) for f in analyze_source(code, "convert.py", PACK) if f.code == "NM753"] == [(7, "NM753")]
