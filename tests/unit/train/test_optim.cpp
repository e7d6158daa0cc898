#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "helpers.h"
#include "kernels/adamw.h"
#include "train/sharded/state.h"
#include "train/trainer.h"
#include "train/optim.h"

using namespace sweep;

TEST_CASE("AdamW with zero gradients shrinks exactly the >=2-D weights, by lr·wd") {
  RunConfig c = test::tiny_config();
  c.model.tie_weights = true;
  c.train.lr = 0.1;
  c.train.weight_decay = 0.5;
  GPT g(c.model, 1);
  auto opt = make_adamw(g->parameters(), c.train);
  std::vector<torch::Tensor> before;
  for (auto& p : g->parameters()) {
    before.push_back(p.detach().clone());
    p.mutable_grad() = torch::zeros_like(p);
  }
  opt->step();
  int decayed = 0, kept = 0;
  auto params = g->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].dim() >= 2) {
      CHECK(torch::allclose(params[i], before[i] * (1.0 - 0.1 * 0.5), 1e-6, 0.0));
      ++decayed;
    } else {
      CHECK(torch::equal(params[i], before[i]));
      ++kept;
    }
  }
  // wte (= the tied head), wpe, per layer c_attn, attn.c_proj, c_fc, mlp.c_proj
  CHECK(decayed == 2 + 4 * c.model.n_layer);
  CHECK(kept > 0);
}

TEST_CASE("clipping: the logged norm is the pre-clip one, the scale brings it to max_norm") {
  std::vector<torch::Tensor> params{torch::zeros({3, 4}, torch::requires_grad()), torch::zeros({5}, torch::requires_grad()),
                                    torch::zeros({2}, torch::requires_grad())};  // the last one has no gradient
  params[0].mutable_grad() = torch::full({3, 4}, 2.0);  // norm² = 48
  params[1].mutable_grad() = torch::full({5}, 1.0);     // norm² = 5
  const double pre = std::sqrt(53.0);
  CHECK(grad_norm(params).item<double>() == doctest::Approx(pre));
  CHECK(params[0].grad().equal(torch::full({3, 4}, 2.0)));  // measured, not changed
  CHECK(grad_norm({}).item<double>() == 0.0);
  CHECK(clip_factor(pre, 0.0) == 1.0);    // 0 = off
  CHECK(clip_factor(pre, 100.0) == 1.0);  // below the limit: untouched
  CHECK(pre * clip_factor(pre, 1.0) == doctest::Approx(1.0).epsilon(1e-5));
  CHECK(pre * clip_factor(pre, 1.0) <= 1.0);
  // A diverged step is left for the caller to see, not scaled into something finite.
  CHECK(clip_factor(std::numeric_limits<double>::infinity(), 1.0) == 1.0);
  CHECK(clip_factor(std::nan(""), 1.0) == 1.0);
}

TEST_CASE("set_learning_rate reaches every parameter group") {
  auto opt = make_adamw({torch::zeros({2, 2}, torch::requires_grad()), torch::zeros({2}, torch::requires_grad())},
                        test::tiny_config().train);
  set_learning_rate(*opt, 0.123);
  for (auto& g : opt->param_groups()) {
    CHECK(static_cast<torch::optim::AdamWOptions&>(g.options()).lr() == doctest::Approx(0.123));
  }
}

TEST_CASE("the gradient norm by _foreach_norm is bitwise the per-tensor norms' norm it replaced") {
  GPT g(test::tiny_config().model, 3);
  auto params = g->parameters();
  torch::manual_seed(5);
  std::vector<torch::Tensor> norms;
  for (auto& p : params) {
    p.mutable_grad() = torch::randn_like(p) * 0.37;
    norms.push_back(p.grad().to(torch::kFloat).norm(2));
  }
  const double before = torch::stack(norms).norm(2).item<double>();  // the code it replaced
  CHECK(grad_norm(params).item<double>() == before);
}

