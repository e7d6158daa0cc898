#include "kernels/cuda/layer_norm.h"

#include "kernels/cuda/common.cuh"

namespace sweep::kernels::cuda {

namespace {

constexpr int k_threads = 256;
constexpr int k_cols_per_thread = static_cast<int>(k_layer_norm_max_cols / k_threads);  // 32
constexpr int k_rows_per_block = 32;  // backward: rows a block sums dweight and dbias over

// The sum of `v` over the block (every thread gets it); `scratch`: k_threads / 32 floats.
__device__ float block_sum(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffff, v, offset);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // the scratch's previous use is over
  if (lane == 0) {
    scratch[warp] = v;
  }
  __syncthreads();
  float total = 0;
  for (int w = 0; w < k_threads / 32; ++w) {
    total += scratch[w];
  }
  return total;
}

template <typename Out>
__global__ void layer_norm_forward_rows(const float* x, const float* weight, const float* bias, Out* y, float* mean,
                                        float* rstd, int64_t cols, float eps) {
  __shared__ float scratch[k_threads / 32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;  // (cols,)
  float sum = 0;
  for (int64_t j = threadIdx.x; j < cols; j += k_threads) {
    sum += xr[j];
  }
  const float mu = block_sum(sum, scratch) / static_cast<float>(cols);
  float sq = 0;  // two passes: the variance of the centred values, as LibTorch's
  for (int64_t j = threadIdx.x; j < cols; j += k_threads) {
    const float d = xr[j] - mu;
    sq += d * d;
  }
  const float r = rsqrtf(block_sum(sq, scratch) / static_cast<float>(cols) + eps);
  for (int64_t j = threadIdx.x; j < cols; j += k_threads) {
    store(y + row * cols + j, (xr[j] - mu) * r * weight[j] + bias[j]);
  }
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = r;
  }
}

// A block takes k_rows_per_block rows: dx row by row (two block sums each), and its own sums of
// dweight and dbias per column in registers (thread t owns columns t, t + k_threads, …), added to
// the outputs once at the end.
template <typename Dy>
__global__ void layer_norm_backward_rows(const Dy* dy, const float* x, const float* weight, const float* mean,
                                         const float* rstd, float* dx, float* dweight, float* dbias, int64_t rows,
                                         int64_t cols) {
  __shared__ float scratch[k_threads / 32];
  float dw[k_cols_per_thread], db[k_cols_per_thread];
  for (int k = 0; k < k_cols_per_thread; ++k) {
    dw[k] = 0;
    db[k] = 0;
  }
  const int64_t first = static_cast<int64_t>(blockIdx.x) * k_rows_per_block;
  const int64_t last = first + k_rows_per_block < rows ? first + k_rows_per_block : rows;
  const float n = static_cast<float>(cols);
  for (int64_t row = first; row < last; ++row) {
    const float mu = mean[row], r = rstd[row];
    const Dy* g = dy + row * cols;
    const float* xr = x + row * cols;
    // dxhat = dy · w; dx = r · (dxhat − mean(dxhat) − xhat · mean(dxhat · xhat))
    float s1 = 0, s2 = 0;
    for (int64_t j = threadIdx.x; j < cols; j += k_threads) {
      const float dxhat = load(g + j) * weight[j];
      s1 += dxhat;
      s2 += dxhat * (xr[j] - mu) * r;
    }
    const float m1 = block_sum(s1, scratch) / n, m2 = block_sum(s2, scratch) / n;
    int k = 0;
    for (int64_t j = threadIdx.x; j < cols; j += k_threads, ++k) {
      const float xhat = (xr[j] - mu) * r, gj = load(g + j);
      dx[row * cols + j] = r * (gj * weight[j] - m1 - xhat * m2);
      dw[k] += gj * xhat;
      db[k] += gj;
    }
  }
  int k = 0;
  for (int64_t j = threadIdx.x; j < cols; j += k_threads, ++k) {
    atomicAdd(dweight + j, dw[k]);
    atomicAdd(dbias + j, db[k]);
  }
}

}  // namespace

const char* layer_norm_forward(const float* x, const float* weight, const float* bias, void* y, bool bf16_out,
                               float* mean, float* rstd, int64_t rows, int64_t cols, float eps, void* stream) {
  if (rows == 0) {
    return "";
  }
  const auto s = static_cast<cudaStream_t>(stream);
  const auto blocks = static_cast<unsigned>(rows);
  if (bf16_out) {
    layer_norm_forward_rows<<<blocks, k_threads, 0, s>>>(x, weight, bias, static_cast<__nv_bfloat16*>(y), mean, rstd,
                                                         cols, eps);
  } else {
    layer_norm_forward_rows<<<blocks, k_threads, 0, s>>>(x, weight, bias, static_cast<float*>(y), mean, rstd, cols, eps);
  }
  return launched();
}

const char* layer_norm_backward(const void* dy, bool bf16_dy, const float* x, const float* weight, const float* mean,
                                const float* rstd, float* dx, float* dweight, float* dbias, int64_t rows, int64_t cols,
                                void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  cudaMemsetAsync(dweight, 0, static_cast<size_t>(cols) * sizeof(float), s);
  cudaMemsetAsync(dbias, 0, static_cast<size_t>(cols) * sizeof(float), s);
  if (rows == 0) {
    return launched();
  }
  const auto blocks = static_cast<unsigned>((rows + k_rows_per_block - 1) / k_rows_per_block);
  if (bf16_dy) {
    layer_norm_backward_rows<<<blocks, k_threads, 0, s>>>(static_cast<const __nv_bfloat16*>(dy), x, weight, mean, rstd,
                                                          dx, dweight, dbias, rows, cols);
  } else {
    layer_norm_backward_rows<<<blocks, k_threads, 0, s>>>(static_cast<const float*>(dy), x, weight, mean, rstd, dx,
                                                          dweight, dbias, rows, cols);
  }
  return launched();
}

}  // namespace sweep::kernels::cuda
