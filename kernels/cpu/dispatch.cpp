// Picks the kernels compiled for the best instruction set this CPU has, or the one named by
// SWEEP_CPU_ISA (AVX2, AVX512 or AVX512_BF16: to test or time a lesser build on a better machine).
#include <c10/util/Exception.h>

#include <cstdlib>
#include <string>

#include "kernels/cpu/ops.h"

namespace sweep::kernels::cpu {

const Ops& ops() {
  static const Ops* const chosen = [] {
    __builtin_cpu_init();
    const char* forced = std::getenv("SWEEP_CPU_ISA");
    const std::string isa = forced ? forced : "";
    TORCH_CHECK(isa.empty() || isa == "AVX2" || isa == "AVX512" || isa == "AVX512_BF16", "SWEEP_CPU_ISA=", isa,
                ": AVX2, AVX512 or AVX512_BF16 expected");
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    const bool bf16_dot = avx512 && __builtin_cpu_supports("avx512bf16");
    TORCH_CHECK(isa != "AVX512_BF16" || bf16_dot, "SWEEP_CPU_ISA=AVX512_BF16, but this CPU lacks AVX512-BF16");
    TORCH_CHECK(isa != "AVX512" || avx512, "SWEEP_CPU_ISA=AVX512, but this CPU lacks AVX-512");
    if (bf16_dot && (isa.empty() || isa == "AVX512_BF16")) {
      return &AVX512::k_ops_bf16_dot;
    }
    if (avx512 && isa != "AVX2") {
      return &AVX512::k_ops;
    }
    TORCH_CHECK(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
                "sweep's fused CPU kernels need AVX2 and FMA, which this CPU lacks: set train.fused: false");
    return &AVX2::k_ops;
  }();
  return *chosen;
}

}  // namespace sweep::kernels::cpu
