"""Environment variables set in shell scripts (`scan.matchers.shell`), reported by the
`match.env_vars` rules as in Python."""

from __future__ import annotations

from pathlib import Path

from neuron_migrate.findings import Finding
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan.engine import scan_paths

PACK = load_pack()


def scanned(root: Path) -> list[Finding]:
    """Every finding of a scan of `root`, in path order."""
    return [f for fr in scan_paths([root], PACK, use_cache=False, jobs=1).files for f in fr.findings]

SCRIPT = """\
#!/bin/bash
# CUDA_VISIBLE_DEVICES=0 in a comment is no setting
export CUDA_VISIBLE_DEVICES=0,1,2,3
export NCCL_DEBUG=INFO NCCL_IB_DISABLE=1
CUDA_LAUNCH_BLOCKING=1 torchrun --nproc_per_node=4 train.py lr=0.1  # NCCL_P2P_DISABLE=1 here too
env TORCH_NCCL_ASYNC_ERROR_HANDLING=1 python eval.py --batch_size=8
MASTER_PORT=29500
echo "NCCL_SOCKET_IFNAME=eth0"
"""


def test_variables_read_and_build_switches_also_in_slurm_scripts(tmp_path: Path) -> None:
    """LLaVA's eval scripts read the GPU list; flashinfer's build script sets the CUDA arch list;
    alignment-handbook launches through an sbatch file."""
    (tmp_path / "eval.sh").write_text(
        'gpu_list="${CUDA_VISIBLE_DEVICES:-0}"\n'
        "echo 'using $CUDA_VISIBLE_DEVICES'\n"
        "export TORCH_CUDA_ARCH_LIST=\"8.0 9.0\" FORCE_CUDA=1\n"
        "nvcc_path=$CUDA_HOME/bin/nvcc; echo $HOME\n"
        'echo "Building for CUDA ${CUDA_VERSION}" && printf "%s" "$CUDA_HOME"\n')
    (tmp_path / "launch.slurm").write_text("#!/bin/bash\n#SBATCH --nodes=2\nexport NCCL_ASYNC_ERROR_HANDLING=1\n")
    result = scan_paths([tmp_path], PACK, use_cache=False, jobs=1)
    found = [(fr.path, f.span.line, f.span.col, f.code, f.symbol) for fr in result.files for f in fr.findings]
    assert sorted(found) == [
        ("eval.sh", 1, 12, "NM107", "CUDA_VISIBLE_DEVICES"),
        ("eval.sh", 3, 7, "NM219", "TORCH_CUDA_ARCH_LIST"),
        ("eval.sh", 3, 38, "NM219", "FORCE_CUDA"),
        ("eval.sh", 4, 11, "NM219", "CUDA_HOME"),
        ("launch.slurm", 3, 7, "NM406", "NCCL_ASYNC_ERROR_HANDLING"),
    ]  # in single quotes `$CUDA_VISIBLE_DEVICES` is text; what echo and printf print is a message