TEST_CASE("the step's rule on the device: the clip factor is clip_factor's to the bit, the skip is set by a non-finite loss or norm") {
  const auto loss = torch::full({1}, 2.5, torch::kDouble);
  for (const double max_norm : {0.0, 1.0, 3.0}) {
    for (const double n : {0.25, 1.0, 2.9999, 3.0, 17.3, std::numeric_limits<double>::infinity(), std::nan("")}) {
      CAPTURE(max_norm);
      CAPTURE(n);
      const torch::Tensor norm = torch::full({}, n, torch::kFloat);  // as grad_norm gives it
      const StepScale s = step_scale(loss, norm, max_norm);
      CHECK(s.factor_on_host() == clip_factor(norm.item<double>(), max_norm));
      CHECK(s.skipped() == !std::isfinite(n));
    }
  }
  CHECK(step_scale(torch::full({1}, std::nan(""), torch::kDouble), torch::full({}, 1.0f), 1.0).skipped());
  CHECK(step_scale(torch::full({1}, -std::numeric_limits<double>::infinity(), torch::kDouble), torch::full({}, 1.0f), 0.0).skipped());
}

namespace {

// A tiny fp32 run whose AdamW takes `path` (its model ops fused, as a CPU run's are), clipped at 0.5
// so that most steps clip.
std::unique_ptr<Trainer> trainer_on(AdamWPath path, const std::shared_ptr<TrainData>& data, RunConfig c = test::tiny_config()) {
  c.train.grad_clip = 0.5;
  c.train.weight_decay = 0.1;
  auto t = std::make_unique<Trainer>(c, data);
  t->state().set_adamw_path(path);
  return t;
}

}  // namespace

TEST_CASE("AdamW's three paths are one set of equations: 80 fp32 steps of _fused_adamw_ and the fused kernel equal LibTorch's AdamW within 1e-6") {
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_config();
  c.train.tokens = c.tokens_per_step() * 80;
  auto reference = trainer_on(AdamWPath::per_tensor, data, c);
  const auto want = test::losses(*reference, 80);
  const auto want_params = test::flat_params(reference->model());
  for (const AdamWPath path : {AdamWPath::foreach, AdamWPath::fused_cpu}) {
    const std::string path_name = to_string(path);
    CAPTURE(path_name);
    auto t = trainer_on(path, data, c);
    CHECK(t->state().adamw_path() == path);
    const auto got = test::losses(*t, 80);
    MESSAGE(path_name, " against per-tensor over 80 steps: max relative loss difference ", test::max_relative_difference(got, want));
    CHECK(test::max_relative_difference(got, want) < 1e-6);
    const auto params = test::flat_params(t->model());
    const double drift = (params - want_params).abs().max().item<double>();
    MESSAGE(path_name, ": the weights' largest difference after 80 steps ", drift);
    CHECK(drift < 1e-6);
  }
}

TEST_CASE("automatic AdamW: the fused kernel on the CPU with train.fused, LibTorch's without — _fused_adamw_ on a GPU") {
  CHECK(resolve_adamw_path(AdamWPath::automatic, torch::kCPU, true) == AdamWPath::fused_cpu);
  CHECK(resolve_adamw_path(AdamWPath::automatic, torch::kCPU, false) == AdamWPath::per_tensor);
  CHECK(resolve_adamw_path(AdamWPath::automatic, torch::Device("cuda:0"), true) == AdamWPath::foreach);
  CHECK(resolve_adamw_path(AdamWPath::automatic, torch::Device("cuda:0"), false) == AdamWPath::foreach);
  CHECK(resolve_adamw_path(AdamWPath::per_tensor, torch::Device("cuda:0"), true) == AdamWPath::per_tensor);
}

