"""NM726: imports of the compiled modules a project's build script declares as CUDA extensions
(`scan.matchers.extensions`), whatever the module is called."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan.engine import scan_paths
from neuron_migrate.scan.matchers.extensions import build_script, declared_extensions, extension_findings

PACK = load_pack()
RULE = PACK.rules["NM726"]
BUILDERS = frozenset({"CUDAExtension"})

# The shape of flash-attention's csrc/fused_dense_lib/setup.py: one extension per build script.
NESTED_SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name='fused_dense_lib',
    ext_modules=[
        CUDAExtension(
            name='fused_dense_lib',
            sources=['fused_dense.cpp', 'fused_dense_cuda.cu'],
            extra_compile_args={'cxx': ['-O3'], 'nvcc': ['-O3']},
        )
    ],
    cmdclass={'build_ext': BuildExtension},
)
"""


def test_declared_names_are_string_literals_or_module_constants() -> None:
    source = """\
import torch.utils.cpp_extension as ce
from torch.utils.cpp_extension import CppExtension, CUDAExtension
EXT = "rotary_emb"
setup(ext_modules=[
    CUDAExtension(name="fused_dense_lib", sources=["a.cu"]),
    CUDAExtension("pkg._ext", ["x.cpp", "x.cu"]),
    ce.CUDAExtension(EXT, ["r.cu"]),
    CUDAExtension(sources=["late.cu"], name="late_name"),
    CUDAExtension(name=f"{PACKAGE}.computed"),
    CUDAExtension(f"nerfacc.csrc", ["c.cu"]),
    CUDAExtension(name=unknown_variable),
    CUDAExtension("pkg._C", ["c.cu"]),
    CUDAExtension("not a module", ["c.cu"]),
    CppExtension("cpu_only", ["c.cpp"]),
])
"""
    assert declared_extensions([("setup.py", source)], BUILDERS) == ("fused_dense_lib", "late_name", "nerfacc.csrc",
                                                                     "pkg._ext", "rotary_emb")


# OpenMMLab's helper, as in basicsr's and OpenPCDet's setup.py: it builds the CUDAExtension.
MAKE_CUDA_EXT = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension


def make_cuda_ext(name, module, sources, sources_cuda=None):
    extension = CppExtension
    if sources_cuda:
        extension = CUDAExtension
        sources = [*sources, *sources_cuda]
    return extension(name=f'{module}.{name}', sources=sources)