def test_a_launch_script_s_cuda_and_nccl_variables(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.sh").write_text(SCRIPT)
    (tmp_path / "notes.txt").write_text("export CUDA_VISIBLE_DEVICES=0\n")
    result = scan_paths([tmp_path], PACK, use_cache=False, jobs=1)
    found = [(fr.path, f.span.line, f.span.col, f.code, f.symbol) for fr in result.files for f in fr.findings]
    assert found == [
        ("scripts/train.sh", 3, 7, "NM107", "CUDA_VISIBLE_DEVICES"),
        ("scripts/train.sh", 4, 7, "NM406", "NCCL_DEBUG"),
        ("scripts/train.sh", 4, 23, "NM406", "NCCL_IB_DISABLE"),
        ("scripts/train.sh", 5, 0, "NM217", "CUDA_LAUNCH_BLOCKING"),
        ("scripts/train.sh", 6, 4, "NM406", "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
    ]  # `echo "NCCL_SOCKET_IFNAME=eth0"` prints text: a quoted word is no assignment


def test_a_script_s_own_variables_with_a_cuda_word(tmp_path: Path) -> None:
    """pytorch/examples' run scripts: `USE_CUDA=True ./run_distributed_examples.sh` turns CUDA on
    through the script's own variables; a line is reported once, and not again where a specific
    rule already reported it."""
    (tmp_path / "run.sh").write_text(
        "USE_CUDA=${USE_CUDA:-False}\n"
        "case $USE_CUDA in\n"
        "  True) CUDA=1 ;;\n"
        "esac\n"
        "export CUDA_VISIBLE_DEVICES=0 DEV=$CUDA\n"
        "NUM_WORKERS=4\n")
    found = [(f.span.line, f.span.col, f.code, f.symbol) for f in scanned(tmp_path)]
    assert found == [
        (1, 0, "NM290", "USE_CUDA"),
        (2, 6, "NM290", "USE_CUDA"),
        (3, 8, "NM290", "CUDA"),
        (5, 7, "NM107", "CUDA_VISIBLE_DEVICES"),
    ]


def test_a_bare_flag_that_turns_its_setting_off_is_no_cuda_switch(tmp_path: Path) -> None:
    """InstructLab's smoke test passes `--disable_flash_attn`: flash-attn off, not on; `--no-fp16`
    likewise; `--use_flash_attn` and `--fp16` turn them on."""
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\npython train.py --disable_flash_attn --no-fp16 --no_cuda\npython train.py --fp16 --use_flash_attn\n")
    assert [(f.span.line, f.code, f.symbol) for f in scanned(tmp_path)] == [
        (3, "NM109", "--fp16"), (3, "NM109", "--use_flash_attn")]


def test_a_pipe_inside_quotes_separates_no_commands(tmp_path: Path) -> None:
    """onediff's benchmark scripts build a Markdown table row in a string (`"| ... | CUDA Mem after
    (GiB) |"`): no command `CUDA` runs; a command substitution inside double quotes does run."""
    (tmp_path / "bench.sh").write_text(
        '#!/bin/bash\nROW="| Model | HxW | CUDA Mem after (GiB) |"\nout="$(nvidia-smi -L | wc -l)"\n')
    assert [(f.span.line, f.symbol) for f in scanned(tmp_path)] == [(3, "nvidia-smi")]


def test_settings_kept_in_a_variable_and_cuda_directories_on_search_paths(tmp_path: Path) -> None:
    """CogVLM keeps NCCL settings in a variable for its launch line; trlx's Slurm script puts the
    CUDA toolkit and NCCL's plug-in on the library path."""
    (tmp_path / "run.sh").write_text(
        '#!/bin/bash\n'
        'OPTIONS_NCCL="NCCL_DEBUG=info NCCL_IB_DISABLE=0"\n'
        'echo "NCCL_SOCKET_IFNAME=eth0"\n'
        'export LD_LIBRARY_PATH=/opt/aws-ofi-nccl/lib:/usr/local/cuda-11.0/lib64:$LD_LIBRARY_PATH\n'
        'export PATH=$CUDA_HOME/bin:$PATH\n'
        'export PATH=/usr/local/bin:$HOME/.local/bin:$PATH\n'
        'X="mode=fast"\n')
    assert [(f.span.line, f.span.col, f.code, f.symbol) for f in scanned(tmp_path)] == [
        (2, 14, "NM406", "NCCL_DEBUG"),
        (2, 30, "NM406", "NCCL_IB_DISABLE"),
        (4, 23, "NM290", "/opt/aws-ofi-nccl/lib"),
        (5, 13, "NM219", "CUDA_HOME"),
    ]


def test_variables_unset_and_values_with_a_cuda_word(tmp_path: Path) -> None:
    """NVIDIA's BERT fine-tuning script unsets CUDA_VISIBLE_DEVICES; a Megatron launch script
    picks Transformer Engine through a variable's value and tunes it with NVTE_* variables. A
    value with no CUDA word, or one the script expands, is none; nor is a job's name or tag
    (DeepSpeedExamples' `JOB_NAME=onebit_adam_4k_seq128_nccl`)."""
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\n"
        "unset CUDA_VISIBLE_DEVICES\n"
        "unset -v NCCL_DEBUG OMP_NUM_THREADS; unset -f NCCL_helper\n"
        "TRANSFORMER_IMPL=transformer_engine\n"
        'IMPL="local" ATTN=flash_attn\n'
        "export NVTE_FLASH_ATTN=1\n"
        "CKPT=$CUDA_CKPT_DIR\n"
        "MODE=fast\n"
        'SMI="/usr/bin/nvidia-smi" LOGDIR=tensorrt/logs\n'
        "LOGDIR=tensorrt/logs\n"
        "JOB_NAME=onebit_adam_4k_seq128_nccl RUN_TAG=flash_attn\n"
        "uv pip install torch --torch-backend=cu126 && uv pip install torch --torch-backend=cpu\n")
    assert [(f.span.line, f.span.col, f.code, f.symbol) for f in scanned(tmp_path)] == [
        (2, 6, "NM107", "CUDA_VISIBLE_DEVICES"),
        (3, 9, "NM406", "NCCL_DEBUG"),
        (4, 17, "NM290", "transformer_engine"),
        (5, 18, "NM290", "flash_attn"),
        (6, 7, "NM606", "NVTE_FLASH_ATTN"),
        (7, 6, "NM219", "CUDA_CKPT_DIR"),
        (9, 5, "NM290", "/usr/bin/nvidia-smi"),  # a path is what its last part names
        (12, 21, "NM109", "--torch-backend=cu126"),  # uv's CUDA build of PyTorch
    ]


def test_python_run_inline_by_a_script(tmp_path: Path) -> None:
    """Megatron's DeepSeek-V3 launch script counts GPUs with `python3 -c`: the code is read as
    Python where it stands (its findings have no fix); text echoed (a `;` in its quotes ends no
    command) or commented is not, nor code that is no Python."""
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\n"
        'GPUS_PER_NODE=`python3 -c "import torch; print(torch.cuda.device_count())"`\n'
        "N=$(python -c 'import torch; x = torch.zeros(1).cuda()')\n"
        "python -c 'from tests import run; run(opts=\"--device=cuda\")'\n"
        "echo python -c \"import torch; torch.cuda.synchronize()\"\n"
        "# python -c \"import torch; torch.cuda.synchronize()\"\n"
        "python -c 'import torch; torch.cuda.(1'\n")
    found = scanned(tmp_path)
    assert [(f.span.line, f.span.col, f.span.end_col, f.code, f.symbol) for f in found] == [
        (2, 47, 70, "NM202", "torch.cuda.device_count"),
        (3, 48, 54, "NM102", ".cuda()"),
        (4, 43, 58, "NM290", '"--device=cuda"'),  # once: the shell assigns nothing in single quotes
    ]
    assert all(not f.fixes and f.fix_class.value == "manual" and f.source_line.startswith(("GPUS", "N=", "python"))
               for f in found)


