// The memory plan (src/memory_plan): against the tensor memory real training steps take (LibTorch's CPU
// allocator, counted), and the layout arithmetic of ZeRO stages and expert parallelism.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>

#include "bench/bench.h"
#include "bench/tensor_memory.h"
#include "helpers.h"
#include "kernels/linear.h"
#include "memory_plan/memory.h"

using namespace sweep;

namespace {

struct Measured {
  double held = 0, step = 0;  // bytes: between steps; the peak a step adds
};

// Two steps of `c` on synthetic tokens, counted: what the trainer holds after the first (weights,
// gradients, AdamW's moments), and the peak the second adds.
Measured measure(const RunConfig& c) {
  const auto data = bench_data(c);
  Measured m;
  auto counting = std::make_unique<CountingAllocator>();
  {
    Trainer trainer(c, data);
    trainer.train_step();
    m.held = counting->live_mib() * (1 << 20);
    counting->restart();
    trainer.train_step();
    m.step = counting->peak_mib() * (1 << 20);
  }
  counting.reset();
  return m;
}

RunConfig small(Family family) {
  RunConfig c = test::tiny_config();
  c.model.family = family;
  if (family == Family::deepseek) {
    c.model.norm = Norm::rmsnorm;
    c.model.position = Position::rope;
    c.model.mlp_activation = MlpActivation::swiglu;
    c.model.attention = Attention::mla;
  }
  c.model.n_layer = 2;
  c.model.n_head = 4;
  c.model.n_embd = 64;
  c.model.block_size = 128;
  c.model.vocab_size = 512;
  c.train.micro_batch = 8;
  return c;
}

}  // namespace

// The front plans memory without LibTorch (util/cpu_isa.h): it must decide the step path as the
// kernels do (memory_plan.avx2 runs this under SWEEP_CPU_ISA=AVX2 too).
TEST_CASE("memory plan: the front's step path is the kernels' own") {
  for (const Precision precision : {Precision::fp32, Precision::bf16}) {
    RunConfig c = small(Family::gpt2);
    c.train.fused = true;
    c.train.precision = precision;
    const StepPath front = step_path_here(c);
    const StepPath core = step_path(c, kernels::linear_bf16_keeps_copies(), kernels::linear_bf16_widened_block());
    CHECK(front.fused == core.fused);
    CHECK(front.autocast == core.autocast);
    CHECK(front.bf16_copies == core.bf16_copies);
    CHECK(front.widened_block == core.widened_block);
  }
}

namespace {

void check_against_measured(const RunConfig& c, const std::string& what) {
  const Measured got = measure(c);
  const MemoryPlan plan = plan_memory(c, Layout{}, step_path_here(c));
  const double held = plan.persistent() / got.held - 1, step = plan.step() / got.step - 1,
               peak = plan.total() / (got.held + got.step) - 1;
  char line[256];
  std::snprintf(line, sizeof line, "%s: held %.0f KiB (plan %+.1f%%), a step adds %.0f KiB (plan %+.1f%%), peak %+.1f%%",
                what.c_str(), got.held / 1024, 100 * held, got.step / 1024, 100 * step, 100 * peak);
  MESSAGE(line);
  CHECK(std::abs(held) < 1e-3);   // parameters, gradients and moments: counted exactly
  CHECK(std::abs(step) <= 0.15);  // activations and temporaries: within 15%
  CHECK(std::abs(peak) <= 0.15);
}

}  // namespace

TEST_CASE("memory plan: within 15% of the tensor memory training steps take, on three paths and with checkpointing") {
  RunConfig a = small(Family::gpt2);  // fp32, fused kernels, dropout (the noise tensors)
  a.model.dropout = 0.1;
  check_against_measured(a, "gpt2 fp32 fused, dropout 0.1");

  RunConfig b = small(Family::gpt2);  // bf16 autocast, LibTorch's ops (the T × T scores), tied head
  b.train.precision = Precision::bf16;
  b.train.fused = false;
  b.model.tie_weights = true;
  check_against_measured(b, "gpt2 bf16 reference, tied");

  RunConfig d = small(Family::deepseek);  // MLA, RMSNorm, rope, SwiGLU, MoE with a shared expert, bf16
  d.model.n_routed_experts = 4;
  d.model.n_shared_experts = 1;
  d.model.moe_top_k = 2;
  d.model.first_k_dense = 1;
  d.train.precision = Precision::bf16;
  check_against_measured(d, "deepseek MoE + MLA bf16 fused");

  d.train.activation_checkpointing = true;  // each block's input kept, the block run again in backward
  check_against_measured(d, "the same, activation checkpointing");
  a.train.activation_checkpointing = true;
  check_against_measured(a, "gpt2 fp32 fused, dropout 0.1, activation checkpointing");
}

