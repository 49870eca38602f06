"""NM731/NM732: the dependencies a project declares in its dependency files
(`scan.matchers.requirements`), and NM008 for one that does not parse."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from neuron_migrate import api
from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan.engine import scan_paths
from neuron_migrate.scan.matchers.requirements import declared, is_dependency_file, requirement_keys

PACK = load_pack()


def found(root: Path, pack=PACK) -> list[tuple[str, int, int, str, str]]:  # type: ignore[no-untyped-def]
    """(path, line, column, code, symbol) of every finding of a scan of `root`."""
    result = scan_paths([root], pack, use_cache=False, jobs=1)
    return [(fr.path, f.span.line, f.span.col, f.code, f.symbol) for fr in result.files for f in fr.findings]


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize(("spec", "keys"), [
    ("flash-attn==2.6.3", ("flash-attn",)),
    ("Flash_Attn[full]>=2; platform_system == 'Linux'", ("flash-attn", "full")),
    ("optimum[onnxruntime-gpu]>=1.23.1", ("optimum", "onnxruntime-gpu")),
    ("jax[cuda12, tpu]", ("jax", "cuda12", "tpu")),
    ("torch==2.4.0+cu121", ("torch", "torch+cu121")),
    ("torch-scatter==2.1.2+pt24cu121", ("torch-scatter", "torch-scatter+pt24cu121")),
    ("flash-attn @ https://github.com/x/releases/flash_attn-2.5.8+cu122torch2.3-cp311-linux_x86_64.whl",
     ("flash-attn", "flash-attn+cu122torch2.3")),
    ("https://example.org/wheels/flash_attn-2.5.8+cu122torch2.3-cp311-cp311-linux_x86_64.whl",
     ("flash-attn", "flash-attn+cu122torch2.3")),
    ("git+https://github.com/NVIDIA/apex.git#egg=apex", ("apex",)),
    # no `#egg=`: the repository names it, by its name and its owner's (the name may not be the package's)
    ("git+https://github.com/NVIDIA/apex", ("apex", "repo:nvidia/apex")),
    ("git+https://github.com/Dao-AILab/flash-attention.git@v2.6.3#subdirectory=csrc/rotary",
     ("flash-attention", "repo:dao-ailab/flash-attention")),
    ("git+ssh://git@github.com/state-spaces/mamba.git@main", ("mamba", "repo:state-spaces/mamba")),
    ("git+https://github.com/NVlabs/tiny-cuda-nn/#subdirectory=bindings/torch", ("tiny-cuda-nn", "repo:nvlabs/tiny-cuda-nn")),
    ("https://github.com/facebookresearch/xformers/archive/refs/heads/main.zip",
     ("xformers", "repo:facebookresearch/xformers")),
    ("transformers @ git+https://github.com/huggingface/transformers@v4.45.0", ("transformers",)),
    # vllm's requirements/xpu.txt and cpu.txt: builds for another device are not the CUDA package
    ("triton==3.9.0+xpu", ("triton+xpu",)),
    ("torch==2.9.0+cpu; platform_machine == 'x86_64'", ("torch+cpu",)),
    ("https://example.org/triton-3.4.0+rocm6.4-cp311-cp311-linux_x86_64.whl", ("triton+rocm6.4",)),
    ("numpy", ("numpy",)),
    ("", ()),
    # a local checkout, by its path (3D Gaussian Splatting's environment.yml)
    ("submodules/diff-gaussian-rasterization", ("diff-gaussian-rasterization",)),
    ("./submodules/simple-knn/", ("simple-knn",)),
])
def test_requirement_keys(spec: str, keys: tuple[str, ...]) -> None:
    assert requirement_keys(spec) == keys


@pytest.mark.parametrize(("rel", "expected"), [
    ("requirements.txt", True), ("requirements-gpu.txt", True), ("dev-requirements.in", True),
    ("requirements/base.txt", True), ("sub/requirements/extra.in", True), ("constraints.txt", True),
    ("pyproject.toml", True), ("pkg/setup.cfg", True), ("environment.yml", True), ("environment-cuda.yaml", True),
    ("notes.txt", False), ("requirements.md", False), ("docs/base.txt", False), ("config.yaml", False),
    ("tox.ini", False),
])
def test_which_files_are_dependency_files(rel: str, expected: bool) -> None:
    assert is_dependency_file(rel) is expected


def test_requirements_files_lines_options_and_urls(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": (
        "# CUDA build first\n"
        "--extra-index-url https://download.pytorch.org/whl/cu121\n"
        "torch==2.4.0+cu121  # pinned\n"
        "-r base.txt\n"
        "Bitsandbytes>=0.43 ; sys_platform == 'linux'\n"
        "xformers \\\n"
        "    ==0.0.27\n"
        "-e git+https://github.com/NVIDIA/apex.git#egg=apex\n"
        "--find-links=https://data.pyg.org/whl/torch-2.4.0+cu121.html\n"
        "transformers>=4.45\n"
        "nvidia-ml-py  # neuron-migrate: ignore[NM731]\n"
    ), "requirements/extra.txt": "triton\n", "notes.txt": "flash-attn\n"})
    assert found(tmp_path) == [
        ("requirements.txt", 2, 0, "NM732", "--extra-index-url https://download.pytorch.org/whl/cu121"),
        ("requirements.txt", 3, 0, "NM732", "torch==2.4.0+cu121"),
        ("requirements.txt", 5, 0, "NM731", "Bitsandbytes>=0.43 ; sys_platform == 'linux'"),
        ("requirements.txt", 6, 0, "NM731", "xformers \\"),
        ("requirements.txt", 8, 0, "NM731", "-e git+https://github.com/NVIDIA/apex.git#egg=apex"),
        ("requirements.txt", 9, 0, "NM732", "--find-links=https://data.pyg.org/whl/torch-2.4.0+cu121.html"),
        ("requirements.txt", 11, 0, "NM731", "nvidia-ml-py"),
        ("requirements/extra.txt", 1, 0, "NM731", "triton"),
    ]
    # the directive on line 11 silences its finding, as in a Python file
    shown = api.scan([tmp_path], use_cache=False, jobs=1).findings
    assert [(f.path, f.span.line) for f in shown if f.code == "NM731"] == [
        ("requirements.txt", 5), ("requirements.txt", 6), ("requirements.txt", 8), ("requirements/extra.txt", 1)]


PYPROJECT = """\
[build-system]
requires = ["setuptools>=64", "ninja", "cuda-python"]

