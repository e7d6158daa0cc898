// The equivalences the verdicts rest on, as checks the CPU unit tests and the GPU tests share:
// the families they are proven on, and accumulation against the bigger batch.
#pragma once

#include "helpers.h"

namespace sweep::test {

// The configs each equivalence is proven on: GPT-2, DeepSeek-V2-style with each balancing (the
// aux loss is per sequence and the bias moves on the whole step's load, so both are exact),
// GPT-2 with the speedrun's architecture switches, and GPT-2 trained with Muon.
inline std::vector<RunConfig> families() {
  std::vector<RunConfig> out{tiny_config(), tiny_deepseek_config(Balance::aux_loss), tiny_deepseek_config(Balance::bias)};
  out.back().model.norm = Norm::layernorm;  // LayerNorm on MLA's latent (bf16 under autocast)
  out.push_back(tiny_speedrun_config());
  out.push_back(tiny_muon_config());
  return out;
}

// The MoE statistics of two steps agree (the same routing: integer loads equal).
inline void check_same_moe(const StepStats& a, const StepStats& b) {
  CHECK(a.moe.load_max == b.moe.load_max);
  REQUIRE(a.moe.entropy.size() == b.moe.entropy.size());
  for (size_t i = 0; i < a.moe.entropy.size(); ++i) {
    CHECK(a.moe.entropy[i] == doctest::Approx(b.moe.entropy[i]).epsilon(1e-5));
  }
  CHECK(std::isnan(a.moe.aux_loss) == std::isnan(b.moe.aux_loss));
  if (!std::isnan(a.moe.aux_loss)) {
    CHECK(a.moe.aux_loss == doctest::Approx(b.moe.aux_loss).epsilon(1e-5));
  }
}

// micro_batch 4 × grad_accum 4 against micro_batch 16 × grad_accum 1 of `family` (on its device),
// clipping on: per-step losses and grad norms within `rel` (1e-5 in fp32), the MoE statistics alike,
// the final weights within `rel` of their norm and each within `max_abs` (elementwise rtol is
// meaningless for the few weights whose gradient is ~0: Adam's m/sqrt(v) turns float rounding of
// the sum order into O(lr·1e-4)), the balancing biases identical. In bf16 the sums' order still
// differs in fp32's last bits, and a rounding to bf16 then lands on the other side of a bf16 step
// now and then (2⁻⁸ of that value): `rel` of bf16's size there.
inline void check_accumulation(const RunConfig& family, double max_abs, double rel = 1e-5) {
  CAPTURE(family.model.family);
  CAPTURE(family.model.balance);
  CAPTURE(family.train.optimizer);
  auto data = synthetic_data();
  RunConfig big = family;
  big.train.micro_batch = 16;
  big.train.grad_clip = 1.0;  // the clip sees the accumulated gradient: it must match too
  RunConfig small = big;
  small.train.micro_batch = 4;
  small.train.grad_accum = 4;
  REQUIRE(big.tokens_per_step() == small.tokens_per_step());
  Trainer a(big, data), b(small, data);
  for (int step = 0; step < 6; ++step) {
    const StepStats sa = a.train_step(), sb = b.train_step();
    CAPTURE(step);
    CHECK(sb.loss == doctest::Approx(sa.loss).epsilon(rel));
    CHECK(sb.grad_norm == doctest::Approx(sa.grad_norm).epsilon(rel));
    check_same_moe(sa, sb);
  }
  const auto pa = flat_params(a.model()), pb = flat_params(b.model());
  CHECK((pa - pb).norm().item<double>() / pa.norm().item<double>() < rel);
  CHECK((pa - pb).abs().max().item<double>() < max_abs);
  for (size_t l = 0; l < a.model()->moe_layers().size(); ++l) {  // the balancing biases moved alike
    const auto& ba = a.model()->moe_layers()[l]->expert_bias;
    if (ba.defined()) {
      CHECK(torch::equal(ba, b.model()->moe_layers()[l]->expert_bias));
      CHECK(ba.abs().sum().item<double>() > 0);
    }
  }
}

// Activation checkpointing (each block run again in backward) against keeping every activation,
// with dropout (the rerun must draw the same masks), clipping and accumulation: the same per-step
// losses, grad norms and MoE statistics, and the same weights after 6 steps — bitwise: the rerun
// computes the same values in the same order, and each weight's gradient arrives as it did.
inline void check_recompute(const RunConfig& family, Precision precision) {
  CAPTURE(family.model.family);
  CAPTURE(family.model.balance);
  CAPTURE(precision);
  auto data = synthetic_data();
  RunConfig keep = family;
  keep.model.dropout = 0.1;
  keep.train.precision = precision;
  keep.train.grad_clip = 1.0;
  keep.train.grad_accum = 2;
  RunConfig rerun = keep;
  rerun.train.activation_checkpointing = true;
  // one after the other: dropout draws from the process's generator, which each trainer seeds
  auto train = [&](const RunConfig& c) {
    Trainer t(c, data);
    std::vector<StepStats> steps;
    for (int step = 0; step < 6; ++step) {
      steps.push_back(t.train_step());
    }
    return std::make_pair(steps, flat_params(t.model()));
  };
  const auto [sa, pa] = train(keep);
  const auto [sb, pb] = train(rerun);
  for (size_t step = 0; step < sa.size(); ++step) {
    CAPTURE(step);
    CHECK(sb[step].loss == sa[step].loss);
    CHECK(sb[step].grad_norm == sa[step].grad_norm);
    check_same_moe(sa[step], sb[step]);
  }
  CHECK(torch::equal(pa, pb));
}

}  // namespace sweep::test