TEST_CASE("a non-finite gradient norm or loss skips the step on every path: the weights and the moments stay") {
  for (const AdamWPath path : {AdamWPath::per_tensor, AdamWPath::fused_cpu, AdamWPath::foreach}) {
    const std::string path_name = to_string(path);
    CAPTURE(path_name);
    GPT g(test::tiny_config().model, 1);
    auto params = g->parameters();
    auto opt = make_adamw(params, test::tiny_config().train);
    for (auto& p : params) {
      p.mutable_grad() = torch::ones_like(p);
    }
    adamw_step(*opt, step_scale(torch::ones({1}), grad_norm(params), 1.0), path);  // moments exist
    std::vector<torch::Tensor> before, moments;
    for (auto& p : params) {
      before.push_back(p.detach().clone());
      moments.push_back(kernels::adamw_state(*opt, p).exp_avg().clone());
    }
    params[3].mutable_grad()[0] = std::nan("");
    const StepScale scale = step_scale(torch::ones({1}), grad_norm(params), 1.0);
    CHECK(scale.skipped());
    adamw_step(*opt, scale, path);
    params[3].mutable_grad()[0] = 1.0;
    adamw_step(*opt, step_scale(torch::full({1}, std::numeric_limits<double>::infinity()), grad_norm(params), 1.0), path);
    for (size_t i = 0; i < params.size(); ++i) {
      CHECK(torch::equal(params[i], before[i]));
      CHECK(torch::equal(kernels::adamw_state(*opt, params[i]).exp_avg(), moments[i]));
      CHECK(kernels::adamw_state(*opt, params[i]).step() == 3);  // the two skipped steps count, on every path
    }
  }
}

TEST_CASE("_fused_adamw_ takes parameters whose step counts differ within a group (as a checkpoint may hold them), each at its own") {
  std::vector<torch::Tensor> params{torch::ones({2, 3}, torch::requires_grad()), torch::ones({4, 2}, torch::requires_grad())};
  auto fused = make_adamw(params, test::tiny_config().train);
  std::vector<torch::Tensor> copies{params[0].detach().clone().requires_grad_(true), params[1].detach().clone().requires_grad_(true)};
  auto reference = make_adamw(copies, test::tiny_config().train);
  for (auto* opt : {fused.get(), reference.get()}) {  // the first weight 5 steps in, the second 2
    const auto& ps = opt == fused.get() ? params : copies;
    kernels::set_adamw_state(*opt, ps[0], 5, torch::full({2, 3}, 0.1), torch::full({2, 3}, 0.01));
    kernels::set_adamw_state(*opt, ps[1], 2, torch::full({4, 2}, 0.2), torch::full({4, 2}, 0.02));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].mutable_grad() = torch::full_like(params[i], 0.5);
    copies[i].mutable_grad() = torch::full_like(copies[i], 0.5);
  }
  adamw_step(*fused, step_scale(torch::ones({1}), grad_norm(params), 0.0), AdamWPath::foreach);
  adamw_step(*reference, step_scale(torch::ones({1}), grad_norm(copies), 0.0), AdamWPath::per_tensor);
  for (size_t i = 0; i < params.size(); ++i) {
    CHECK(torch::allclose(params[i], copies[i], 1e-6, 1e-7));
  }
  CHECK(kernels::adamw_state(*fused, params[0]).step() == 6);
  CHECK(kernels::adamw_state(*fused, params[1]).step() == 3);
}

TEST_CASE("a checkpoint written by LibTorch's AdamW goes on under _fused_adamw_ as it would have (the state's layout is one)") {
  test::TempDir dir;
  auto data = test::synthetic_data();
  auto straight = trainer_on(AdamWPath::per_tensor, data);
  const auto want = test::losses(*straight, 6);
  std::vector<double> got;
  {
    auto first = trainer_on(AdamWPath::per_tensor, data);
    got = test::losses(*first, 3);
    first->save(dir.str("ckpt.pt"));
  }
  auto second = trainer_on(AdamWPath::foreach, data);
  CHECK(second->load(dir.str("ckpt.pt")).empty());
  const auto rest = test::losses(*second, 3);
  got.insert(got.end(), rest.begin(), rest.end());
  CHECK(test::max_relative_difference(got, want) < 1e-6);
  // and back: its state written by the foreach path loads into LibTorch's
  second->save(dir.str("ckpt2.pt"));
  auto third = trainer_on(AdamWPath::per_tensor, data);
  third->load(dir.str("ckpt2.pt"));
  CHECK(kernels::adamw_state(static_cast<torch::optim::AdamW&>(third->optimizer()), third->model()->parameters().front()).step() == 6);
}