[project]
name = "demo"
dependencies = [
    "torch>=2.4",
    "flash-attn>=2.5; platform_system == 'Linux'",
]

[project.optional-dependencies]
train = ["bitsandbytes", "deepspeed"]
serve = ["bitsandbytes", "tensorrt==10.0"]

[dependency-groups]
dev = ["pytest", {include-group = "train"}]

[tool.poetry.dependencies]
python = "^3.11"
xformers = "^0.0.27"
torch = {version = "2.4.0+cu121", source = "pytorch-cu121"}

[tool.poetry.group.gpu.dependencies]
"cupy-cuda12x" = "*"

[[tool.uv.index]]
name = "pytorch-cu121"
url = "https://download.pytorch.org/whl/cu121"
"""


def test_pyproject_tables_each_dependency_where_it_is_written(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": PYPROJECT})
    assert found(tmp_path) == [
        ("pyproject.toml", 2, 40, "NM731", "cuda-python"),
        ("pyproject.toml", 8, 5, "NM731", "flash-attn>=2.5; platform_system == 'Linux'"),
        ("pyproject.toml", 12, 10, "NM731", "bitsandbytes"),
        ("pyproject.toml", 13, 10, "NM731", "bitsandbytes"),  # the same name in another extra
        ("pyproject.toml", 13, 26, "NM731", "tensorrt==10.0"),
        ("pyproject.toml", 20, 0, "NM731", "xformers"),
        ("pyproject.toml", 21, 0, "NM732", "torch"),
        ("pyproject.toml", 24, 1, "NM731", "cupy-cuda12x"),
        ("pyproject.toml", 28, 7, "NM732", "https://download.pytorch.org/whl/cu121"),
    ]


def test_setup_cfg_and_conda_environment(tmp_path: Path) -> None:
    write(tmp_path, {
        "setup.cfg": ("[metadata]\nname = demo\n\n[options]\ninstall_requires =\n    torch>=2.4\n"
                      "    xformers  # attention\n\n[options.extras_require]\ngpu =\n    pynvml\n"
                      "cuda-autodetect =\n    cupy-wheel>=11.0.0\nrl =\n    rl-warp-drive\n    cpm_kernels\n"),
        "environment.yml": ("name: demo\nchannels:\n  - pytorch\n  - nvidia\ndependencies:\n  - python=3.11\n"
                            "  - pytorch=2.1.0=py3.11_cuda12.1_cudnn8.9.2_0\n  - pytorch-cuda=12.1\n"
                            "  - nvidia::cuda-nvcc\n  - pip\n  - pip:\n    - --extra-index-url https://download.pytorch.org/whl/cu121\n"
                            "    - flash-attn==2.6.3\n    - transformers\n"),
    })
    assert found(tmp_path) == [
        ("environment.yml", 7, 4, "NM732", "pytorch=2.1.0=py3.11_cuda12.1_cudnn8.9.2_0"),
        ("environment.yml", 8, 4, "NM731", "pytorch-cuda=12.1"),
        ("environment.yml", 9, 4, "NM731", "nvidia::cuda-nvcc"),
        ("environment.yml", 12, 6, "NM732", "--extra-index-url https://download.pytorch.org/whl/cu121"),
        ("environment.yml", 13, 6, "NM731", "flash-attn==2.6.3"),
        ("setup.cfg", 7, 4, "NM731", "xformers"),
        ("setup.cfg", 11, 4, "NM731", "pynvml"),
        ("setup.cfg", 13, 4, "NM731", "cupy-wheel>=11.0.0"),  # CuPy's meta-package: the build for the CUDA found
        ("setup.cfg", 15, 4, "NM731", "rl-warp-drive"),
        ("setup.cfg", 16, 4, "NM731", "cpm_kernels"),
    ]


def test_a_conda_environment_of_another_name_and_an_escaped_marker_in_pyproject(tmp_path: Path) -> None:
    """ffcv's `ffcv-conda.yml` is a conda environment by its top-level `dependencies:` list (a
    configuration file's nested one is not); GPTQModel's `"triton>=3.8.0; python_version < \\"3.15\\""`
    is found where it is written, not at the file's first line."""
    write(tmp_path, {
        "ffcv-conda.yml": ("name: ffcv\nchannels:\n  - pytorch\ndependencies:\n  # toolkit\n  - cudatoolkit=11.2.2=he111cf0_8\n"
                           "  - cupy\n  - pip:\n    - torchaudio==0.10.0+cu113\n"),
        "configs/train.yaml": "model:\n  dependencies:\n    - cupy\n",
        "configs/broken.yaml": "dependencies:\n  - cupy\n - bad: [\n",
        "pyproject.toml": ('# SPDX-License-Identifier: Apache-2.0\n[project]\nname = "x"\n[project.optional-dependencies]\n'
                           'triton = [\n  "triton>=3.8.0; python_version < \\"3.15\\"",\n]\n'),
    })
    assert found(tmp_path) == [
        ("ffcv-conda.yml", 6, 4, "NM731", "cudatoolkit=11.2.2=he111cf0_8"),
        ("ffcv-conda.yml", 7, 4, "NM731", "cupy"),
        ("ffcv-conda.yml", 9, 6, "NM732", "torchaudio==0.10.0+cu113"),
        ("pyproject.toml", 6, 3, "NM731", 'triton>=3.8.0; python_version < "3.15"'),
    ]


