"""Findings that need a fact about the scanned project (a rule's `project:` key; issue 12): an
import of the project's compiled `_C` extension is a CUDA-only site only where the project's
build compiles CUDA sources. The projects are written for these tests, shaped like detection and
sparse-ops libraries that ship a CUDA extension."""

from __future__ import annotations

from pathlib import Path

from neuron_migrate.scan.engine import scan_paths
from tests.scan.conftest import PACK, marked, sites, write

CUDA_SETUP = """
    import glob
    import os

    from setuptools import find_packages, setup
    from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

    def get_extensions():
        here = os.path.dirname(os.path.abspath(__file__))
        sources = glob.glob(os.path.join(here, "boxops", "csrc", "*.cpp"))
        sources += glob.glob(os.path.join(here, "boxops", "csrc", "cuda", "*.cu"))
        return [CUDAExtension("boxops._C", sources, define_macros=[("WITH_CUDA", None)])]

    setup(name="boxops", packages=find_packages(), ext_modules=get_extensions(),
          cmdclass={"build_ext": BuildExtension})
"""

CPU_SETUP = """
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CppExtension

    setup(name="boxops", packages=["boxops"],
          ext_modules=[CppExtension("boxops._C", ["boxops/csrc/nms.cpp", "boxops/csrc/roi_align.cpp"])],
          cmdclass={"build_ext": BuildExtension})
"""

PACKAGE = {
    "boxops/__init__.py": """
        from . import _C  # <-
        from .nms import batched_nms, nms

        __all__ = ["nms", "batched_nms"]
        """,
    "boxops/nms.py": """
        import torch
        from torch import _C as torch_C

        import boxops._C  # <-
        from boxops import _C  # <-


        def nms(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
            return _C.nms(boxes, scores, iou_threshold)


        def batched_nms(boxes, scores, idxs, iou_threshold):
            offsets = idxs.to(boxes) * (boxes.max() + 1)
            return nms(boxes + offsets[:, None], scores, iou_threshold)


        def tracing() -> bool:
            return torch_C._get_tracing_state() is not None
        """,
    "boxops/ops/roi_align.py": """
        from .._C import roi_align_forward  # <-
        from torchvision import _C as tv_C


        def roi_align(x, rois, size):
            return roi_align_forward(x, rois, size[0], size[1], 1.0, 0, False)
        """,
}


def nm724(root: Path, **kw: object) -> set[tuple[str, int]]:
    return sites(root, "NM724", **kw)


def test_compiled_extension_imports_are_reported_where_the_build_compiles_cuda(tmp_path: Path) -> None:
    write(tmp_path, {**PACKAGE, "setup.py": CUDA_SETUP})
    # torch's and torchvision's own `_C` are not the project's extension.
    assert nm724(tmp_path, use_cache=False) == marked(PACKAGE)


def test_compiled_extension_imports_stay_silent_without_a_cuda_build(tmp_path: Path) -> None:
    write(tmp_path, {**PACKAGE, "setup.py": CPU_SETUP})
    assert nm724(tmp_path, use_cache=False) == set()
    write(tmp_path / "other", {"boxops/__init__.py": PACKAGE["boxops/__init__.py"]})  # no build file at all
    assert nm724(tmp_path / "other", use_cache=False) == set()


def test_a_cmake_cuda_build_counts_and_the_nearest_project_decides(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[build-system]\nrequires = ["scikit-build-core"]\n',
                     "CMakeLists.txt": "cmake_minimum_required(VERSION 3.18)\nproject(boxops LANGUAGES CXX CUDA)\n",
                     **PACKAGE,
                     # A vendored project with its own CPU-only build: its `_C` is plain C++.
                     "third_party/lite/setup.py": CPU_SETUP,
                     "third_party/lite/boxops/__init__.py": "from . import _C\n"})
    assert nm724(tmp_path, use_cache=False) == marked(PACKAGE)


