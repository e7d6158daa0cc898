// Picks the kernels compiled for the best instruction set this CPU has, or the one named by
// SWEEP_CPU_ISA (AVX2, AVX512, AVX512_BF16 or AMX: to test or time a lesser build on a better
// machine). AMX is what oneDNN finds usable (the CPU has it, and Linux grants the process its
// tile state): its matmul is what multiplies on the tiles.
#include <c10/util/Exception.h>
#include <dnnl.h>

#include <cstdlib>
#include <string>

#include "kernels/cpu/ops.h"
#include "util/cpu_isa.h"

namespace sweep::kernels::cpu {

const Ops& ops() {
  static const Ops* const chosen = [] {
    const CpuIsa level = cpu_isa();  // SWEEP_CPU_ISA checked there (the memory plan decides by it too)
    const char* forced = std::getenv("SWEEP_CPU_ISA");
    const std::string isa = forced ? forced : "";
    const bool amx = level == CpuIsa::avx512_bf16 &&
                     (dnnl_get_effective_cpu_isa() & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
    TORCH_CHECK(isa != "AMX" || amx, "SWEEP_CPU_ISA=AMX, but this CPU (or its kernel) gives no AMX");
    if (amx && isa != "AVX512_BF16") {
      return &AVX512::k_ops_amx;
    }
    if (level == CpuIsa::avx512_bf16) {
      return &AVX512::k_ops_bf16_dot;
    }
    if (level == CpuIsa::avx512) {
      return &AVX512::k_ops;
    }
    TORCH_CHECK(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
                "sweep's fused CPU kernels need AVX2 and FMA, which this CPU lacks: set train.fused: false");
    return &AVX2::k_ops;
  }();
  return *chosen;
}

}  // namespace sweep::kernels::cpu
