// Tanh-approximation GELU and its derivative, shared by the forward and
// backward kernels.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

namespace fastblocks {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCoeff = 0.044715f;

__device__ __forceinline__ float gelu_tanh_fwd(float x) {
  const float inner = kSqrt2OverPi * (x + kCoeff * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

__device__ __forceinline__ float gelu_tanh_bwd(float dy, float x) {
  const float x2 = x * x;
  const float inner = kSqrt2OverPi * (x + kCoeff * x2 * x);
  const float t = tanhf(inner);
  const float dinner = kSqrt2OverPi * (1.0f + 3.0f * kCoeff * x2);
  return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner);
}

// Grid-stride loop helper.
#define FB_KERNEL_LOOP(i, n)                                   \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; \
       i < (n); i += (int64_t)blockDim.x * gridDim.x)

}  // namespace fastblocks
