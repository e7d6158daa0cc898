// Matrix products on bf16 through oneDNN's matmul primitive, which runs on AMX tiles where the
// CPU has them (AVX512-BF16 dot products, else): the bf16 attention (kernels/attention_amx.cpp)
// and the bf16 linear (kernels/linear.cpp). A primitive is made once per shape and kept.
#pragma once

#include <cstdint>
#include <string>

namespace sweep::kernels::onednn {

// C = op(A) · op(B) (+ bias, one per column of C) for row-major matrices with row strides lda,
// ldb, ldc: A m × k (k × m when ta), B k × n (n × k when tb), both bf16; C m × n in fp32 or bf16;
// bias fp32 or null. Called from inside a parallel region it runs on the calling thread, else on
// oneDNN's threads.
void product(int64_t m, int64_t n, int64_t k, const void* a, bool ta, int64_t lda, const void* b, bool tb,
             int64_t ldb, void* c, int64_t ldc, bool c_f32, const float* bias = nullptr);

// The version of the oneDNN library this process calls ("2.6.3"): the kernels are written for
// 2.x's C API, and a PyTorch wheel carries 3.x (tests/unit/kernels/test_kernels.cpp checks which one binds).
std::string library_version();

}  // namespace sweep::kernels::onednn
