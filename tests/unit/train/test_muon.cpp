// Muon (train/muon.h): the Newton–Schulz iteration and one optimizer step against plain
// implementations written here, which weights it takes, and its config. The equivalences
// (accumulation, data parallel, resume, fused = reference, recompute) run on
// test::tiny_muon_config through test::families() and the resume and data-parallel tests.
#include <doctest/doctest.h>

#include <fstream>

#include "helpers.h"
#include "train/muon.h"
#include "train/trainer.h"

using namespace sweep;

namespace {

// The quintic iteration written out in double, one matrix: X = G/‖G‖, wide; 5 times
// X ← a·X + (b·A + c·A²)·X with A = X·Xᵀ.
torch::Tensor plain_newton_schulz(const torch::Tensor& g) {
  auto x = g.to(torch::kDouble);
  const bool tall = x.size(0) > x.size(1);
  if (tall) {
    x = x.t();
  }
  x = x / (x.norm() + 1e-7);
  for (int i = 0; i < 5; ++i) {
    const auto a = x.mm(x.t());
    x = 3.4445 * x + (-4.7750 * a + 2.0315 * a.mm(a)).mm(x);
  }
  return tall ? x.t() : x;
}

}  // namespace

namespace {

// The step's rule with this clip factor (and skip), as the trainer's device would give it.
StepScale given_scale(double factor, bool skip = false) {
  return {torch::ones({}), torch::full({}, factor, torch::kDouble), torch::full({}, skip ? 1.0f : 0.0f), /*clipping=*/true};
}

}  // namespace

TEST_CASE("Newton–Schulz: the published quintic (3.4445, −4.7750, 2.0315), 5 steps, singular values near 1") {
  CHECK(k_ns_a == 3.4445);
  CHECK(k_ns_b == -4.7750);
  CHECK(k_ns_c == 2.0315);
  torch::manual_seed(3);
  for (const auto& shape : std::vector<std::vector<int64_t>>{{16, 40}, {40, 16}, {32, 32}, {1, 7}}) {
    CAPTURE(shape[0]);
    CAPTURE(shape[1]);
    const auto g = torch::randn(shape) * 5;
    const auto got = newton_schulz(g, 5, torch::kFloat);
    const auto want = plain_newton_schulz(g);
    CHECK((got.to(torch::kDouble) - want).abs().max().item<double>() < 1e-5);
    const auto sv = at::linalg_svdvals(got.to(torch::kDouble));
    CHECK(sv.min().item<double>() > 0.5);
    CHECK(sv.max().item<double>() < 1.3);
    // bf16, as a bf16 step runs it: the same matrix to bf16's precision
    const auto half = newton_schulz(g, 5, torch::kBFloat16);
    CHECK((half.scalar_type() == torch::kBFloat16));
    CHECK((half.to(torch::kDouble) - want).abs().max().item<double>() < 0.1);
  }
  // a batch is each matrix on its own
  const auto batch = torch::randn({3, 8, 5});
  const auto each = newton_schulz(batch, 5, torch::kFloat);
  for (int64_t i = 0; i < 3; ++i) {
    CHECK(torch::allclose(each[i], newton_schulz(batch[i], 5, torch::kFloat), 1e-5, 1e-6));
  }
}

TEST_CASE("a Muon step equals Nesterov momentum, orthogonalised, shape-scaled, written out, stacked matrices apart") {
  torch::manual_seed(4);
  auto w = torch::randn({6, 4}).requires_grad_(true);    // one matrix, tall: scale √(6/4)
  auto qkv = torch::randn({9, 3}).requires_grad_(true);  // three 3 × 3 matrices
  const auto w0 = w.detach().clone(), qkv0 = qkv.detach().clone();
  MuonOptions o;
  o.lr = 0.05;
  o.momentum = 0.9;
  Muon muon({w, qkv}, {1, 3}, o);
  const std::vector<torch::Tensor> grads_w{torch::randn({6, 4}), torch::randn({6, 4})};
  const std::vector<torch::Tensor> grads_q{torch::randn({9, 3}), torch::randn({9, 3})};
  auto buf_w = torch::zeros({6, 4}, torch::kDouble), buf_q = torch::zeros({9, 3}, torch::kDouble);
  auto want_w = w0.to(torch::kDouble), want_q = qkv0.to(torch::kDouble);
  for (int step = 0; step < 2; ++step) {
    w.mutable_grad() = grads_w[step].clone();
    qkv.mutable_grad() = grads_q[step].clone();
    muon.step(/*lr_scale=*/0.5, given_scale(0.8), step);
    // the plain version: lr 0.05 × 0.5, the gradients × 0.8
    const auto gw = grads_w[step].to(torch::kDouble) * 0.8, gq = grads_q[step].to(torch::kDouble) * 0.8;
    buf_w = 0.9 * buf_w + gw;
    buf_q = 0.9 * buf_q + gq;
    want_w -= 0.025 * std::sqrt(6.0 / 4.0) * plain_newton_schulz(gw + 0.9 * buf_w);
    const auto uq = gq + 0.9 * buf_q;
    want_q -= 0.025 * torch::cat({plain_newton_schulz(uq.narrow(0, 0, 3)), plain_newton_schulz(uq.narrow(0, 3, 3)),
                                  plain_newton_schulz(uq.narrow(0, 6, 3))});
    CAPTURE(step);
    CHECK((w.detach().to(torch::kDouble) - want_w).abs().max().item<double>() < 1e-5);
    CHECK((qkv.detach().to(torch::kDouble) - want_q).abs().max().item<double>() < 1e-5);
  }
  // a skipped step (a non-finite loss or norm) moves nothing: neither the weights nor the momentum
  const auto w2 = w.detach().clone(), qkv2 = qkv.detach().clone();
  auto buffers = [&] {
    std::vector<torch::Tensor> out;
    for (const auto& [key, state] : muon.state().state()) {
      out.push_back(static_cast<torch::optim::SGDParamState&>(*state).momentum_buffer().clone());
    }
    return out;
  };
  const auto before = buffers();
  w.mutable_grad() = torch::full({6, 4}, std::nan(""));
  muon.step(0.5, given_scale(1.0, /*skip=*/true), 2);
  CHECK(torch::equal(w.detach(), w2));
  CHECK(torch::equal(qkv.detach(), qkv2));
  const auto after = buffers();
  for (size_t i = 0; i < before.size(); ++i) {
    CHECK(torch::equal(after[i], before[i]));
  }
}