setup(name='basicsr', ext_modules=[
    make_cuda_ext(name='deform_conv_ext', module='basicsr.ops.dcn', sources=['src/deform_conv_ext.cpp'],
                  sources_cuda=['src/deform_conv_cuda.cpp', 'src/deform_conv_cuda_kernel.cu']),
    make_cuda_ext('upfirdn2d_ext', 'basicsr.ops.upfirdn2d', ['src/upfirdn2d.cpp']),
], cmdclass={'build_ext': BuildExtension})
"""


def test_a_build_script_function_that_calls_a_builder_declares_through_its_calls(tmp_path: Path) -> None:
    assert declared_extensions([("setup.py", MAKE_CUDA_EXT)], BUILDERS) == ("basicsr.ops.dcn.deform_conv_ext",
                                                                 "basicsr.ops.upfirdn2d.upfirdn2d_ext")
    _project(tmp_path, {
        "setup.py": MAKE_CUDA_EXT,
        "basicsr/__init__.py": "",
        "basicsr/ops/dcn/deform_conv.py": "import torch\nfrom . import deform_conv_ext\n",
    })
    assert _nm726(tmp_path, use_cache=False) == [("basicsr/ops/dcn/deform_conv.py", 2, "basicsr.ops.dcn.deform_conv_ext")]


def test_a_builder_called_through_the_script_s_own_name(tmp_path: Path) -> None:
    """Deformable-DETR's models/ops/setup.py picks the builder into a variable, then calls it;
    its ms_deform_attn_func.py imports the module under an alias and calls the kernels through it."""
    setup = (
        "import torch\n"
        "from torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension\n\n"
        "def get_extensions():\n"
        "    extension = CppExtension\n"
        "    if torch.cuda.is_available() and CUDA_HOME is not None:\n"
        "        extension = CUDAExtension\n"
        "    return [extension('MultiScaleDeformableAttention', ['src/vision.cpp'])]\n")
    assert declared_extensions([("models/ops/setup.py", setup)], BUILDERS) == (
        "MultiScaleDeformableAttention", "models.ops.MultiScaleDeformableAttention")
    _project(tmp_path, {
        "models/ops/setup.py": setup,
        "models/ops/functions/ms_deform_attn_func.py": "import torch\nimport MultiScaleDeformableAttention as MSDA\n",
    })
    assert _nm726(tmp_path, use_cache=False) == [
        ("models/ops/functions/ms_deform_attn_func.py", 2, "MultiScaleDeformableAttention")]


def test_a_nested_build_script_declares_a_module_of_its_directory(tmp_path: Path) -> None:
    """EasyOCR's DBNet: `ops/dcn/setup.py` builds `deform_conv_cuda` in place, and
    `ops/dcn/functions/deform_conv.py` imports it as `from .. import deform_conv_cuda`."""
    setup = "from torch.utils.cpp_extension import CUDAExtension\nsetup(ext_modules=[CUDAExtension('deform_conv_cuda', ['k.cu'])])\n"
    assert declared_extensions([("ops/dcn/setup.py", setup)], BUILDERS) == ("deform_conv_cuda", "ops.dcn.deform_conv_cuda")
    assert declared_extensions([("my-ops/setup.py", setup)], BUILDERS) == ("deform_conv_cuda",)  # no package path
    _project(tmp_path, {
        "ops/dcn/setup.py": setup,
        "ops/dcn/functions/deform_conv.py": "def f():\n    from .. import deform_conv_cuda\n    return deform_conv_cuda\n",
        "other/functions/g.py": "from .. import deform_conv_cuda\n",
    })
    assert _nm726(tmp_path, use_cache=False) == [("ops/dcn/functions/deform_conv.py", 2, "ops.dcn.deform_conv_cuda")]


def test_a_cpp_extension_with_cuda_sources_declares_a_cuda_extension() -> None:
    """fairseq's `cpp_extension.CppExtension("fairseq.libnat_cuda", sources=[... ".cu", ...])`:
    BuildExtension compiles the `.cu` files with nvcc. One with only C++ sources declares nothing."""
    source = """\
