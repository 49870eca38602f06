"""NM109: settings of YAML configuration files that select CUDA (`scan.matchers.configs`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_migrate import api
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan.engine import scan_paths
from neuron_migrate.scan.matchers.configs import is_config_file

PACK = load_pack()

# The shape of a torchtune recipe config, with a second document and an anchor.
RECIPE = """\
output_dir: /tmp/out
model:
  _component_: torchtune.models.llama3_2.lora_llama3_2_1b
  attn_implementation: "flash_attention_2"
defaults: &defaults
  device: cuda:0
dist: {dist_backend: nccl, world_size: 8}
eval:
  <<: *defaults
  batch_size: 4
notes: we trained on cuda before
devices: [0, 1]
device_choices: [cpu, cuda]
---
device: cpu
mixed_precision: FP16
"""


def found(root: Path) -> list[tuple[str, int, int, str]]:
    result = scan_paths([root], PACK, use_cache=False, jobs=1)
    return [(fr.path, f.span.line, f.span.col, f.symbol) for fr in result.files for f in fr.findings if f.code == "NM109"]


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_settings_at_any_depth_each_once_where_written(tmp_path: Path) -> None:
    write(tmp_path, {"recipes/configs/lora.yaml": RECIPE})
    assert sorted(found(tmp_path)) == [
        ("recipes/configs/lora.yaml", 4, 23, "attn_implementation: flash_attention_2"),
        ("recipes/configs/lora.yaml", 6, 10, "device: cuda:0"),  # once, though `eval` merges it too
        ("recipes/configs/lora.yaml", 7, 21, "dist_backend: nccl"),
        ("recipes/configs/lora.yaml", 16, 17, "mixed_precision: FP16"),
    ]


def test_bitsandbytes_optimizers_and_quantization_xformers_and_fp16_precision(tmp_path: Path) -> None:
    """LLaMA-Factory's QLoRA examples, axolotl's and alignment-handbook's recipes, Stability's
    generative-models configs, a NeMo inference config."""
    write(tmp_path, {
        "examples/qlora.yaml": "quantization_bit: 4\nquantization_method: bitsandbytes\noptim: paged_adamw_32bit\n",
        "examples/axolotl.yml": "optimizer: adamw_bnb_8bit\nlr_scheduler: cosine\noptim: adamw_torch\n",
        "configs/svd.yaml": "params:\n  spatial_transformer_attn_type: softmax-xformers\n  attn_type: vanilla\n",
        "conf/trainer.yaml": "trainer:\n  precision: 16\n  devices: 1\neval:\n  precision: bf16\n",
    })
    assert sorted(found(tmp_path)) == [
        ("conf/trainer.yaml", 2, 13, "precision: 16"),
        ("configs/svd.yaml", 2, 33, "spatial_transformer_attn_type: softmax-xformers"),
        ("examples/axolotl.yml", 1, 11, "optimizer: adamw_bnb_8bit"),
        ("examples/qlora.yaml", 1, 18, "quantization_bit: 4"),
        ("examples/qlora.yaml", 2, 21, "quantization_method: bitsandbytes"),
        ("examples/qlora.yaml", 3, 7, "optim: paged_adamw_32bit"),
    ]


def test_tagged_values_and_interpolation_defaults(tmp_path: Path) -> None:
    """SpeechBrain's HyperPyYAML names a class by a tag; verl's OmegaConf configs fall back to a
    default; torchtune's profiler turns CUDA activities on."""
    write(tmp_path, {
        "hparams/train.yaml": "opt_class: !name:bitsandbytes.optim.PagedAdam32bit\nlr: 0.001\nprecision: fp16\n"
                              "optimizer: !new:apex.optimizers.FusedAdam\n  lr: !ref <lr>\n",
        "config/actor.yaml": "attn_implementation: ${oc.select:model.attn,flash_attention_2}\n"
                             "device: ${oc.env:DEVICE,cpu}\nname: ${oc.select:model.name}\n",
        "recipes/full.yaml": "profiler:\n  enabled: false\n  cpu: True\n  cuda: True\n",
        "cog.yaml": "build:\n  gpu: true\n  cuda: \"11.7\"\n  python_version: \"3.9\"\n",
    })
    assert sorted(found(tmp_path)) == [
        ("cog.yaml", 3, 8, "cuda: 11.7"),
        ("config/actor.yaml", 1, 21, "attn_implementation: ${oc.select:model.attn,flash_attention_2}"),
        ("hparams/train.yaml", 1, 11, "opt_class: !name:bitsandbytes.optim.PagedAdam32bit"),
        ("hparams/train.yaml", 3, 11, "precision: fp16"),
        ("hparams/train.yaml", 4, 11, "optimizer: !new:apex.optimizers.FusedAdam"),
        ("recipes/full.yaml", 4, 8, "cuda: True"),
    ]


