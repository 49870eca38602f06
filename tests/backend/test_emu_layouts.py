"""Strided layouts on the device: composites that view a permuted input (GroupNorm, which breaks
diffusers' UNet2DModel), and memory formats under torch.compile as on the real backend (allocation and
clone honour channels_last; a cast to channels_last raises only when it runs on the device)."""

from __future__ import annotations

from typing import Any

import pytest
from _emulated import Pending

CODE = """
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.randn(2, 4, 4, 8).permute(0, 3, 1, 2)          # NCHW view of NHWC data: channels_last strides
gn = torch.nn.GroupNorm(2, 8)
xc = x.clone().requires_grad_()
ref = gn(xc)
ref.square().sum().backward()
xn = x.to("neuron").requires_grad_()
gn_n = torch.nn.GroupNorm(2, 8)
gn_n.load_state_dict(gn.state_dict())
out = gn_n.to("neuron")(xn)
out.square().sum().backward()
result["group_norm"] = [(out.detach().cpu() - ref.detach()).abs().max().item(),
                        (xn.grad.cpu() - xc.grad).abs().max().item(),
                        (gn_n.weight.grad.cpu() - gn.weight.grad).abs().max().item()]
check("user_view", lambda: x.to("neuron").view(2, 2, -1).shape)   # CPU refuses this view too

def up(t):
    return F.interpolate(t, scale_factor=2.0, mode="nearest")
compiled = torch.compile(up, backend="neuron")
check("compiled_interpolate", lambda: (compiled(x.to("neuron")).cpu() - up(x)).abs().max().item())
y = x.to("neuron")
check("empty_channels_last", lambda: torch.empty(2, 3, 4, 4, device="neuron",
                                                  memory_format=torch.channels_last).stride())
check("empty_like", lambda: torch.empty_like(y).stride())
check("clone_channels_last", lambda: y.contiguous().clone(memory_format=torch.channels_last).stride())
check("contiguous_channels_last", lambda: y.contiguous().contiguous(memory_format=torch.channels_last).stride())
check("to_channels_last", lambda: y.contiguous().to(memory_format=torch.channels_last).stride())
"""
RUN = Pending(CODE)


@pytest.fixture(scope="module")
def r() -> dict[str, Any]:
    return RUN.wait().result


def test_group_norm_on_a_permuted_input_matches_cpu(r: dict[str, Any]) -> None:
    # The device runs torch's composite (batch_norm over a view) where the CPU has a fused kernel:
    # the same float32 sums in another order (the weight gradient sums 256 products).
    out, grad_in, grad_w = r["group_norm"]
    assert out < 1e-5 and grad_in < 1e-5 and grad_w < 1e-4


def test_a_user_view_that_cpu_refuses_is_still_refused(r: dict[str, Any]) -> None:
    assert r["user_view"]["error"] == "RuntimeError"
    assert "view size is not compatible" in r["user_view"]["message"]


def test_compiled_interpolate_of_a_channels_last_strided_tensor(r: dict[str, Any]) -> None:
    assert r["compiled_interpolate"] == 0.0


def test_memory_formats_follow_the_real_backend(r: dict[str, Any]) -> None:
    assert r["empty_channels_last"] == [48, 1, 12, 3]
    assert r["empty_like"] == [128, 1, 32, 8]
    assert r["clone_channels_last"] == [128, 1, 32, 8]
    for cast in ("contiguous_channels_last", "to_channels_last"):
        assert r[cast]["error"] == "RuntimeError"
        assert "contiguous or preserve memory format" in r[cast]["message"]
