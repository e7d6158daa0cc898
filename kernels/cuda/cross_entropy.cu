#include "kernels/cuda/cross_entropy.h"

#include "kernels/cuda/common.cuh"

#include <cmath>

namespace sweep::kernels::cuda {

namespace {

constexpr int k_threads = 512;

// (max, Σ exp(x − max)) of two parts of a row, as one.
__device__ void combine(float& m, float& s, float m2, float s2) {
  const float top = fmaxf(m, m2);
  if (top == -INFINITY) {
    return;  // both empty
  }
  s = s * __expf(m - top) + s2 * __expf(m2 - top);
  m = top;
}

template <typename T>
__global__ void cross_entropy_rows(T* logits, const int64_t* targets, int64_t vocab, float grad_scale, float softcap,
                                   float* row_losses) {
  __shared__ float warp_m[k_threads / 32], warp_s[k_threads / 32];
  __shared__ float row_lse, target_logit;
  T* x = logits + static_cast<int64_t>(blockIdx.x) * vocab;  // (vocab,)
  const int64_t target = targets[blockIdx.x];
  const bool capped = softcap > 0;
  auto value = [&](int64_t i) {
    const float v = load(x + i);
    return capped ? softcap * tanhf(v / softcap) : v;
  };
  // ---- pass 1: each thread's online (max, sum of exp), then the warp's, then the block's ----
  float m = -INFINITY, s = 0;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    combine(m, s, value(i), 1.0f);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    combine(m, s, __shfl_xor_sync(0xffffffff, m, offset), __shfl_xor_sync(0xffffffff, s, offset));
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    warp_m[warp] = m;
    warp_s[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float bm = -INFINITY, bs = 0;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) {
      combine(bm, bs, warp_m[w], warp_s[w]);
    }
    row_lse = bm + logf(bs);
    const bool valid = target >= 0 && target < vocab;
    target_logit = valid ? value(target) : NAN;
    row_losses[blockIdx.x] = row_lse - target_logit;
  }
  __syncthreads();  // the target's logit is read before pass 2 writes over it
  if (grad_scale == 0) {
    return;
  }
  // ---- pass 2: the gradient over the logits: (softmax − one-hot) × grad_scale, through the cap ----
  const float lse = row_lse;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float raw = load(x + i);
    const float t = capped ? tanhf(raw / softcap) : 0.0f;
    const float v = capped ? softcap * t : raw;
    float g = (__expf(v - lse) - (i == target ? 1.0f : 0.0f)) * grad_scale;
    if (capped) {
      g *= 1.0f - t * t;  // d(c·tanh(x/c))/dx
    }
    store(x + i, g);
  }
}

}  // namespace

const char* cross_entropy_inplace(bool bf16, void* logits, const int64_t* targets, int64_t rows, int64_t vocab,
                                  float grad_scale, float softcap, float* row_losses, void* stream) {
  if (rows == 0) {
    return "";
  }
  const auto s = static_cast<cudaStream_t>(stream);
  if (bf16) {
    cross_entropy_rows<<<static_cast<unsigned>(rows), k_threads, 0, s>>>(static_cast<__nv_bfloat16*>(logits), targets, vocab,
                                                                         grad_scale, softcap, row_losses);
  } else {
    cross_entropy_rows<<<static_cast<unsigned>(rows), k_threads, 0, s>>>(static_cast<float*>(logits), targets, vocab,
                                                                         grad_scale, softcap, row_losses);
  }
  return launched();
}

}  // namespace sweep::kernels::cuda