def test_a_list_sets_its_key_when_each_item_does(tmp_path: Path) -> None:
    """brevitas' benchmark sweeps `device:` over a list of values: `[cuda:0]` runs on CUDA; a list
    that also names another device lists choices (RECIPE's `device_choices`)."""
    write(tmp_path, {"bench/template.yaml": "device:\n- cuda:0\nrun:\n  device: [cuda:0, cuda:1]\n"
                                            "  dtype: [float16]\nchoices:\n  device: [cpu, cuda]\n"})
    assert found(tmp_path) == [("bench/template.yaml", 2, 2, "device: [cuda:0]"),
                               ("bench/template.yaml", 4, 11, "device: [cuda:0, cuda:1]")]


@pytest.mark.parametrize(("rel", "expected"), [
    ("configs/train.yaml", True), ("recipe.yml", True), ("conf/model/llama.YAML", True),
    (".github/workflows/ci.yml", False), ("sub/.circleci/config.yml", False), (".pre-commit-config.yaml", False),
    ("mkdocs.yml", False), ("docker-compose.gpu.yml", False), ("environment.yml", False), ("train.py", False),
    ("docs/examples/config.yaml", False), ("api/openapi.yaml", False),
])
def test_which_files_are_configuration_files(rel: str, expected: bool) -> None:
    assert is_config_file(rel) is expected


def test_ci_files_templates_and_other_text_are_not_read(tmp_path: Path) -> None:
    write(tmp_path, {
        ".github/workflows/gpu.yml": "jobs:\n  test:\n    env:\n      device: cuda\n",
        "chart/templates/deploy.yaml": "device: {{ .Values.device | default \"cuda\" }}\n  - [\n",
        "configs/cpu.yaml": "device: cpu\nbackend: gloo\n",
    })
    assert found(tmp_path) == []


def test_a_directive_silences_a_setting(tmp_path: Path) -> None:
    write(tmp_path, {"train.yaml": "device: cuda  # neuron-migrate: ignore[NM109]\nbackend: nccl\n"})
    shown = api.scan([tmp_path], use_cache=False, jobs=1).findings
    assert [(f.path, f.span.line, f.code) for f in shown] == [("train.yaml", 2, "NM109")]


def test_a_data_file_past_the_size_limit_is_passed_over(tmp_path: Path) -> None:
    """A large YAML (a dataset description) is no concern of the scan: no finding, not even NM004,
    while a Python file past the limit is still reported as skipped."""
    write(tmp_path, {"data/big.yaml": "device: cuda\n" + "x: 1\n" * 100, "big.py": "import torch\n" * 50})
    result = scan_paths([tmp_path], PACK, use_cache=False, jobs=1, max_file_size=200)
    assert [(fr.path, [f.code for f in fr.findings]) for fr in result.files] == [("big.py", ["NM004"]), ("data/big.yaml", [])]


def test_keys_written_with_hyphens(tmp_path: Path) -> None:
    """gpt-neox (StableLM's configs) writes its keys with `-`, as its launcher's options are."""
    write(tmp_path, {"configs/stablelm.yml": '{\n  "distributed-backend": "nccl",\n  "attention-config": [[["flash"], 32]],\n'
                                             '  "train-micro-batch-size-per-gpu": 4\n}\n'})
    assert found(tmp_path) == [("configs/stablelm.yml", 2, 25, "distributed-backend: nccl")]


def test_a_dataloader_s_pinned_memory_and_a_model_s_placement(tmp_path: Path) -> None:
    """diffusion_policy's Hydra configs spread `dataloader:` into `DataLoader(**cfg.dataloader)`;
    optimum-benchmark's keep `from_pretrained`'s `device_map`."""
    write(tmp_path, {"config/train.yaml": "dataloader:\n  batch_size: 64\n  pin_memory: True\nval_dataloader:\n"
                                           "  pin_memory: False\nbackend_model:\n  device_map: auto\n"})
    assert found(tmp_path) == [("config/train.yaml", 3, 14, "pin_memory: True"),
                               ("config/train.yaml", 7, 14, "device_map: auto")]