TEST_CASE("memory plan: ZeRO stages shard what they say, expert parallelism partitions the routed experts") {
  RunConfig c = small(Family::gpt2);
  const StepPath path = step_path(c, true);
  const MemoryPlan zero0 = plan_memory(c, Layout{2, 0, 1, 0}, path);
  const MemoryPlan zero1 = plan_memory(c, Layout{2, 1, 1, 0}, path);
  const MemoryPlan zero2 = plan_memory(c, Layout{2, 2, 1, 0}, path);
  const MemoryPlan zero3 = plan_memory(c, Layout{2, 3, 1, 0}, path);
  const double P = static_cast<double>(model_size(c.model).total);
  CHECK(zero0.weights == doctest::Approx(4 * P));
  CHECK(zero0.gradients == doctest::Approx(4 * P));
  CHECK(zero0.optimizer == doctest::Approx(8 * P));
  CHECK(zero1.optimizer == doctest::Approx(4 * P));  // 8P / 2 ranks
  CHECK(zero1.gradients == doctest::Approx(4 * P));
  CHECK(zero2.gradients == doctest::Approx(2 * P));
  CHECK(zero3.weights < zero2.weights);
  CHECK(zero3.persistent() <= 0.6 * zero0.persistent());  // the bar at 2 ranks
  CHECK(zero0.activations == zero2.activations);             // sharding leaves a micro-batch's activations as they are
  CHECK(zero3.activations < zero0.activations);              // but ZeRO-3 runs its blocks checkpointed

  RunConfig moe = small(Family::deepseek);
  moe.model.n_routed_experts = 8;
  moe.model.moe_top_k = 2;
  const MemoryPlan one = plan_memory(moe, Layout{4, 0, 1, 0}, step_path(moe, true));
  const MemoryPlan four = plan_memory(moe, Layout{4, 0, 4, 0}, step_path(moe, true));
  // the routed experts of layers 1.. (first_k_dense 1): 8 × 3 matrices of 64 × hidden each
  const ModelConfig m = moe.model.resolved();
  const double experts = 8.0 * 3 * 64 * static_cast<double>(m.moe_intermediate_size) * (m.n_layer - m.first_k_dense);
  CHECK(one.weights - four.weights == doctest::Approx(4 * experts * 3 / 4));
  CHECK(four.communication > one.communication);  // the all-to-all buffers

  // a smaller micro-batch needs fewer activations, in proportion
  const MemoryPlan half = plan_memory(c, Layout{1, 0, 1, 4}, path);
  const MemoryPlan full = plan_memory(c, Layout{1, 0, 1, 8}, path);
  CHECK(half.activations == doctest::Approx(full.activations / 2).epsilon(0.01));
}

TEST_CASE("memory plan: the layouts that fit a device, or none") {
  RunConfig c = small(Family::gpt2);
  c.resources.ranks = 2;
  const StepPath path = step_path(c, true);
  const MemoryPlan now = plan_memory(c, Layout{2, 0, 1, 0}, path);
  const double device = now.total() * 0.8;
  const auto fit = layouts_that_fit(c, path, device);
  REQUIRE(!fit.empty());
  for (const auto& p : fit) {
    CHECK(p.total() <= device);
    // the same global batch: micro-batch × accumulation × ranks
    CHECK(p.layout.micro_batch * p.layout.grad_accum * p.layout.ranks == c.train.micro_batch * c.train.grad_accum * 2);
  }
  CHECK(layouts_that_fit(c, path, 1024.0).empty());  // 1 KiB: nothing fits
}

