"""Modules imported through a call (`scan.matchers.import_calls`): reported by the import rules
wherever the call is, and the name a module-level assignment gives the result resolves."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan.engine import scan_paths

PACK = load_pack()

# MONAI's and NeMo's shapes; the functions around them hold no CUDA word, so the partial parse
# leaves them out (at least four regions: scan.regions.MIN_REGIONS).
SOURCE = """\
import importlib

from monai.utils import optional_import
from nemo.utils.import_utils import safe_import_from

trt, trt_imported = optional_import("tensorrt")
yaml = importlib.import_module("yaml")
# importlib.import_module("apex") in a comment is no import


def first():
    return 1


def float8():
    Float8Tensor, have_te = safe_import_from("transformer_engine.pytorch.float8_tensor", "Float8Tensor")
    return Float8Tensor


def build(network):
    return trt.Logger(trt.Logger.WARNING), network


def lazily():
    return __import__("nvidia.dali", fromlist=["fn"])


def last():
    return yaml.safe_load("a: 1")


def wrapped():
    return importlib.import_module(
        "mamba_ssm.ops.triton.ssd_combined")


def test_skip():
    import pytest
    return pytest.importorskip("liger_kernel")
"""


@pytest.mark.parametrize("partial", ["0", "1"])
def test_import_calls_and_the_names_they_bind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partial: str) -> None:
    monkeypatch.setenv("NEURON_MIGRATE_PARTIAL_PARSE", partial)
    (tmp_path / "m.py").write_text(SOURCE)
    result = scan_paths([tmp_path], PACK, use_cache=False, jobs=1)
    found = [(f.span.line, f.code, f.symbol) for fr in result.files for f in fr.findings if not f.code.startswith("NM8")]
    assert found == [
        (6, "NM714", "tensorrt"),
        (16, "NM719", "transformer_engine.pytorch.float8_tensor"),
        (21, "NM720", "tensorrt.Logger"),
        (21, "NM720", "tensorrt.Logger.WARNING"),
        (25, "NM715", "nvidia.dali"),
        (34, "NM730", "mamba_ssm.ops.triton.ssd_combined"),  # the name on the call's next line
    ]


def test_monai_optional_imports_of_cuda_only_modules(tmp_path: Path) -> None:
    (tmp_path / "reader.py").write_text(
        "from monai.utils import optional_import\n"
        "\n"
        'kvikio, has_kvikio = optional_import("kvikio")\n'
        'skimage, has_cucim = optional_import("cucim.skimage")\n'
        '_nvtx, _ = optional_import("torch._C._nvtx", descriptor="NVTX is not installed.")\n'
        'polygraphy, _ = optional_import("polygraphy.backend.trt")\n'
        'nib, _ = optional_import("nibabel")\n')
    result = scan_paths([tmp_path], PACK, use_cache=False, jobs=1)
    assert [(f.span.line, f.code) for fr in result.files for f in fr.findings] == [
        (3, "NM730"), (4, "NM730"), (5, "NM213"), (6, "NM714")]


def test_probes_of_whether_a_cuda_only_module_is_installed(tmp_path: Path) -> None:
    """Determined's `find_spec("apex")` and Transformers' `_is_package_available("apex")` choose the
    code that uses Apex; a probe of a portable package is no site."""
    (tmp_path / "context.py").write_text(
        "import importlib.util as importutil\n"
        "from transformers.utils.import_utils import _is_package_available\n"
        "from lightning_utilities.core.imports import RequirementCache, module_available\n"
        "\n"
        'apex_available = importutil.find_spec("apex") is not None\n'
        'HAS_APEX = _is_package_available("apex")\n'
        '_BNB = RequirementCache("bitsandbytes")\n'
        'has_numpy = module_available("numpy") and importutil.find_spec("yaml")\n'
        '"""`importutil.find_spec("flash_attn.x")` imports flash_attn: quoted code in prose."""\n')
    result = scan_paths([tmp_path], PACK, use_cache=False, jobs=1)
    assert [(f.span.line, f.code, f.symbol) for fr in result.files for f in fr.findings] == [
        (5, "NM706", "apex"), (6, "NM706", "apex"), (7, "NM709", "bitsandbytes")]


def test_a_test_of_whether_a_cuda_only_module_was_imported(tmp_path: Path) -> None:
    """Transformer-XL tests `'apex' in sys.modules` before its Apex fp16 path; a look-up in
    `sys.modules` of a portable module is no site."""
    (tmp_path / "train.py").write_text(
        "import sys\n"
        "\n"
        "def setup(args):\n"
        "    if args.fp16 and args.amp == 'apex' and 'apex' not in sys.modules:\n"
        "        raise RuntimeError('no apex')\n"
        "    fa = sys.modules.get('flash_attn')\n"
        "    return fa, sys.modules['numpy'], 'torch' in sys.modules\n")
    result = scan_paths([tmp_path], PACK, use_cache=False, jobs=1)
    assert [(f.span.line, f.span.col, f.code, f.symbol) for fr in result.files for f in fr.findings] == [
        (4, 44, "NM706", "apex"), (6, 25, "NM707", "flash_attn")]


def test_an_optional_import_helper_spelled_in_camel_case(tmp_path: Path) -> None:
    """physicsnemo's `te = OptionalImport("transformer_engine.pytorch")`: the module is reported
    and the name it binds resolves (`te.LayerNorm`, `dali.Pipeline`), as with `optional_import`."""
    (tmp_path / "layers.py").write_text(
        "import torch\n"
        "from physicsnemo.core.version_check import OptionalImport\n"
        "\n"
        'te = OptionalImport("transformer_engine.pytorch")\n'
        'dali = OptionalImport("nvidia.dali")\n'
        'np = OptionalImport("numpy")\n'
        "\n"
        "def norm(n, use_te):\n"
        "    return te.LayerNorm(n) if use_te else torch.nn.LayerNorm(n)\n"
        "\n"
        "def pipe():\n"
        "    return dali.Pipeline(batch_size=2), np.zeros(2)\n")
    result = scan_paths([tmp_path], PACK, use_cache=False, jobs=1)
    assert [(f.span.line, f.code, f.symbol) for fr in result.files for f in fr.findings] == [
        (4, "NM719", "transformer_engine.pytorch"), (5, "NM715", "nvidia.dali"),
        (9, "NM720", "transformer_engine.pytorch.LayerNorm"), (12, "NM720", "nvidia.dali.Pipeline")]
