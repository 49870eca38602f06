"""A project's own module that runs Triton or CUDA kernels, imported under an ordinary name
(issue 12: "a repository's own module that wraps triton/CUDA kernels"): NM725 marks each import
of it, whether or not the importing file holds a CUDA word, and follows changes to the kernel
module through the cache. The projects are written for these tests, shaped like fused-kernel
libraries (a `kernels`/`ops` module beside the model code)."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

from neuron_migrate.scan.engine import scan_paths
from neuron_migrate.scan.matchers.project_modules import import_sites, targets, top_level
from tests.scan.conftest import PACK, marked, sites, write

TRITON_OPS = """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pass


    def fused_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        _add_kernel[(1,)](x, y, out, x.numel(), BLOCK=1024)
        return out
    """

PROJECT = {
    "src/fastlm/__init__.py": "",
    "src/fastlm/ops.py": TRITON_OPS,
    "src/fastlm/helpers.py": "def scale(x, s):\n    return x * s\n",
    "src/fastlm/model.py": """
        import torch.nn as nn

        from .ops import fused_add  # <-
        from . import ops  # <-
        from .helpers import scale
        from fastlm.ops import fused_add as add2  # <-
        import fastlm.ops as fops  # <-
        from fastlm import (  # <-
            helpers,
            ops as kernels,
        )


        class Block(nn.Module):
            def forward(self, x):
                return scale(fused_add(x, x), 0.5)
        """,
    "src/fastlm/layers/norm.py": """
        from ..ops import fused_add  # <-
        from ..helpers import scale
        """,
    "tests/test_model.py": """
        from fastlm.ops import fused_add  # <-
        from .conftest import fixture
        import fastlm.helpers
        """,
    "train.py": """
        import fastlm.ops  # <-
        from fastlm.model import Block
        """,
}


def nm725(root: Path, **kw: object) -> set[tuple[str, int]]:
    return sites(root, "NM725", **kw)


def test_imports_of_a_kernel_module_are_reported_and_plain_modules_are_not(tmp_path: Path) -> None:
    write(tmp_path, PROJECT)
    # tests/ and train.py import the package by its top-level name (under src/).
    assert nm725(tmp_path, use_cache=False) == marked(PROJECT)


def test_the_kernel_modules_own_findings_stay_and_the_import_message_names_the_statement(tmp_path: Path) -> None:
    write(tmp_path, PROJECT)
    result = scan_paths([tmp_path], PACK, jobs=1, use_cache=False)
    codes = {f.code for f in result.findings if f.path == "src/fastlm/ops.py"}
    assert {"NM704", "NM705"} <= codes and "NM725" not in codes
    first = next(f for f in result.findings if f.code == "NM725" and f.span.line == 3)
    assert first.symbol == "from .ops import fused_add" and first.fix_class.value == "manual"
    assert first.message.startswith("`from .ops import fused_add` loads a module of this project")


def test_a_cached_importer_follows_its_kernel_module(tmp_path: Path) -> None:
    """The importer's cache entry stays valid when the imported module changes: which modules are
    kernel modules is decided after every file's findings are known."""
    write(tmp_path, PROJECT)
    cache = tmp_path / ".cache"
    expected = marked(PROJECT)
    assert nm725(tmp_path, cache_dir=cache) == expected
    assert nm725(tmp_path, cache_dir=cache) == expected  # served from the cache
    ops = tmp_path / "src/fastlm/ops.py"
    time.sleep(0.01)
    ops.write_text("def fused_add(x, y):\n    return x + y\n", encoding="utf-8")  # ported to PyTorch
    os.utime(ops)
    assert nm725(tmp_path, cache_dir=cache) == set()
    write(tmp_path, {"src/fastlm/ops.py": TRITON_OPS})
    assert nm725(tmp_path, cache_dir=cache) == expected


def test_an_extension_wrapper_counts_where_the_build_compiles_cuda(tmp_path: Path) -> None:
    files = {
        "setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"
                    "ext = CUDAExtension('boxops._C', ['boxops/csrc/nms.cu'])\n",
        "boxops/__init__.py": "",
        "boxops/nms.py": "from . import _C\n\ndef nms(b, s, t):\n    return _C.nms(b, s, t)\n",
        "boxops/detect.py": "from .nms import nms  # <-\n",
    }
    write(tmp_path, files)
    assert nm725(tmp_path, use_cache=False) == marked(files)
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='boxops')\n")  # no CUDA build
    assert nm725(tmp_path, use_cache=False) == set()