@pytest.mark.parametrize(("rel", "text", "line"), [
    ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["flash-attn"\n', 3),
    ("environment.yml", "dependencies:\n  - pip\n - bad: [\n", 3),
    ("setup.cfg", "install_requires = xformers\n[options]\n", 1),
    ("pyproject.toml", "[project]\ndependencies = " + "[" * 5000 + "]" * 5000 + "\n", 1),  # nested too deeply
    ("environment.yml", "dependencies: " + "[" * 5000 + "]" * 5000 + "\n", 1),
])
def test_a_file_that_does_not_parse_is_reported_and_nothing_else(tmp_path: Path, rel: str, text: str,
                                                                  line: int) -> None:
    write(tmp_path, {rel: text, "requirements.txt": "xformers\n"})
    codes = {p: (ln, c) for p, ln, _, c, _ in found(tmp_path)}
    assert codes == {rel: (line, "NM008"), "requirements.txt": (1, "NM731")}


def test_not_read_without_a_dependency_rule_and_read_when_named(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "xformers\n", "a.py": "import torch\n"})
    without = replace(PACK, rules={c: r for c, r in PACK.rules.items() if not r.match.requirements}, digest="")
    result = scan_paths([tmp_path], without, use_cache=False, jobs=1)
    assert [fr.path for fr in result.files] == ["a.py"]
    named = scan_paths([tmp_path / "requirements.txt"], PACK, use_cache=False, jobs=1)
    assert [(fr.path, [f.code for f in fr.findings]) for fr in named.files] == [("requirements.txt", ["NM731"])]


