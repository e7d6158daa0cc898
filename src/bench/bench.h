// `sweep bench`: training-step throughput (forward + backward + clip + AdamW, median over
// timed steps after warm-up) for fp32 and bf16 on a reference config, with the fused kernels
// and with the reference ops: the FLOP/s achieved, the matmul peak measured on this machine for
// that precision, their ratio (MFU), the step's peak RSS; each fused op against its reference at
// the config's shapes; the tensor memory held and the peak a step adds, beside the memory plan's
// figures (src/memory_plan); and, with `profile`, the step's top ops by self time.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "memory_plan/memory.h"
#include "train/trainer.h"

namespace sweep {

// 4 layers, 4 heads, 256 wide, block 256, micro-batch 16, vocab 256, dropout 0, clip 1.0.
RunConfig bench_reference_config();

// GPT-2 small as nanoGPT trains it: 12 layers × 12 heads × 768 wide, block 1024, vocabulary
// 50257 padded to 50304, tied embedding and head, micro-batch 16, bf16, dropout 0, clip 1.0.
RunConfig bench_gpt2_small_config();

// Random tokens below the config's vocabulary (256 when it has none) for the bench's runs:
// throughput does not depend on their values.
std::shared_ptr<TrainData> bench_data(const RunConfig& config);

struct BenchResult {
  Precision precision = Precision::fp32;
  bool fused = true;
  Optimizer optimizer = Optimizer::adamw;  // train.optimizer of the timed steps
  double optimizer_ms = 0;          // the optimizer's update, of step_ms
  double peak_rss_mib = 0;  // the process's peak resident memory over the timed steps
  double tokens_per_s = 0;
  double step_ms = 0;
  double flops_per_token = 0;
  double achieved_flops = 0;  // FLOP/s
  double peak_flops = 0;      // measured matmul FLOP/s at this precision
  // Tensor memory (MiB): measured through a counting allocator, and the memory plan's figure
  double held_mib = 0, held_plan_mib = 0;  // between steps: weights, gradients, the optimizer's state
  double step_mib = 0, step_plan_mib = 0;  // the peak a step adds: activations, temporaries
};

// Best-of-N FLOP/s of an n×n×n matmul at `precision` (fp32 | bf16) on the current threads, with
// the matmul the path uses (fused: kernels::linear or linear_bf16, whichever GEMM they take on
// this CPU; otherwise LibTorch's mm).
double measure_matmul_peak(Precision precision, bool fused, int64_t n = 1024);

// Seconds of one step's weight matmuls alone (every linear layer's forward, input-gradient and
// weight-gradient products at the config's shapes, with the path's matmul): a ceiling on the
// step's speed whatever the rest of the step costs.
double measure_weight_matmuls(const RunConfig& config, bool fused);

struct BenchSettings {
  std::vector<Precision> precisions{Precision::fp32, Precision::bf16};
  std::vector<bool> fused{false, true};  // the reference ops, the fused kernels
  int64_t steps = 20;
  int64_t warmup = 3;
  bool ops = true;       // each fused op against its reference
  bool profile = false;  // the top ops of a step
  std::string nanogpt;   // nanoGPT's model.py: its step beside sweep's, torch.compile off and on ("" = none)
  std::string python = "python3";
  // The optimizers to time each step with (train.optimizer: adamw, muon); empty: the config's.
  std::vector<Optimizer> optimizers;
  std::string model = "reference";  // what the rows say was measured
  std::string rows;                 // --rows FILE: each row appended as a JSON line (bench/rows.h); "" = none
};

std::vector<BenchResult> run_bench(const RunConfig& config, const BenchSettings& settings, std::ostream& out);

// The data loader alone on `gib` GiB of generated llm.c-format shards written under `dir`
// (removed after): the config's batches read from a cold page cache, then a warm one, as
// tokens/s against `step_tokens_per_s` (the training step's), and the resident memory the process
// gained reading them.
void bench_loader(const RunConfig& config, double gib, const std::string& dir, double step_tokens_per_s,
                  std::ostream& out);

}  // namespace sweep