def test_import_sites_and_their_target_files() -> None:
    text = textwrap.dedent("""
        '''Usage:

        from .ops import example_in_a_docstring
        '''
        import os
        from .ops import (a,
                          b,  # two lines
        )
        x = 1; from .ops import c
        if True:
            from pkg.sub import d as e
        import pkg.ops, json
        from pkgx import f
        """)
    sites = [(line, statement) for line, _, _, statement, _ in import_sites(text, "pkg/model.py")]
    # A docstring line that reads like an import is a candidate too (kept only if it names a
    # kernel module); a statement after `;` is not seen.
    assert sites == [(4, "from .ops import example_in_a_docstring"), (7, "from .ops import (a, b,)"),
                     (12, "from pkg.sub import d as e"), (13, "import pkg.ops, json")]
    assert targets("pkg/model.py", "from .ops import (a, b)") == [
        "pkg/ops.py", "pkg/ops/__init__.py", "pkg/ops/a.py", "pkg/ops/a/__init__.py", "pkg/ops/b.py", "pkg/ops/b/__init__.py"]
    assert targets("src/pkg/sub/m.py", "from ... import ops")[:2] == ["src.py", "src/__init__.py"]
    # The file's own package is where it sits; another name may be a top-level one, at the root or in src/.
    assert targets("src/pkg/sub/m.py", "import pkg.ops, json") == [
        "src/pkg/ops.py", "src/pkg/ops/__init__.py", "json.py", "json/__init__.py", "src/json.py", "src/json/__init__.py"]
    # Any other name is the project's only if such a file is in it (never an installed package's).
    assert targets("pkg/model.py", "from os import path")[:2] == ["os.py", "os/__init__.py"]
    assert targets("pkg/model.py", "not an import") == []
    # Knowing the packages: a subpackage is on no import path (`import triton` in `pkg/kernel/triton/`
    # is the library), a directory above the file that is no package is (a project scanned from its parent).
    packages = {"proj/pkg", "proj/pkg/kernel", "proj/pkg/kernel/triton"}.__contains__
    assert targets("proj/pkg/kernel/triton/rms.py", "import triton", packages) == [
        "proj/triton.py", "proj/triton/__init__.py", "triton.py", "triton/__init__.py", "src/triton.py", "src/triton/__init__.py"]
    assert targets("proj/tests/test_rms.py", "from pkg.kernel import triton", packages)[:2] == [
        "proj/tests/pkg/kernel.py", "proj/tests/pkg/kernel/__init__.py"]
    assert "proj/pkg/kernel/triton/__init__.py" in targets("proj/tests/test_rms.py", "from pkg.kernel import triton", packages)


def test_a_package_whose_init_defines_the_kernels_is_reached_by_name_and_by_dots(tmp_path: Path) -> None:
    files = {
        "lib/__init__.py": "",
        "lib/kern/__init__.py": TRITON_OPS,
        "lib/kern/api.py": "from . import fused_add  # <-\nfrom .. import kern  # <-\n",
        "lib/use.py": "from .kern import fused_add  # <-\nfrom . import kern  # <-\nfrom .kernels import x\n",
    }
    write(tmp_path, files)
    assert nm725(tmp_path, use_cache=False) == marked(files)


def test_a_subpackage_named_like_a_library_is_not_what_an_absolute_import_loads(tmp_path: Path) -> None:
    """ColossalAI's `colossalai/kernel/triton/*.py` import the library (`import triton`), not their
    own package, whose importers are still reported."""
    files = {
        "mypkg/__init__.py": "",
        "mypkg/kernel/__init__.py": "",
        "mypkg/kernel/triton/__init__.py": "from .rms import rms_norm  # <-\n",
        "mypkg/kernel/triton/rms.py": TRITON_OPS.replace("def fused_add", "def rms_norm"),
        "tests/test_rms.py": "from mypkg.kernel.triton import rms_norm  # <-\n",
    }
    write(tmp_path, files)
    assert nm725(tmp_path, use_cache=False) == marked(files)


def test_top_level_names_are_the_roots_and_srcs_packages_and_modules(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/__init__.py": "", "notes/readme.py": "", "script.py": "", "bad-name.py": "",
                     "src/lib/__init__.py": "", "src/tool.py": ""})
    assert top_level(str(tmp_path)) == ("lib", "pkg", "script", "tool")


def test_crlf_files_give_the_line_without_its_carriage_return(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/__init__.py": "", "pkg/ops.py": TRITON_OPS})
    (tmp_path / "pkg" / "use.py").write_bytes(b"import os\r\nfrom .ops import fused_add\r\n")
    result = scan_paths([tmp_path], PACK, jobs=1, use_cache=False)
    (found,) = [f for f in result.findings if f.code == "NM725"]
    assert (found.path, found.span.line, found.source_line) == ("pkg/use.py", 2, "from .ops import fused_add")


def test_a_package_that_re_exports_its_kernel_module_is_one_a_package_gathering_it_is_not(tmp_path: Path) -> None:
    """fairseq's `modules/dynamicconv_layer/__init__.py` (`from .dynamicconv_layer import
    DynamicconvLayer`, a module that loads the CUDA extension): importing the package loads the
    kernels. One step only: `modules/__init__.py`, which gathers that package with plain ones, is
    imported all over the project, and is no kernel module."""
    files = {
        "lib/__init__.py": "",
        "lib/modules/__init__.py": "from .dynconv import DynConv  # <-\nfrom .helpers import scale\n",
        "lib/modules/helpers.py": "def scale(x):\n    return x\n",
        "lib/modules/dynconv/__init__.py": "from .dynconv_layer import DynConv  # <-\n",
        "lib/modules/dynconv/dynconv_layer.py": TRITON_OPS,
        "lib/model.py": "from lib.modules.dynconv import DynConv  # <-\nfrom lib.modules import scale\nfrom .modules import helpers\n",
    }
    write(tmp_path, files)
    assert nm725(tmp_path, use_cache=False) == marked(files)