TEST_CASE("Muon, and the experts' AdamW under expert statistics, step under the device's rule as under the host's") {
  auto data = test::synthetic_data();
  for (RunConfig c : {test::tiny_muon_config(), test::tiny_deepseek_config(Balance::bias)}) {
    const std::string family = to_string(c.model.family);
    CAPTURE(family);
    c.train.tokens = c.tokens_per_step() * 10;
    auto a = trainer_on(AdamWPath::per_tensor, data, c), b = trainer_on(AdamWPath::foreach, data, c);
    CHECK(test::max_relative_difference(test::losses(*b, 10), test::losses(*a, 10)) < 1e-6);
  }
}

// CapturedAdamW keeps its rate and step counts on the device, as a replayed graph reads them
TEST_CASE("a captured step's AdamW stepped eagerly is the foreach path to the bit") {
  const RunConfig c = test::tiny_config();
  GPT a(c.model, 1), b(c.model, 1);
  auto pa = a->parameters(), pb = b->parameters();
  auto opt_a = make_adamw(pa, c.train), opt_b = make_adamw(pb, c.train);
  // The same gradients to both, one of them not finite at step 3 — written into the gradients a
  // step has (as backward accumulates into them): the captured lists hold those tensors.
  auto give = [&](int step) {
    for (size_t i = 0; i < pa.size(); ++i) {
      const torch::Tensor g = torch::sin(pa[i].detach() * (step + 1) + static_cast<double>(i));
      if (step == 0) {
        pa[i].mutable_grad() = g.clone();
        pb[i].mutable_grad() = g.clone();
      } else {
        pa[i].mutable_grad().copy_(g);
        pb[i].mutable_grad().copy_(g);
      }
      if (step == 3 && i == 2) {
        pa[i].mutable_grad()[0] = std::nan("");
        pb[i].mutable_grad()[0] = std::nan("");
      }
    }
  };
  give(0);  // a first step: the moments exist, as after a captured step's warm-up
  adamw_step(*opt_a, step_scale(torch::ones({1}), grad_norm(pa), 0.5), AdamWPath::foreach);
  adamw_step(*opt_b, step_scale(torch::ones({1}), grad_norm(pb), 0.5), AdamWPath::foreach);
  CapturedAdamW captured(*opt_b);
  for (int step = 1; step <= 6; ++step) {
    CAPTURE(step);
    const double lr = 1e-3 * step;  // the schedule moves between replays
    give(step);
    set_learning_rate(*opt_a, lr);
    adamw_step(*opt_a, step_scale(torch::ones({1}), grad_norm(pa), 0.5), AdamWPath::foreach);
    captured.set_learning_rate(lr);
    captured.step(step_scale(torch::ones({1}), grad_norm(pb), 0.5));
    captured.counted();
  }
  for (size_t i = 0; i < pa.size(); ++i) {
    CHECK(torch::equal(pa[i], pb[i]));
    const auto &sa = kernels::adamw_state(*opt_a, pa[i]), &sb = kernels::adamw_state(*opt_b, pb[i]);
    CHECK(torch::equal(sa.exp_avg(), sb.exp_avg()));
    CHECK(torch::equal(sa.exp_avg_sq(), sb.exp_avg_sq()));
    CHECK(sb.step() == 7);  // the host's count, for checkpoints: the skipped step counts
  }
  const auto& options = static_cast<torch::optim::AdamWOptions&>(opt_b->param_groups().front().options());
  CHECK(options.lr() == doctest::Approx(6e-3));
}
