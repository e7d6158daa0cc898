// `sweep bench --device cuda`: the training step on a CUDA device — tokens/s, the step's time,
// model FLOP/s and MFU against the peak measured in the same run with a large matmul at the
// step's precision (bf16; TF32 for tf32; fp32 without TF32), the peak tensor memory — for each
// model and precision, with nanoGPT's step beside it (torch.compile off and on) when its
// model.py is given.
#pragma once

#include <torch/torch.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "bench/nanogpt.h"
#include "config/run_config.h"

namespace sweep {

struct GpuBenchSettings {
  std::string device = "cuda";
  std::vector<Precision> precisions{Precision::bf16, Precision::tf32};
  int64_t steps = 20;
  int64_t warmup = 3;
  std::string nanogpt;  // nanoGPT's model.py ("" = no comparison)
  std::string python = "python3";
  // The rows to time, by key (--lever): sweep, per-tensor-adamw, read-each, old-adamw-and-reads,
  // cuda-kernels, cuda-graph, graph-and-kernels, nanogpt, nanogpt-compile; empty: every lever of
  // sweep's, and nanoGPT's two where its model.py is given. One per process keeps a crash in one
  // (a graph's capture) from losing the others (scripts/test-gpu.sh).
  std::vector<std::string> levers;
  std::string rows;  // --rows FILE: each row appended as a JSON line (bench/rows.h); "" = none
};

// The keys --lever takes, in the rows' order.
const std::vector<std::string>& gpu_bench_levers();

// models: (name, config) pairs, e.g. ("reference", bench_reference_config()).
void run_gpu_bench(const std::vector<std::pair<std::string, RunConfig>>& models, const GpuBenchSettings& settings,
                   std::ostream& out);

// Best-of-N FLOP/s of an n×n×n CUDA matmul at `precision` (bf16 | tf32 | fp32).
double measure_cuda_matmul_peak(Precision precision, const torch::Device& device, int64_t n = 8192);

}  // namespace sweep