def test_lines_that_name_no_dependency_are_passed_over() -> None:
    text = "-r base.txt\n-c constraints.txt\n--no-binary :all:\n  \n# only a comment\n"
    assert [d.keys for d in declared(text, "requirements.txt")] == []


def test_gpu_builds_of_libraries_that_also_have_cpu_builds(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": (
        "faiss-gpu>=1.6.3\n"
        "faiss-gpu-cu12\n"
        "faiss-cpu\n"
        "kvikio-cu12\n"
        "cucim-cu12; platform_system == 'Linux'\n"
        "cuequivariance-ops-torch-cu12>=0.2.0\n"
        "cuequivariance-torch>=0.2.0\n"
        "autoawq-kernels\n"
    )})
    assert [(line, code) for _, line, _, code, _ in found(tmp_path)] == [
        (1, "NM731"), (2, "NM731"), (4, "NM731"), (5, "NM731"), (6, "NM731"), (8, "NM731")]


SETUP_PY = '''\
from setuptools import setup, find_packages

REQUIRED = ["torch>=2.1", "autoawq-kernels", "numpy"]
EXTRAS = {"gpu": ["bitsandbytes"], "dev": ["pytest"]}


def first():
    return 1


def second():
    return 2


def third():
    return 3


def main():
    setup(
        name="demo",
        packages=find_packages(),
        install_requires=REQUIRED,
        extras_require={"kernels": ["autoawq-kernels", "flash-attn>=2.2.0"], "eval": ["lm-eval"]},
        setup_requires=("triton",),
        tests_require=EXTRAS,
        keywords="cuda, kernels",
    )


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize("partial", ["0", "1"])
def test_setup_py_dependency_lists_are_read_as_requirements(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            partial: str) -> None:
    monkeypatch.setenv("NEURON_MIGRATE_PARTIAL_PARSE", partial)
    write(tmp_path, {"setup.py": SETUP_PY})
    assert [(line, col, code) for _, line, col, code, _ in found(tmp_path)] == [
        (3, 26, "NM731"), (4, 18, "NM731"), (24, 36, "NM731"), (24, 55, "NM731"), (25, 24, "NM731")]


def test_onnx_runtime_cuda_feed_is_a_cuda_build_index(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": (
        "--extra-index-url https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/onnxruntime-cuda-12/pypi/simple/\n"
        "--extra-index-url https://pypi.org/simple\n")})
    assert [(line, code) for _, line, _, code, _ in found(tmp_path)] == [(1, "NM732")]


def test_cuda_builds_named_by_conda_build_strings_local_labels_and_other_indexes(tmp_path: Path) -> None:
    """LoRA's `torchvision=0.10.0=py37_cu111` and `requirement.txt`, VoiceCraft's `pocl-cuda`,
    OneFormer's NATTEN wheel for cu113; Pointcept's `cuda` package is found on its own line, not
    in the channel `nvidia/label/cuda-12.4.1` above it."""
    write(tmp_path, {
        "environment.yml": ("name: pc\nchannels:\n  - pyg\n  - nvidia/label/cuda-12.4.1\ndependencies:\n  - python=3.10\n"
                            "  - cuda\n  - pocl-cuda=5.0=hdaecddf_2\n  - torchvision=0.10.0=py37_cu111\n  - numpy=1.26=py310_0\n"),
        "NLG/requirement.txt": "torch==1.7.1+cu101\n",
        "requirements.txt": ("-f https://shi-labs.com/natten/wheels/cu113/torch1.10.1/index.html\n"
                             "natten==0.14.4+torch1101cu113\nnumpy==1.26.4\n"),
    })
    assert found(tmp_path) == [
        ("NLG/requirement.txt", 1, 0, "NM732", "torch==1.7.1+cu101"),
        ("environment.yml", 7, 4, "NM731", "cuda"),
        ("environment.yml", 8, 4, "NM731", "pocl-cuda=5.0=hdaecddf_2"),
        ("environment.yml", 9, 4, "NM732", "torchvision=0.10.0=py37_cu111"),
        ("requirements.txt", 1, 0, "NM732", "-f https://shi-labs.com/natten/wheels/cu113/torch1.10.1/index.html"),
        ("requirements.txt", 2, 0, "NM732", "natten==0.14.4+torch1101cu113"),
    ]


def test_a_cuda_library_installed_from_its_repository(tmp_path: Path) -> None:
    """A VCS URL or a forge archive with no `#egg=` names its package through the repository,
    also where the repository is not named like the package (flash-attention builds flash-attn)."""
    write(tmp_path, {"requirements.txt": (
        "git+https://github.com/Dao-AILab/flash-attention.git@v2.6.3#subdirectory=csrc/layer_norm\n"
        "git+https://github.com/huggingface/peft.git\n"
        "https://github.com/facebookresearch/xformers/archive/refs/heads/main.zip\n"
        "git+ssh://git@github.com/state-spaces/mamba.git@v2.2.2\n"
        "git+https://github.com/someone/mamba-demo\n"
    ), "install.sh": "pip install git+https://github.com/NVlabs/tiny-cuda-nn/#subdirectory=bindings/torch\n"})
    assert found(tmp_path) == [
        ("install.sh", 1, 12, "NM731", "git+https://github.com/NVlabs/tiny-cuda-nn/#subdirectory=bindings/torch"),
        ("requirements.txt", 1, 0, "NM731",
         "git+https://github.com/Dao-AILab/flash-attention.git@v2.6.3#subdirectory=csrc/layer_norm"),
        ("requirements.txt", 3, 0, "NM731", "https://github.com/facebookresearch/xformers/archive/refs/heads/main.zip"),
        ("requirements.txt", 4, 0, "NM731", "git+ssh://git@github.com/state-spaces/mamba.git@v2.2.2"),
    ]


def test_a_conda_build_of_a_library_for_one_cuda_version(tmp_path: Path) -> None:
    """RFdiffusion's SE3nv.yml installs DGL's CUDA 11.1 build by its conda name."""
    write(tmp_path, {"env.yml": "name: SE3nv\ndependencies:\n  - python=3.9\n  - dgl-cuda11.1\n  - dgl\n"})
    assert [(line, code, text) for _, line, _, code, text in found(tmp_path)] == [(4, "NM731", "dgl-cuda11.1")]


def test_replicates_cog_yaml_packages_and_build_commands(tmp_path: Path) -> None:
    """CodeFormer's and insanely-fast-whisper's cog.yaml: CUDA builds among `python_packages`, a
    CUDA library installed by a `run` command (a string, or a mapping with `command`)."""
    write(tmp_path, {"cog.yaml": (
        "build:\n"
        "  gpu: true\n"
        "  python_packages:\n"
        '    - "torch==1.11.0 --extra-index-url=https://download.pytorch.org/whl/cu113"\n'
        '    - "numpy==1.21"\n'
        "  run:\n"
        "    - pip install flash-attn --no-build-isolation\n"
        "    - command: export CUDA_HOME=/usr/local/cuda\n"
        "    - apt-get update\n"
        'predict: "predict.py:Predictor"\n'), "other/config.yaml": "run:\n  - pip install flash-attn\n"})
    assert [(rel, line, col, code) for rel, line, col, code, _ in found(tmp_path)] == [
        ("cog.yaml", 4, 7, "NM732"), ("cog.yaml", 7, 18, "NM731"), ("cog.yaml", 8, 22, "NM219")]


def test_a_dependency_is_located_in_its_list_not_among_the_keywords_above(tmp_path: Path) -> None:
    """optimum-benchmark's pyproject.toml names its backends as keywords before listing them as
    extras: each finding stands where the dependency is written."""
    write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\nkeywords = [\n  "bitsandbytes",\n  "flash-attn",\n]\n'
                                       'dependencies = ["torch"]\n[project.optional-dependencies]\nbnb = ["bitsandbytes"]\n'
                                       'fa = ["flash-attn>=2"]\n'})
    assert found(tmp_path) == [("pyproject.toml", 9, 8, "NM731", "bitsandbytes"),
                               ("pyproject.toml", 10, 7, "NM731", "flash-attn>=2")]


TABLE_SETUP_PY = '''\
import re
from setuptools import setup

