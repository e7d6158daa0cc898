// Picks the kernels compiled for the best instruction set this CPU has, or the one named by
// SWEEP_CPU_ISA (AVX2 or AVX512: to test or time the AVX2 build on an AVX-512 machine).
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
    TORCH_CHECK(isa.empty() || isa == "AVX2" || isa == "AVX512", "SWEEP_CPU_ISA=", isa, ": AVX2 or AVX512 expected");
    if (isa != "AVX2" && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
      return &AVX512::k_ops;
    }
    TORCH_CHECK(isa != "AVX512", "SWEEP_CPU_ISA=AVX512, but this CPU lacks AVX-512");
    TORCH_CHECK(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
                "sweep's fused CPU kernels need AVX2 and FMA, which this CPU lacks: set train.fused: false");
    return &AVX2::k_ops;
  }();
  return *chosen;
}

}  // namespace sweep::kernels::cpu
