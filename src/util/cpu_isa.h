// Which build of the fused CPU kernels (kernels/cpu/) this CPU takes — decided here, without
// LibTorch, so that the memory plan of `sweep plan` and `sweep run` (the front, which links no
// LibTorch) knows the path the training core's step will take. kernels/cpu/dispatch.cpp picks its
// ops by the same function, adding only whether AMX is usable (oneDNN's verdict).
#pragma once

#include <cstdint>

namespace sweep {

enum class CpuIsa { avx2, avx512, avx512_bf16 };

// The best of AVX2, AVX-512 and AVX512-BF16 this CPU has, or the one SWEEP_CPU_ISA names (AVX2,
// AVX512, AVX512_BF16, or AMX, which needs AVX512-BF16's level). Throws Error naming the variable
// when it names another, or a level this CPU lacks.
CpuIsa cpu_isa();

// The fused bf16 linear layer on a CPU without bf16 products and without sweep's own widened GEMM
// (the AVX-512 build) widens its operands to fp32 in row blocks of at most this many bytes.
inline constexpr int64_t k_widened_block_bytes = 4 << 20;

}  // namespace sweep