SKYPILOT_TASK = """\
name: gpt2-train

resources:
  accelerators: A100:8

envs:
  NCCL_DEBUG: INFO
  WANDB_PROJECT: gpt2

setup: |
  sudo apt-get -y install cudnn-cuda-12 git
  pip install nvidia-nccl-cu12
  export LIBRARY_PATH=$LIBRARY_PATH:/usr/local/nccl2/lib

run: |
  echo "starting nccl job"
  NCCL_IB_DISABLE=1 torchrun --nproc_per_node=8 train.py --device cuda
"""


def test_the_shell_of_skypilot_and_dstack_tasks(tmp_path: Path) -> None:
    """SkyPilot's LLM examples install NCCL and cuDNN in `setup:` and launch with NCCL settings in
    `run:`; dstack's tasks list `commands:` and `env:`. A YAML file of another shape with a `run`
    key is settings only, and system packages without a CUDA word are no site."""
    (tmp_path / "gpt2-train.yaml").write_text(SKYPILOT_TASK)
    (tmp_path / "dstack.yml").write_text("type: task\nenv:\n  - NCCL_DEBUG=INFO\ncommands:\n"
                                         "  - pip install flash-attn\n  - 'python train.py'\nresources:\n  gpu: 24GB\n")
    (tmp_path / "experiment.yaml").write_text("run: |\n  pip install flash-attn\nmodel: llama\n")
    assert [(f.path, f.span.line, f.span.col, f.code, f.symbol) for f in scanned(tmp_path)] == [
        ("dstack.yml", 3, 4, "NM406", "NCCL_DEBUG"),
        ("dstack.yml", 5, 16, "NM731", "flash-attn"),
        ("gpt2-train.yaml", 7, 2, "NM406", "NCCL_DEBUG"),
        ("gpt2-train.yaml", 11, 26, "NM290", "cudnn-cuda-12"),
        ("gpt2-train.yaml", 12, 14, "NM731", "nvidia-nccl-cu12"),
        ("gpt2-train.yaml", 13, 36, "NM290", "/usr/local/nccl2/lib"),
        ("gpt2-train.yaml", 17, 2, "NM406", "NCCL_IB_DISABLE"),
        ("gpt2-train.yaml", 17, 57, "NM109", "--device cuda"),
    ]


