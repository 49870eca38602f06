// Python bindings for the fused bias+GELU CUDA kernels.
#include <torch/extension.h>

namespace fastblocks {
at::Tensor bias_gelu_forward_cuda(const at::Tensor& x, const at::Tensor& bias);
at::Tensor bias_gelu_backward_cuda(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& bias);
}  // namespace fastblocks

#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) \
  CHECK_CUDA(x);       \
  CHECK_CONTIGUOUS(x)

at::Tensor bias_gelu_forward(const at::Tensor& x, const at::Tensor& bias) {
  CHECK_INPUT(x);
  CHECK_INPUT(bias);
  TORCH_CHECK(x.size(-1) == bias.numel(), "bias must match the last dimension of x");
  return fastblocks::bias_gelu_forward_cuda(x, bias);
}

at::Tensor bias_gelu_backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& bias) {
  CHECK_INPUT(dy);
  CHECK_INPUT(x);
  CHECK_INPUT(bias);
  return fastblocks::bias_gelu_backward_cuda(dy, x, bias);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &bias_gelu_forward, "fused bias + GELU forward (CUDA)");
  m.def("backward", &bias_gelu_backward, "fused bias + GELU backward (CUDA)");
}
