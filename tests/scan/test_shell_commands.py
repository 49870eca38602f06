"""Shell commands outside shell scripts' variables: packages installed by a script or a notebook
(`pip install flash-attn`, `%pip install`, `conda install pytorch-cuda`), CUDA tools run
(`nvidia-smi`, `nvcc`), and a notebook's magics and shell escapes read as the shell reads them
(`%env CUDA_VISIBLE_DEVICES=0`, `%%bash` cells); IPython's automagic (`pip install x` without
`%`) is no syntax error."""

from __future__ import annotations

import json
from pathlib import Path

from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan.engine import scan_paths

PACK = load_pack()


def found(root: Path) -> list[tuple[str, int | None, int, int, str, str]]:
    result = scan_paths([root], PACK, use_cache=False, jobs=1)
    return sorted((fr.path, f.cell, f.span.line, f.span.col, f.code, f.symbol) for fr in result.files for f in fr.findings)


def notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": source} for source in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_installs_in_a_setup_script(tmp_path: Path) -> None:
    """OpenRLHF's install_flash_attn.sh, axolotl's auto_install.sh."""
    (tmp_path / "install.sh").write_text(
        "pip install https://github.com/x/releases/flash_attn-2.1.1+cu121torch2.1-cp310-linux_x86_64.whl\n"
        "conda install -y -c nvidia cuda --yes && python -m pip install numpy\n"
        "pip3 install torch --extra-index-url https://download.pytorch.org/whl/cu118  # the CUDA build\n"
        "echo 'pip install bitsandbytes' # text, not a command\n")
    assert found(tmp_path) == [
        ("install.sh", None, 1, 12, "NM731", "https://github.com/x/releases/flash_attn-2.1.1+cu121torch2.1-cp310-linux_x86_64.whl"),
        ("install.sh", None, 1, 12, "NM732", "https://github.com/x/releases/flash_attn-2.1.1+cu121torch2.1-cp310-linux_x86_64.whl"),
        ("install.sh", None, 2, 27, "NM731", "cuda"),
        ("install.sh", None, 3, 37, "NM732", "https://download.pytorch.org/whl/cu118"),
    ]


def test_a_notebook_s_magics_and_shell_escapes(tmp_path: Path) -> None:
    (tmp_path / "train.ipynb").write_text(notebook(
        "!pip install -q bitsandbytes transformers\n%pip install flash-attn --no-build-isolation\n",
        "%env CUDA_VISIBLE_DEVICES=0\n!NCCL_DEBUG=INFO python train.py\nimport torch\nx = torch.ones(1).cuda()\n",
        "%%bash\nexport CUDA_HOME=/usr/local/cuda\nconda install -y pytorch-cuda=12.1 -c nvidia\n",
    ))
    assert found(tmp_path) == [
        ("train.ipynb", 0, 1, 16, "NM731", "bitsandbytes"),
        ("train.ipynb", 0, 2, 13, "NM731", "flash-attn"),
        ("train.ipynb", 1, 1, 5, "NM107", "CUDA_VISIBLE_DEVICES"),
        ("train.ipynb", 1, 2, 1, "NM406", "NCCL_DEBUG"),
        ("train.ipynb", 1, 4, 18, "NM102", ".cuda()"),
        ("train.ipynb", 2, 2, 7, "NM219", "CUDA_HOME"),
        ("train.ipynb", 2, 3, 17, "NM731", "pytorch-cuda=12.1"),
    ]


def test_automagic_lines_are_ipython_not_syntax_errors(tmp_path: Path) -> None:
    """huggingface/notebooks' TensorRT pipeline: `pip install ...` without `%` (IPython runs it as
    the pip magic) was reported as a syntax error (NM001) and its packages were not read."""
    (tmp_path / "nb.ipynb").write_text(notebook(
        "pip install polygraphy onnx cuda-python tensorrt onnxruntime-gpu\n",
        "env = {'a': 1}\nprint(env)\ncd = 2\n",
    ))
    assert [(cell, line, code, symbol) for _, cell, line, _, code, symbol in found(tmp_path)] == [
        (0, 1, "NM731", "polygraphy"), (0, 1, "NM731", "cuda-python"), (0, 1, "NM731", "tensorrt"),
        (0, 1, "NM731", "onnxruntime-gpu"),
    ]


def test_cuda_tools_run_by_a_script_or_a_notebook(tmp_path: Path) -> None:
    """Colab notebooks start with `!nvidia-smi`; setup scripts check `nvcc --version`. A CUDA word
    in a command's arguments (`echo`, a container image) is no program run; docker's `--gpus all`
    is a GPU request (NM109)."""
    (tmp_path / "check_gpu.sh").write_text(
        "nvidia-smi\nnvcc --version | grep release\necho nvidia cuda\n"
        "sudo nvidia-smi -pm 1 && python train.py\nout=$(nvidia-smi -L)\n/usr/local/cuda/bin/nvcc -V\n"
        "docker run --gpus all nvidia/cuda:12.1 python x.py\n")
    (tmp_path / "colab.ipynb").write_text(notebook("!nvidia-smi\nimport torch\n"))
    assert [(path, cell, line, col, symbol) for path, cell, line, col, code, symbol in found(tmp_path)] == [
        ("check_gpu.sh", None, 1, 0, "nvidia-smi"),
        ("check_gpu.sh", None, 2, 0, "nvcc"),
        ("check_gpu.sh", None, 4, 5, "nvidia-smi"),
        ("check_gpu.sh", None, 5, 6, "nvidia-smi"),
        ("check_gpu.sh", None, 6, 0, "nvcc"),
        ("check_gpu.sh", None, 7, 11, "--gpus all"),
        ("colab.ipynb", 0, 1, 1, "nvidia-smi"),
    ]