TEST_CASE("Muon's momentum warmup: 0.85 at step 0, the set momentum from the warmup's last step on") {
  auto w = torch::zeros({2, 2}, torch::requires_grad());
  MuonOptions o;
  o.momentum = 0.95;
  o.momentum_warmup = 10;
  Muon muon({w}, {1}, o);
  CHECK(muon.momentum_at(0) == doctest::Approx(0.85));
  CHECK(muon.momentum_at(5) == doctest::Approx(0.90));
  CHECK(muon.momentum_at(10) == doctest::Approx(0.95));
  CHECK(muon.momentum_at(1000) == doctest::Approx(0.95));
  o.momentum_warmup = 0;
  CHECK(Muon({w}, {1}, o).momentum_at(0) == doctest::Approx(0.95));
  o.momentum = 0;  // plain orthogonalised SGD: allowed
  CHECK(Muon({w}, {1}, o).momentum_at(0) == 0.0);
}

TEST_CASE("train.optimizer: muon: the blocks' matrices on Muon, everything else on AdamW, and it trains") {
  auto data = test::synthetic_data();
  const RunConfig c = test::tiny_muon_config();
  Trainer t(c, data);
  // AdamW holds the embeddings, the head, the biases and the norms: no 2-D weight of a block
  int64_t adamw_matrices = 0, adamw_params = 0;
  for (const auto& group : t.optimizer().param_groups()) {
    for (const auto& p : group.params()) {
      ++adamw_params;
      adamw_matrices += p.dim() == 2 ? 1 : 0;
    }
  }
  CHECK(adamw_matrices == 3);  // wte, wpe and lm_head
  CHECK(adamw_params == static_cast<int64_t>(t.model()->parameters().size()) - 4 * c.model.n_layer);
  const double first = t.train_step().loss;
  double last = first;
  for (int i = 0; i < 10; ++i) {
    last = t.train_step().loss;
  }
  CHECK(last < first - 0.3);
  // with the same lr on AdamW, only the matrices' optimizer differs from an AdamW run's
  RunConfig adamw = c;
  adamw.train.optimizer = Optimizer::adamw;
  Trainer a(adamw, data);
  a.train_step();
  Trainer m(c, data);
  m.train_step();
  CHECK(torch::equal(a.model()->transformer->wte->weight, m.model()->transformer->wte->weight));
  CHECK_FALSE(torch::equal(a.model()->transformer->h[0]->as<Block>()->attn->c_attn->weight,
                           m.model()->transformer->h[0]->as<Block>()->attn->c_attn->weight));
}

TEST_CASE("Muon's keys are part of a run's identity only with train.optimizer: muon") {
  RunConfig c = test::tiny_config();
  c.data.dataset = "d";
  CHECK_FALSE(c.identity_json()["train"].contains("optimizer"));
  CHECK_FALSE(c.identity_json()["train"].contains("muon_lr"));
  RunConfig m = test::tiny_muon_config();
  m.data.dataset = "d";
  const auto j = m.identity_json()["train"];
  CHECK(j["optimizer"] == "muon");
  CHECK(j["muon_lr"] == 0.02);
  CHECK(j["muon_momentum"] == 0.95);
  CHECK(j["muon_momentum_warmup"] == 4);
}

TEST_CASE("Muon's options with 'optimizer: adamw' said are ignored (an intervention back to AdamW), unsaid refused") {
  test::TempDir dir;
  auto load = [&](const std::string& train) {
    std::ofstream(dir.str("c.yaml")) << "data: {dataset: d}\ntrain: {tokens: 1M, " << train << "}\n";
    return load_run_config(dir.str("c.yaml"));
  };
  const RunConfig back = load("optimizer: adamw, muon_lr: 0.05");
  CHECK(back.train.optimizer == Optimizer::adamw);
  CHECK_FALSE(back.identity_json()["train"].contains("muon_lr"));
  CHECK(back.identity_json() == load("optimizer: adamw").identity_json());
  CHECK_THROWS_AS(load("muon_lr: 0.05"), InputErrors);
}
