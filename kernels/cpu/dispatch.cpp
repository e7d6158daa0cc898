// Picks the kernels compiled for the best instruction set this CPU has, or the one named by
// SWEEP_CPU_ISA (AVX2, AVX512, AVX512_BF16 or AMX: to test or time a lesser build on a better
// machine). AMX is what oneDNN finds usable (the CPU has it, and Linux grants the process its
// tile state): its matmul is what multiplies on the tiles.
#include <c10/util/Exception.h>
#include <dnnl.h>

#include <cstdlib>
#include <string>

#include "kernels/cpu/ops.h"

namespace sweep::kernels::cpu {

const Ops& ops() {
  static const Ops* const chosen = [] {
    __builtin_cpu_init();
    const char* forced = std::getenv("SWEEP_CPU_ISA");
    const std::string isa = forced ? forced : "";
    TORCH_CHECK(isa.empty() || isa == "AVX2" || isa == "AVX512" || isa == "AVX512_BF16" || isa == "AMX",
                "SWEEP_CPU_ISA=", isa, ": AVX2, AVX512, AVX512_BF16 or AMX expected");
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    const bool bf16_dot = avx512 && __builtin_cpu_supports("avx512bf16");
    const bool amx = bf16_dot && (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core_amx) ==
                                     dnnl_cpu_isa_avx512_core_amx;
    TORCH_CHECK(isa != "AMX" || amx, "SWEEP_CPU_ISA=AMX, but this CPU (or its kernel) gives no AMX");
    TORCH_CHECK(isa != "AVX512_BF16" || bf16_dot, "SWEEP_CPU_ISA=AVX512_BF16, but this CPU lacks AVX512-BF16");
    if (amx && (isa.empty() || isa == "AMX")) {
      return &AVX512::k_ops_amx;
    }
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
