"""Row-wise softmax as a Triton kernel (one program per row)."""
import torch

try:
    import triton
    import triton.language as tl

    HAS_TRITON = True
except ImportError:
    HAS_TRITON = False


if HAS_TRITON:

    @triton.jit
    def _softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        den = tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)

    def _triton_softmax(x):
        shape = x.shape
        x2d = x.reshape(-1, shape[-1]).contiguous()
        n_rows, n_cols = x2d.shape
        out = torch.empty_like(x2d, dtype=torch.float32)
        block = triton.next_power_of_2(n_cols)
        num_warps = 4 if block < 2048 else 8
        _softmax_kernel[(n_rows,)](out, x2d, x2d.stride(0), out.stride(0), n_cols,
                                   BLOCK_SIZE=block, num_warps=num_warps)
        return out.view(shape)


def softmax(x):
    """Float32 softmax over the last dimension (no autograd)."""
    if HAS_TRITON and x.is_cuda and not x.requires_grad:
        return _triton_softmax(x)
    return torch.softmax(x.float(), dim=-1)
