// Fused bias + GELU (tanh approximation): y = gelu(x + bias).
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include "fused_gelu_kernel.cuh"

namespace fastblocks {

template <typename scalar_t>
__global__ void bias_gelu_fwd_kernel(const scalar_t* __restrict__ x,
                                     const scalar_t* __restrict__ bias,
                                     scalar_t* __restrict__ y,
                                     int64_t n, int64_t hidden) {
  FB_KERNEL_LOOP(i, n) {
    const float v = static_cast<float>(x[i]) + static_cast<float>(bias[i % hidden]);
    y[i] = static_cast<scalar_t>(gelu_tanh_fwd(v));
  }
}

template <typename scalar_t>
__global__ void bias_gelu_bwd_kernel(const scalar_t* __restrict__ dy,
                                     const scalar_t* __restrict__ x,
                                     const scalar_t* __restrict__ bias,
                                     scalar_t* __restrict__ dx,
                                     int64_t n, int64_t hidden) {
  FB_KERNEL_LOOP(i, n) {
    const float v = static_cast<float>(x[i]) + static_cast<float>(bias[i % hidden]);
    dx[i] = static_cast<scalar_t>(gelu_tanh_bwd(static_cast<float>(dy[i]), v));
  }
}

static inline int num_blocks(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<int>(std::min<int64_t>(blocks, 65535));
}

at::Tensor bias_gelu_forward_cuda(const at::Tensor& x, const at::Tensor& bias) {
  const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
  auto y = at::empty_like(x);
  const int64_t n = x.numel();
  const int64_t hidden = bias.numel();
  constexpr int threads = 256;
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16,
      x.scalar_type(), "bias_gelu_forward_cuda", [&] {
        bias_gelu_fwd_kernel<scalar_t><<<num_blocks(n, threads), threads, 0, stream>>>(
            x.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n, hidden);
      });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

at::Tensor bias_gelu_backward_cuda(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& bias) {
  const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
  auto dx = at::empty_like(x);
  const int64_t n = x.numel();
  const int64_t hidden = bias.numel();
  constexpr int threads = 256;
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16,
      x.scalar_type(), "bias_gelu_backward_cuda", [&] {
        bias_gelu_bwd_kernel<scalar_t><<<num_blocks(n, threads), threads, 0, stream>>>(
            dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(),
            dx.data_ptr<scalar_t>(), n, hidden);
      });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return dx;
}

}  // namespace fastblocks