from torch.utils import cpp_extension
setup(ext_modules=[
    cpp_extension.CppExtension("fairseq.libnat", sources=["edit_dist.cpp"]),
    cpp_extension.CppExtension("fairseq.libnat_cuda", sources=["edit_dist.cu", "binding.cpp"]),
    cpp_extension.CppExtension("alignment_train_cuda_binding", ["kernel.cuh", "binding.cpp"]),
])
"""
    assert declared_extensions([("setup.py", source)], BUILDERS) == ("alignment_train_cuda_binding", "fairseq.libnat_cuda")


def test_a_build_script_that_does_not_parse_declares_nothing() -> None:
    assert declared_extensions([("setup.py", "CUDAExtension(name='x'\n")], BUILDERS) == ()
    assert declared_extensions([("setup.py", "setup(ext_modules=[CppExtension('x', [])])\n")], BUILDERS) == ()


@pytest.mark.parametrize(("rel", "expected"), [
    ("setup.py", True), ("csrc/layer_norm/setup.py", True), ("setup_cuda.py", True),
    ("setuptools_helper.py", False), ("pkg/setup.txt", False), ("build.py", False),
])
def test_build_scripts_are_setup_files_at_any_depth(rel: str, expected: bool) -> None:
    assert build_script(rel) is expected


EXTENSIONS = ("fused_dense_lib", "pkg._ext")


@pytest.mark.parametrize(("rel", "statement", "symbol"), [
    ("a/b.py", "import fused_dense_lib as fused_dense_cuda", "fused_dense_lib"),
    ("a/b.py", "    import fused_dense_lib", "fused_dense_lib"),  # inside a try: or a function
    ("x.py", "from pkg import _ext", "pkg._ext"),
    ("x.py", "from pkg._ext import nms, roi_align", "pkg._ext"),
    ("pkg/ops.py", "from . import _ext", "pkg._ext"),
    ("src/pkg/ops.py", "from ._ext import nms", "pkg._ext"),  # the scan root above the package
    ("ops.py", "from . import _ext", "pkg._ext"),  # the scan root is the package itself
    ("pkg/sub/ops.py", "from .. import _ext", "pkg._ext"),
    ("a/b.py", "from fused_dense_lib import linear_bias_forward", "fused_dense_lib"),
    # not a declared module
    ("a/b.py", "import fused_dense", None),
    ("a/b.py", "import fused_dense_lib_extra", None),
    ("x.py", "from other import _ext", None),
    ("other/ops.py", "from .sub import _ext", None),
    ("pkg/ops.py", "from . import fused_dense_lib", None),  # a relative import never reaches a top-level module
    ("pkg/ops.py", "from .kernels import fused_add", None),
])
def test_imports_of_declared_modules(rel: str, statement: str, symbol: str | None) -> None:
    text = f"import torch\n{statement}\n"
    found = extension_findings(text, rel, [RULE], EXTENSIONS)
    assert [f.symbol for f in found] == ([symbol] if symbol else [])
    for f in found:
        assert (f.code, f.span.line, f.span.col, f.source_line) == ("NM726", 2, len(statement) - len(statement.lstrip()),
                                                                    statement)
        assert f.message == RULE.render_message(symbol or "")


def _project(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _nm726(root: Path, **kwargs: object) -> list[tuple[str, int, str]]:
    result = scan_paths([root], PACK, jobs=1, **kwargs)  # type: ignore[arg-type]
    return [(fr.path, f.span.line, f.symbol) for fr in result.files for f in fr.findings if f.code == "NM726"]


def test_a_nested_build_script_declares_the_module_the_package_imports(tmp_path: Path) -> None:
    """flash-attention: `csrc/fused_dense_lib/setup.py` builds it, `flash_attn/ops/fused_dense.py`
    imports it under a name that says nothing of CUDA; no other finding is on that line."""
    _project(tmp_path, {
        "csrc/fused_dense_lib/setup.py": NESTED_SETUP,
        "flash_attn/__init__.py": "",
        "flash_attn/ops/fused_dense.py": "import torch\nimport fused_dense_lib as fused_dense_cuda\n\n\n"
                                         "def linear(x, w):\n    return fused_dense_cuda.linear_bias_forward(x, w, None)\n",
    })
    assert _nm726(tmp_path, use_cache=False) == [("flash_attn/ops/fused_dense.py", 2, "fused_dense_lib")]
    result = scan_paths([tmp_path], PACK, use_cache=False, jobs=1)
    assert [(f.span.line, f.code) for fr in result.files if fr.path == "flash_attn/ops/fused_dense.py"
            for f in fr.findings if f.span.line == 2] == [(2, "NM726")]
    # the module is also a CUDA library by name (NM730/NM720 elsewhere), but here it is the project's own
    assert not [f for fr in result.files for f in fr.findings if f.code in ("NM720", "NM730")]


def test_an_in_place_build_is_named_from_its_package_wherever_the_scan_starts(tmp_path: Path) -> None:
    """EasyOCR's `easyocr/DBNet/assets/ops/dcn/setup.py` (only `dcn` is a package): the module is
    `dcn.deform_conv_cuda` whether the scan's root is the checkout or a directory above it."""
    _project(tmp_path, {
        "src/easyocr/easyocr/__init__.py": "",
        "src/easyocr/easyocr/ops/dcn/__init__.py": "",
        "src/easyocr/easyocr/ops/dcn/setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"
                                                "setup(ext_modules=[CUDAExtension('deform_conv_cuda', ['d.cu'])])\n",
        "src/easyocr/easyocr/ops/dcn/functions/deform_conv.py": "from .. import deform_conv_cuda\n",
    })
    inner = tmp_path / "src" / "easyocr"
    from_above = scan_paths([inner], PACK, jobs=1, use_cache=False, root=tmp_path)
    from_checkout = scan_paths([inner], PACK, jobs=1, use_cache=False, root=inner)
    assert [(fr.path, f.symbol) for fr in from_above.files for f in fr.findings if f.code == "NM726"] == [
        ("src/easyocr/easyocr/ops/dcn/functions/deform_conv.py", "dcn.deform_conv_cuda")]
    assert [(fr.path, f.symbol) for fr in from_checkout.files for f in fr.findings if f.code == "NM726"] == [
        ("easyocr/ops/dcn/functions/deform_conv.py", "dcn.deform_conv_cuda")]


