#include "util/cpu_isa.h"

#include <cstdlib>
#include <string>

#include "util/error.h"

namespace sweep {

CpuIsa cpu_isa() {
  __builtin_cpu_init();
  const char* forced = std::getenv("SWEEP_CPU_ISA");
  const std::string isa = forced ? forced : "";
  if (!isa.empty() && isa != "AVX2" && isa != "AVX512" && isa != "AVX512_BF16" && isa != "AMX") {
    throw Error("SWEEP_CPU_ISA=" + isa + ": AVX2, AVX512, AVX512_BF16 or AMX expected", Exit::bad_input);
  }
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const bool bf16_dot = avx512 && __builtin_cpu_supports("avx512bf16");
  if ((isa == "AVX512_BF16" || isa == "AMX") && !bf16_dot) {
    throw Error("SWEEP_CPU_ISA=" + isa + ", but this CPU lacks AVX512-BF16", Exit::bad_input);
  }
  if (isa == "AVX512" && !avx512) {
    throw Error("SWEEP_CPU_ISA=AVX512, but this CPU lacks AVX-512", Exit::bad_input);
  }
  if (bf16_dot && isa != "AVX2" && isa != "AVX512") {
    return CpuIsa::avx512_bf16;
  }
  return avx512 && isa != "AVX2" ? CpuIsa::avx512 : CpuIsa::avx2;
}

}  // namespace sweep