def test_a_gpu_compile_backend_or_liger_kernels_for_accelerate_or_the_trainer(tmp_path: Path) -> None:
    """open-r1's Accelerate config compiles with Inductor (`dynamo_config: {dynamo_backend:
    INDUCTOR}`); a Trainer recipe names `torch_compile_backend` or turns on Liger's Triton kernels
    (philschmid's QLoRA recipe, `use_liger: true`); `NO` compiles nothing."""
    write(tmp_path, {"recipes/accelerate_configs/traffic.yaml": "distributed_type: NO\ndynamo_config:\n"
                                                                 "  dynamo_backend: INDUCTOR\n",
                     "recipes/sft.yaml": "torch_compile: true\ntorch_compile_backend: inductor\n"
                                         "other:\n  dynamo_backend: 'NO'\nuse_liger: true\nuse_liger_kernel: false\n"})
    assert sorted(found(tmp_path)) == [("recipes/accelerate_configs/traffic.yaml", 3, 18, "dynamo_backend: INDUCTOR"),
                                       ("recipes/sft.yaml", 2, 23, "torch_compile_backend: inductor"),
                                       ("recipes/sft.yaml", 5, 11, "use_liger: true")]


def test_cuda_device_selection_kept_as_settings(tmp_path: Path) -> None:
    """MinerU's API server keeps `cuda_visible_devices` and `cuda_device_order` in its YAML and
    copies them into the environment; under a task's `envs:` the same name is the variable's own
    finding, not also a setting."""
    write(tmp_path, {"fast_api.yaml": "system:\n  gpu:\n    cuda_device_order: \"PCI_BUS_ID\"\n"
                                      "    cuda_visible_devices: \"1\"\n",
                     "task.yaml": "resources:\n  accelerators: A100:8\nenvs:\n  CUDA_VISIBLE_DEVICES: \"0\"\nrun: python t.py\n"})
    assert sorted(found(tmp_path)) == [("fast_api.yaml", 3, 23, "cuda_device_order: PCI_BUS_ID"),
                                       ("fast_api.yaml", 4, 26, "cuda_visible_devices: 1")]
    codes = [f.code for fr in scan_paths([tmp_path], PACK, use_cache=False, jobs=1).files if fr.path == "task.yaml"
             for f in fr.findings]
    assert codes == ["NM107"]


def test_a_model_placed_on_cuda_by_device_map(tmp_path: Path) -> None:
    """alpaca_eval's model configs pass `device_map: 'cuda'` to `from_pretrained`."""
    write(tmp_path, {"configs.yaml": "model_kwargs:\n  device_map: 'cuda'\n  torch_dtype: bfloat16\nother: {device_map: cpu}\n"})
    assert found(tmp_path) == [("configs.yaml", 2, 14, "device_map: cuda")]


def test_lightning_gpus_kept_in_a_trainer_config(tmp_path: Path) -> None:
    """schnetpack's `configs/trainer/debug_trainer.yaml`: `gpus: 1` for the Lightning Trainer its
    defaults build; `gpus: 0` asks for none."""
    write(tmp_path, {"configs/trainer/debug.yaml": "_target_: pytorch_lightning.Trainer\ngpus: 1\nmax_epochs: 3\n",
                     "configs/trainer/cpu.yaml": "gpus: 0\n", "configs/trainer/all.yaml": "gpus: -1\n"})
    assert sorted(found(tmp_path)) == [("configs/trainer/all.yaml", 1, 6, "gpus: -1"),
                                       ("configs/trainer/debug.yaml", 2, 6, "gpus: 1")]


def test_a_cluster_launcher_s_gpu_request(tmp_path: Path) -> None:
    """fairseq's Hydra submitit launcher (`gpus_per_node: 8`); a CPU request beside it is none."""
    write(tmp_path, {"config/run/submitit_reg.yaml": "hydra:\n  launcher:\n    gpus_per_node: 8\n    cpus_per_task: 10\n"})
    assert found(tmp_path) == [("config/run/submitit_reg.yaml", 3, 19, "gpus_per_node: 8")]