def test_the_cuda_reference_rule_is_not_repeated_inside_the_import(tmp_path: Path) -> None:
    _project(tmp_path, {
        "setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"
                    "setup(ext_modules=[CUDAExtension('flash_attn_2_cuda', ['f.cu'])])\n",
        "pkg/iface.py": "import flash_attn_2_cuda as flash_attn_gpu\nimport other_cuda_ops\n",
    })
    result = scan_paths([tmp_path], PACK, use_cache=False, jobs=1)
    found = [(f.span.line, f.code) for fr in result.files if fr.path == "pkg/iface.py" for f in fr.findings]
    assert (1, "NM726") in found and (2, "NM290") in found
    assert [code for line, code in found if line == 1] == ["NM726"]


def test_without_a_declaration_the_import_is_not_reported(tmp_path: Path) -> None:
    _project(tmp_path, {
        "setup.py": "from setuptools import setup\nsetup(name='pkg')\n",
        "pkg/ops.py": "import fused_dense_lib\n",
    })
    assert _nm726(tmp_path, use_cache=False) == []


def test_a_changed_declaration_is_seen_by_a_cached_scan(tmp_path: Path) -> None:
    """The declared names are part of the cache key: the importer's cached entry does not hide it."""
    cache = tmp_path / "cache"
    root = tmp_path / "proj"
    _project(root, {"setup.py": NESTED_SETUP.replace("name='fused_dense_lib',\n            sources", "name='other_lib',\n            sources"),
                    "pkg/ops.py": "import fused_dense_lib\n"})
    assert _nm726(root, cache_dir=cache) == []
    (root / "setup.py").write_text(NESTED_SETUP)
    assert _nm726(root, cache_dir=cache) == [("pkg/ops.py", 1, "fused_dense_lib")]


def test_a_module_that_imports_a_declared_extension_is_a_kernel_module(tmp_path: Path) -> None:
    """mamba-ssm: `selective_scan_interface.py` imports the extension; the modules importing it
    (NM725) load that CUDA code too, under names that say nothing of CUDA."""
    _project(tmp_path, {
        "setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"
                    "setup(ext_modules=[CUDAExtension(name='selective_scan_ext', sources=['scan.cu'])])\n",
        "pkg/__init__.py": "",
        "pkg/ops/__init__.py": "",
        "pkg/ops/selective_scan_interface.py": "import selective_scan_ext\n\n\n"
                                               "def selective_scan_fn(u):\n    return selective_scan_ext.fwd(u)\n",
        "pkg/modules/mamba_simple.py": "from pkg.ops.selective_scan_interface import selective_scan_fn\n",
        "pkg/modules/plain.py": "from pkg.ops import helpers\n",
        "pkg/ops/helpers.py": "import torch\n",
    })
    result = scan_paths([tmp_path], PACK, use_cache=False, jobs=1)
    assert [(fr.path, f.span.line) for fr in result.files for f in fr.findings if f.code == "NM725"] == [
        ("pkg/modules/mamba_simple.py", 1)]