_deps = ["accelerate>=1.2.1", "liger_kernel==0.5.2", "torch==2.5.1"]
deps = {b: a for a, b in (re.findall(r"^(([^!=<>~ ]+)(?:[!=<>~ ].*)?$)", x)[0] for x in _deps)}


def deps_list(*pkgs):
    return [deps[pkg] for pkg in pkgs]


extras = {}
extras["quality"] = deps_list("ruff")
extras["gpu"] = deps_list("bitsandbytes", "torch")
extras["ann"] = ["faiss-gpu", "annoy"]
install_requires = [deps["accelerate"], deps["liger_kernel"], deps["torch"]]

setup(name="recipes", install_requires=install_requires, extras_require=extras)
'''


def test_setup_py_dependencies_named_through_a_table_or_filled_in_by_key(tmp_path: Path) -> None:
    """open-r1 and Transformers pin their packages in `_deps` and list them as `deps["name"]` or
    `deps_list(...)`; txtai fills its extras by key (`extras["ann"] = [...]`)."""
    write(tmp_path, {"setup.py": TABLE_SETUP_PY})
    assert [(line, symbol) for _, line, _, code, symbol in found(tmp_path) if code == "NM731"] == [
        (14, "bitsandbytes"), (15, "faiss-gpu"), (16, "liger_kernel")]


def test_setup_py_lists_joined_by_plus_with_markers_and_gpu_extras(tmp_path: Path) -> None:
    """RealtimeTTS joins its extras' lists with `+` and marks the CUDA build by platform;
    RealtimeSTT asks for Silero VAD's `onnx-gpu` extra (onnxruntime-gpu)."""
    write(tmp_path, {"setup.py": (
        "from setuptools import setup\n"
        "\n"
        "native = ['realtimetts-qwen-native[cuda12]==0.2.0; sys_platform == \"win32\"']\n"
        "common = native + ['numpy']\n"
        "setup(name='x', extras_require={'qwen': common, 'vad': ['silero-vad[onnx-gpu]>=6.2.1', 'silero-vad>=6']})\n")})
    assert [(line, code, symbol) for _, line, _, code, symbol in found(tmp_path)] == [
        (3, "NM731", 'realtimetts-qwen-native[cuda12]==0.2.0; sys_platform == "win32"'),
        (5, "NM731", "silero-vad[onnx-gpu]>=6.2.1")]


def test_a_gpu_extra_installs_a_cuda_build(tmp_path: Path) -> None:
    """stable-fast-3d asks for `rembg[gpu]`, which pulls onnxruntime-gpu; plain `rembg` is none."""
    write(tmp_path, {"requirements.txt": "rembg[gpu]==2.0.57\nrembg==2.0.57\n"})
    assert [(line, code) for _, line, _, code, _ in found(tmp_path)] == [(1, "NM731")]