def test_settings_on_a_launch_command_line(tmp_path: Path) -> None:
    """FastChat's and Qwen-VL's launch scripts pass TrainingArguments' switches as options; a Hydra
    recipe is launched with overrides. The options the configuration rules know are reported as
    they are in a YAML file; others, and a value taken from a variable, are not."""
    (tmp_path / "train.sh").write_text(
        "torchrun --nproc_per_node=8 train.py \\\n"
        "    --fp16 True --use_flash_attn True \\\n"
        "    --optim paged_adamw_32bit --output_dir ./out \\\n"
        "    --device=cuda:0 --dist-backend nccl --bf16 --device $DEVICE\n"
        "python run.py trainer.accelerator=gpu trainer.devices=2 +model.attn_implementation=flash_attention_2\n"
        "deepspeed main.py --fp16 --attn_implementation eager\n"
        "fairseq-generate data --beam 5 --fp16 > gen.log\n"
        "fairseq-train data --memory-efficient-fp16 | tee train.log\n"
        "torchrun --nproc_per_node gpu --nnodes 1 train.py\n")
    assert [(line, col, code, symbol) for _, _, line, col, code, symbol in found(tmp_path)] == [
        (2, 4, "NM109", "--fp16 True"),
        (2, 16, "NM109", "--use_flash_attn True"),
        (3, 4, "NM109", "--optim paged_adamw_32bit"),
        (4, 4, "NM109", "--device=cuda:0"),
        (4, 20, "NM109", "--dist-backend nccl"),
        (5, 14, "NM109", "trainer.accelerator=gpu"),
        (5, 56, "NM109", "+model.attn_implementation=flash_attention_2"),
        (6, 18, "NM109", "--fp16"),
        (7, 31, "NM109", "--fp16"),
        (8, 19, "NM109", "--memory-efficient-fp16"),
        (9, 9, "NM109", "--nproc_per_node gpu"),
    ]


def test_programs_looked_for_and_cuda_environment_modules_loaded(tmp_path: Path) -> None:
    """torchchat's installer picks CUDA wheels when `command -v nvidia-smi` finds the tool; a PBS
    job loads the CUDA toolkit as an environment module (Lmod's `ml` too)."""
    (tmp_path / "install.sh").write_text('#!/bin/bash\nif [[ -x "$(command -v nvidia-smi)" ]]; then which nvcc; fi\n')
    (tmp_path / "job.pbs").write_text(
        "#!/bin/bash\n#PBS -l select=1\nmodule load cuda/11.8 gcc/9\nml cudnn/8.6 python\nmodule load python/3.10\n")
    assert [(path, line, col, code, symbol) for path, _, line, col, code, symbol in found(tmp_path)] == [
        ("install.sh", 2, 23, "NM290", "nvidia-smi"),
        ("install.sh", 2, 51, "NM290", "nvcc"),
        ("job.pbs", 3, 12, "NM290", "cuda/11.8"),
        ("job.pbs", 4, 3, "NM290", "cudnn/8.6"),
    ]


def test_a_switch_kept_in_a_quoted_variable(tmp_path: Path) -> None:
    """NVIDIA's BERT scripts keep `--fp16` between spaces in a variable for the launch line: the
    closing quote is no value of the option."""
    (tmp_path / "run_squad.sh").write_text('use_fp16=" --fp16 "\nFLAGS="--fp16"\nNAME="--name "\n')
    assert [(line, col, code, symbol) for _, _, line, col, code, symbol in found(tmp_path)] == [
        (1, 11, "NM109", "--fp16"),
        (2, 7, "NM109", "--fp16"),
    ]


def test_a_shell_escape_whose_output_a_name_keeps(tmp_path: Path) -> None:
    """pytorch-deep-learning's PyTorch 2 notebook reads `gpu_info = !nvidia-smi` to pick a batch
    size; `%sx` is the same escape."""
    (tmp_path / "nb.ipynb").write_text(notebook(
        "gpu_info = !nvidia-smi\ngpu_name = !nvidia-smi --query-gpu=gpu_name --format=csv\nout, err = %sx nvcc --version\n"
        "files = !ls\n",
    ))
    assert [(line, col, code, symbol) for _, _, line, col, code, symbol in found(tmp_path)] == [
        (1, 12, "NM290", "nvidia-smi"), (2, 12, "NM290", "nvidia-smi"), (3, 15, "NM290", "nvcc")]


def test_literals_an_earlier_cell_assigned(tmp_path: Path) -> None:
    """The Hugging Face cookbook sets `fp16 = False` and `optim = "paged_adamw_32bit"` in one cell
    and passes them to `TrainingArguments` in a later one, as the kernel runs them: the switch
    is off, the optimizer is bitsandbytes'. The finding quotes no text of the other cell."""
    (tmp_path / "nb.ipynb").write_text(notebook(
        "fp16 = False\noptim = 'paged_adamw_32bit'\nbatch = 4\n",
        "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', fp16=fp16, optim=optim)\n",
    ))
    result = scan_paths([tmp_path], PACK, use_cache=False, jobs=1)
    later = [(f.cell, f.span.line, f.code, f.symbol, bool(f.fixes)) for fr in result.files for f in fr.findings if f.cell == 1]
    assert later == [(1, 2, "NM735", "optim=optim", False)]
