"""Uses of names imported from a project's own Triton/CUDA wrapper module (issue 12): the import
line names the module (`from .triton_ops import fused_add`) and was reported already; each use of
the imported names is a CUDA site too. The code is written for these tests, shaped like model
files that call their repository's fused kernels."""

from __future__ import annotations

import pytest

from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan import analyze, parse

PACK = load_pack()

MODEL = '''
import torch
from torch import nn

from .kernels.triton_ops import fused_add_rmsnorm, rotary as apply_rope  # <-
from .ops_cuda import gather_points  # <-
from .layers import MLP
from tritonclient.http import InferenceServerClient


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.mlp = MLP(dim)

    def forward(self, x, residual, freqs, idx):
        h, residual = fused_add_rmsnorm(x, residual, self.weight, 1e-6)  # <-
        h = apply_rope(h, freqs)  # <-
        return self.mlp(gather_points(h, idx)), residual  # <-


def reference(fused_add_rmsnorm, x):
    return fused_add_rmsnorm(x)


def remote(url: str):
    return InferenceServerClient(url)
'''


def flagged_lines(source: str) -> list[int]:
    return sorted({f.span.line for f in analyze.analyze_source(source, "model.py", PACK)
                   if not f.code.startswith("NM8")})


def marked(source: str) -> list[int]:
    return [i for i, line in enumerate(source.split("\n"), 1) if line.rstrip().endswith("# <-")]


@pytest.mark.parametrize("partial", ["1", "0"])
def test_uses_of_names_from_a_cuda_wrapper_module_are_flagged(partial: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A parameter of the same name is not the import; the Triton Inference Server client is not Triton.
    monkeypatch.setenv(parse.ENV, partial)
    assert flagged_lines(MODEL) == marked(MODEL)


def test_the_finding_names_the_wrapper_module() -> None:
    line = marked(MODEL)[2]
    (finding,) = [f for f in analyze.analyze_source(MODEL, "model.py", PACK) if f.span.line == line]
    assert finding.symbol == "fused_add_rmsnorm (= .kernels.triton_ops.fused_add_rmsnorm)"