def test_a_package_the_build_maps_to_another_directory_is_the_project_s_own(tmp_path: Path) -> None:
    """Pointcept's `libs/pointops/setup.py` builds `pointops._C` from a package in `functions/`
    (`package_dir={"pointops": "functions"}`): its modules import `pointops._C` by that name."""
    files = {
        "libs/pointops/functions/query.py": """
            from pointops._C import knn_query_cuda  # <-
            from torch._C import _cuda_getDevice
            """,
    }
    write(tmp_path, {**files, "libs/pointops/setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="pointops", packages=["pointops"], package_dir={"pointops": "functions"},
              ext_modules=[CUDAExtension(name="pointops._C", sources=["src/query_cuda.cu"])],
              cmdclass={"build_ext": BuildExtension})
        """})
    assert nm724(tmp_path, use_cache=False) == marked(files)


def test_a_changed_build_file_changes_the_result_of_a_cached_scan(tmp_path: Path) -> None:
    project, cache = tmp_path / "p", tmp_path / "cache"
    write(project, {**PACKAGE, "setup.py": CPU_SETUP})
    assert nm724(project, cache_dir=cache) == set()
    write(project, {"setup.py": CUDA_SETUP})
    assert nm724(project, cache_dir=cache) == marked(PACKAGE)


SPLAT = {
    "setup.py": "from setuptools import setup\n\nsetup(name='gsplat', packages=['gsplat'])\n",
    "gsplat/__init__.py": "from .rendering import render\n",
    "gsplat/utils.py": "import torch\n\n\ndef log_transform(x):\n    return torch.sign(x) * torch.log1p(x.abs())\n",
    "gsplat/rendering.py": """
        from gsplat.utils import log_transform


        def render(means):
            return log_transform(means)
        """,
    "examples/train.py": """
        from gsplat.utils import log_transform  # <-


        def step(means):
            return log_transform(means)  # <-
        """,
}


def test_a_cuda_library_s_own_modules_importing_each_other_are_no_use_of_it(tmp_path: Path) -> None:
    """Scanning gsplat itself: inside its package, `gsplat.utils` is its own structure (`foreign`);
    its example script is a user of the CUDA-only library."""
    write(tmp_path, SPLAT)
    found = sites(tmp_path, "NM730") | sites(tmp_path, "NM720")
    assert found == marked(SPLAT)


def test_an_unpacked_wheel_without_a_build_file_is_its_own_package_at_the_root(tmp_path: Path) -> None:
    """exllamav2's wheel holds no build file: its modules importing each other are its own
    structure, as with a setup.py; a script beside the package still uses the library."""
    wheel = {rel: text for rel, text in SPLAT.items() if rel != "setup.py"}
    # diffusers' wheel: its subpackage `quantizers/bitsandbytes` is no copy of bitsandbytes.
    wheel |= {"diffusers/__init__.py": "", "diffusers/quantizers/__init__.py": "",
              "diffusers/quantizers/bitsandbytes/__init__.py": "",
              "diffusers/quantizers/bitsandbytes/utils.py": "import bitsandbytes as bnb  # <-\n"}
    write(tmp_path, wheel)
    assert sites(tmp_path, "NM730") | sites(tmp_path, "NM720") | sites(tmp_path, "NM709") == marked(wheel)


def test_inside_the_library_a_cuda_word_is_still_reported_by_the_net(tmp_path: Path) -> None:
    """mmcv's own `from mmcv.ops import get_compiling_cuda_version`: the library rule's finding
    goes (the import is mmcv's structure), the CUDA word on the line stays; outside the package
    the library rule reports the line alone."""
    files = {
        "setup.py": "from setuptools import setup\n\nsetup(name='mmcv')\n",
        "mmcv/__init__.py": "",
        "mmcv/ops/__init__.py": "def get_compiling_cuda_version():\n    return None\n",
        "mmcv/utils/env.py": "from mmcv.ops import get_compiling_cuda_version, nms  # <-\n",
        "tools/info.py": "from mmcv.ops import get_compiling_cuda_version, nms  # <-\n",
    }
    write(tmp_path, files)
    assert sites(tmp_path, "NM290") == {("mmcv/utils/env.py", 1)}
    assert sites(tmp_path, "NM727") == {("tools/info.py", 1)}


def test_inside_the_library_its_own_name_is_no_cuda_word(tmp_path: Path) -> None:
    """flash_attn's own `from flash_attn.bert_padding import pad_input`: the library rule goes and
    so does the net, whose only CUDA word was the library's own name; an import of a module of
    the project that runs kernels is NM725's alone."""
    files = {
        "setup.py": "from setuptools import setup\n\nsetup(name='flash_attn')\n",
        "flash_attn/__init__.py": "",
        "flash_attn/bert_padding.py": "def pad_input(x):\n    return x\n",
        "flash_attn/ops/__init__.py": "",
        "flash_attn/ops/layer_norm.py": "import triton\n\n\n@triton.jit\ndef _kernel(x):\n    pass\n",
        "flash_attn/models/bert.py": "from flash_attn.bert_padding import pad_input\n"
                                     "from flash_attn.ops.layer_norm import _kernel\n",
    }
    write(tmp_path, files)
    result = scan_paths([tmp_path], PACK, jobs=1, use_cache=False)
    assert [(f.code, f.span.line) for f in result.findings if f.path == "flash_attn/models/bert.py"] == [("NM725", 2)]
