// `sweep bench`: training-step throughput (forward + backward + clip + AdamW, median over
// timed steps after warm-up) for fp32 and bf16 on a reference config, the FLOP/s it achieves,
// the matmul peak measured on this machine for that precision, and their ratio (MFU).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace sweep {

// 4 layers, 4 heads, 256 wide, block 256, micro-batch 16, vocab 256, dropout 0, clip 1.0.
RunConfig bench_reference_config();

struct BenchResult {
  std::string precision;
  double tokens_per_s = 0;
  double step_ms = 0;
  double flops_per_token = 0;
  double achieved_flops = 0;  // FLOP/s
  double peak_flops = 0;      // measured matmul FLOP/s at this precision
};

// Model FLOPs of one token, forward + backward: 6 × matmul weights + 12 × layers × width × block.
double flops_per_token(const ModelConfig& m);

// Best-of-N FLOP/s of an n×n×n matmul at `precision` (fp32 | bf16) on the current threads.
double measure_matmul_peak(const std::string& precision, int64_t n = 1024);

std::vector<BenchResult> run_bench(const RunConfig& config, const std::vector<std::string>& precisions,
                                   int64_t steps, int64_t warmup, std::ostream& out);

}  // namespace sweep
