// The CUDA twin of kernels/layer_norm.h: LayerNorm over the last dimension of the fp32 residual
// stream, its output written in the dtype the next matmul takes (bf16 under autocast: no cast
// between them), fp32 statistics; and its backward (dx per row, dweight and dbias summed over the
// rows). Plain CUDA: this header and its .cu know nothing of LibTorch (kernels/layer_norm.cpp wraps them).
#pragma once

#include <cstdint>

namespace sweep::kernels::cuda {

// The most columns the kernels take (the rest go to the reference).
constexpr int64_t k_layer_norm_max_cols = 8192;

// x: rows × cols fp32; weight, bias: cols fp32; y: rows × cols (bf16 when `bf16_out`, else fp32);
// mean, rstd: rows fp32. `stream`: a cudaStream_t. Returns the launch's error ("" when none).
const char* layer_norm_forward(const float* x, const float* weight, const float* bias, void* y, bool bf16_out,
                               float* mean, float* rstd, int64_t rows, int64_t cols, float eps, void* stream);

// dy: rows × cols (bf16 when `bf16_dy`, else fp32); dx: rows × cols fp32; dweight, dbias: cols fp32,
// overwritten (zeroed first on `stream`).
const char* layer_norm_backward(const void* dy, bool bf16_dy, const float* x, const float* weight, const float* mean,
                                const float* rstd, float* dx, float* dweight, float* dbias, int64_t rows, int64_t cols,
                                void* stream);

}  // namespace sweep::kernels::cuda