def test_azure_ml_jobs_and_the_environment_variables_of_any_configuration(tmp_path: Path) -> None:
    """Azure ML's large-scale training examples pass `--fp16` in a job's `command:` and set NCCL and
    CUDA variables in `environment_variables:` (a pipeline's jobs too); a Kubernetes pod sets them
    as `{name:, value:}` entries. A variable with no CUDA word, or a value, is no site of its own."""
    (tmp_path / "job.yml").write_text(
        "$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\n"
        "command: >-\n  python pretrain.py --deepspeed ds.json --fp16\n"
        "environment: azureml:ACPT@latest\n"
        "environment_variables:\n  NCCL_DEBUG: 'WARN'\n  CUDA_DEVICE_ORDER: 'PCI_BUS_ID'\n  WANDB_MODE: offline\n")
    (tmp_path / "pipeline.yml").write_text(
        "type: pipeline\njobs:\n  train:\n    type: command\n    command: python train.py --device cuda\n"
        "    environment_variables:\n      CUDA_LAUNCH_BLOCKING: '1'\n")
    (tmp_path / "pod.yaml").write_text(
        "kind: Pod\nspec:\n  containers:\n    - name: trainer\n      env:\n        - name: NCCL_SOCKET_IFNAME\n"
        "          value: eth0\n        - name: OMP_NUM_THREADS\n          value: '4'\n")
    assert [(f.path, f.span.line, f.span.col, f.code) for f in scanned(tmp_path)] == [
        ("job.yml", 3, 41, "NM109"),
        ("job.yml", 6, 2, "NM406"),
        ("job.yml", 7, 2, "NM219"),
        ("pipeline.yml", 5, 29, "NM109"),
        ("pipeline.yml", 7, 6, "NM217"),
        ("pod.yaml", 6, 16, "NM406"),
    ]


def test_a_slurm_gpu_request_on_srun_and_in_a_directive(tmp_path: Path) -> None:
    """OpenMMLab's slurm_train.sh: `srun --gres=gpu:${GPUS_PER_NODE}`; a batch script's
    `#SBATCH --gres=gpu:4` is an option of the job, not a comment. Other directives are silent."""
    (tmp_path / "slurm_train.sh").write_text(
        "#!/bin/bash\n#SBATCH --gres=gpu:4\n#SBATCH --job-name=train\n# --gres=gpu:2 in prose\n"
        "srun -p ${PARTITION} --gres=gpu:${GPUS_PER_NODE} --ntasks=8 python -u train.py\n")
    assert [(f.span.line, f.code, f.symbol) for f in scanned(tmp_path)] == [
        (2, "NM109", "--gres=gpu:4"), (5, "NM109", "--gres=gpu:${GPUS_PER_NODE}")]


def test_docker_s_gpu_request(tmp_path: Path) -> None:
    """ignite's multinode test runner: `docker run --gpus all` needs the NVIDIA container runtime."""
    (tmp_path / "run_in_docker.sh").write_text("docker run --gpus all --rm -it img bash\ndocker run --rm -it img bash\n")
    assert [(f.span.line, f.code, f.symbol) for f in scanned(tmp_path)] == [(1, "NM109", "--gpus all")]
