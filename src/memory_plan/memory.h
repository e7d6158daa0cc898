// The memory plan: what one device holds while a run trains, from its config alone — no tensor
// is made, so `sweep plan` states it for models this machine could not hold. Every figure is
// counted from the tensors the training core makes (src/train/model.cpp, kernels/): the fp32
// weights, their gradients and AdamW's two moments; per micro-batch, the tensors autograd keeps
// for backward (each counted once, in the dtype the step's path makes it: fused CPU kernels,
// LibTorch's ops, bf16 autocast) and the largest temporaries of the step; and the buffers of the
// collectives. Checked against the peak tensor memory `sweep bench` measures
// (docs/performance.md#memory). Pure: config in, bytes out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace sweep {

// How a run is laid out over its devices.
struct Layout {
  int64_t ranks = 1;   // data-parallel processes (resources.ranks)
  int64_t zero = 0;    // ZeRO stage: 0 replicated; 1 optimizer state sharded; 2 + gradients; 3 + weights
  int64_t expert = 1;  // expert-parallel ranks: the routed experts partitioned over them
  int64_t micro_batch = 0;  // sequences per micro-batch; 0: the config's
  int64_t grad_accum = 0;   // micro-batches per step (the memory does not depend on it); 0: not said
  bool checkpointing = false;  // set by plan_memory from the config's train.activation_checkpointing

  std::string describe() const;  // "8 ranks, ZeRO-1, experts over 8, micro-batch 4 × accumulation 2"
};

// Which ops the step runs (the training core decides; this says what it decided):
// fused CPU kernels (attention included) or LibTorch's ops (scaled_dot_product_attention).
struct StepPath {
  bool cuda = false;
  bool fused = false;       // kernels/ on the CPU
  bool autocast = false;    // bf16
  bool bf16_copies = false;  // fused bf16: the linear layers' weights have bf16 copies kept between steps
  // fused bf16 on a CPU without bf16 products: the linear layers widen their operands to fp32 in
  // row blocks of at most this many bytes (kernels::linear_bf16_widened_block); 0 where they don't
  double widened_block = 0;
};
// The path of `config` on a CPU whose fused bf16 linear keeps bf16 weight copies or not
// (kernels::linear_bf16_keeps_copies: bf16 products), or widens in blocks of `widened_block`.
StepPath step_path(const RunConfig& config, bool bf16_copies, double widened_block = 0);
// The path of `config` on this CPU: which build of the fused kernels it takes (util/cpu_isa.h),
// as the training core decides it (a unit test holds the two to the same answer).
StepPath step_path_here(const RunConfig& config);

struct MemoryItem {
  std::string what;
  double bytes = 0;
};

struct MemoryPlan {
  Layout layout;
  double weights = 0;        // fp32 parameters held (ZeRO-3: this rank's shard), and the fused bf16
                             // step's bf16 copies of the matmul weights
  double gradients = 0;      // fp32 gradients held
  double optimizer = 0;      // AdamW's moments held
  double activations = 0;    // kept for backward by one micro-batch, at the end of its forward
  double transient = 0;      // the step's largest temporaries beside them: bf16 weight copies, the
                             // head's gradient, the backward's first buffers
  double communication = 0;  // gradient buckets, gathered weights (ZeRO), all-to-all buffers
  std::vector<MemoryItem> activation_items;  // what `activations` is made of, largest first

  double persistent() const { return weights + gradients + optimizer; }
  double step() const { return activations + transient + communication; }
  double total() const { return persistent() + step(); }
};

MemoryPlan plan_memory(const RunConfig& config, const Layout& layout, const StepPath& path);

// Layouts of `config` that would fit `device_bytes`, each training the config's global batch
// (micro-batch × accumulation × ranks): first the smallest change the core trains today (a smaller
// micro-batch with more accumulation, activation checkpointing; replicated ranks), then at these
// ranks and at 2×, 4×, 8× of them the first sharded layout that fits (the lowest ZeRO stage, the
// fewest expert ranks). At most `limit`.
std::vector<MemoryPlan> layouts_that_fit(const RunConfig& config, const StepPath& path, double device_bytes,
                                         size_t limit = 4);

// "12.3 GiB", "512 MiB", "96 KiB"
std::string format_bytes(double bytes);

}  // namespace sweep
