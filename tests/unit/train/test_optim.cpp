#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "helpers.h"
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
  CHECK(grad_norm(params) == doctest::Approx(pre));
  CHECK(params[0].grad().equal(torch::full({3, 4}, 2.0)));  // measured, not changed
  CHECK(grad_norm({}) == 0.0);
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
