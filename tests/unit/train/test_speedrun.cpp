// The NanoGPT speedrun's architecture switches (model.qk_norm, model.mlp_activation: relu2,
// model.zero_init_proj, model.logit_softcap), each against its equations written out here. The
// equivalences (accumulation, data parallel, resume, fused = reference, recompute) run on
// test::tiny_speedrun_config through test::families() and the resume and data-parallel tests.
#include <doctest/doctest.h>

#include <fstream>

#include "helpers.h"
#include "kernels/cross_entropy.h"
#include "train/trainer.h"

using namespace sweep;

namespace {

// Causal attention of q, k, v (B, nh, T, hs), written out.
torch::Tensor causal_softmax_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const int64_t T = q.size(2);
  auto att = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  const auto mask = torch::ones({T, T}, torch::kBool).tril().logical_not();
  return torch::matmul(torch::softmax(att.masked_fill(mask, -std::numeric_limits<float>::infinity()), -1), v);
}

}  // namespace

TEST_CASE("QK-norm: each head's query and key scaled to unit RMS before the scores, on the fused and the reference path") {
  ModelConfig m = test::tiny_config().model;
  m.qk_norm = true;
  m.qkv_bias = true;
  m.vocab_size = 50;
  for (const bool fused : {true, false}) {
    CAPTURE(fused);
    GPT g(m, 1);
    g->set_fused(fused);
    auto& attn = *g->transformer->h[0]->as<Block>()->attn;
    torch::manual_seed(9);
    const int64_t B = 3, T = 11, C = m.n_embd, nh = m.n_head, hs = C / nh;
    auto x = (torch::randn({B, T, C}) * 3).requires_grad_(true);
    auto x_ref = x.detach().clone().requires_grad_(true);
    auto qkv = attn.c_attn->forward(x_ref).split(C, 2);
    auto heads = [&](const torch::Tensor& t) { return t.view({B, T, nh, hs}).transpose(1, 2); };
    auto unit = [](const torch::Tensor& t) { return t / torch::sqrt(t.pow(2).mean(-1, true) + 1e-6); };
    const auto y = causal_softmax_attention(unit(heads(qkv[0])), unit(heads(qkv[1])), heads(qkv[2]));
    const auto ref = attn.c_proj->forward(y.transpose(1, 2).reshape({B, T, C}));
    const auto got = attn.forward(x);
    CHECK(torch::allclose(got, ref, 1e-5, 1e-6));
    const auto w = torch::randn({B, T, C});
    (got * w).sum().backward();
    (ref * w).sum().backward();
    CHECK(torch::allclose(x.grad(), x_ref.grad(), 1e-4, 1e-6));
    // the scores no longer grow with the projections: scaling c_attn's Q and K rows changes nothing
    torch::NoGradGuard no_grad;
    const auto before = attn.forward(x);
    attn.c_attn->weight.narrow(0, 0, 2 * C).mul_(10);
    attn.c_attn->bias.narrow(0, 0, 2 * C).mul_(10);
    CHECK(torch::allclose(attn.forward(x), before, 1e-4, 1e-5));
  }
}

TEST_CASE("ReLU² MLP: c_proj(relu(c_fc x)²), and its default width 4C") {
  ModelConfig m = test::tiny_config().model;
  m.mlp_activation = MlpActivation::relu2;
  m.vocab_size = 50;
  CHECK(m.resolved().intermediate_size == 4 * m.n_embd);
  for (const bool fused : {true, false}) {
    CAPTURE(fused);
    GPT g(m, 1);
    g->set_fused(fused);
    auto& mlp = *g->transformer->h[0]->as<Block>()->mlp;
    torch::manual_seed(4);
    const auto x = torch::randn({2, 5, m.n_embd}) * 2;
    const auto h = torch::relu(torch::nn::functional::linear(x, mlp.c_fc->weight, mlp.c_fc->bias));
    const auto ref = torch::nn::functional::linear(h * h, mlp.c_proj->weight, mlp.c_proj->bias);
    CHECK(torch::allclose(mlp.forward(x), ref, 1e-5, 1e-6));
  }
}

TEST_CASE("zero-initialised projections: every residual projection 0 at step 0, the rest as GPT-2's, and they train") {
  RunConfig c = test::tiny_config();
  c.model.vocab_size = 50;
  RunConfig z = c;
  z.model.zero_init_proj = true;
  GPT plain(c.model, 1), zeroed(z.model, 1);
  const auto p = plain->named_parameters(), q = zeroed->named_parameters();
  int zeros = 0;
  for (const auto& item : q) {
    CAPTURE(item.key());
    if (item.key().find("c_proj.weight") != std::string::npos) {
      CHECK(item.value().abs().max().item<float>() == 0.0f);
      ++zeros;
    } else {
      CHECK(torch::equal(item.value(), p[item.key()]));  // the same draws as without the switch
    }
  }
  CHECK(zeros == 2 * c.model.n_layer);  // attention's and the MLP's output, in each block
  auto data = test::synthetic_data();
  Trainer t(z, data);
  t.train_step();
  CHECK(t.model()->transformer->h[0]->as<Block>()->mlp->c_proj->weight.abs().max().item<float>() > 0);
}

TEST_CASE("logit soft-cap: forward gives cap · tanh(logits / cap), and the fused and the reference loss are its cross-entropy") {
  ModelConfig m = test::tiny_config().model;
  m.vocab_size = 50;
  m.logit_softcap = 2;
  GPT g(m, 1);
  ModelConfig uncapped = m;
  uncapped.logit_softcap = 0;
  GPT plain(uncapped, 1);  // the same weights: the cap has none
  const auto idx = torch::randint(50, {2, 16}, torch::kLong), targets = torch::randint(50, {2, 16}, torch::kLong);
  {
    torch::NoGradGuard no_grad;
    plain->lm_head->weight.mul_(100);  // logits far into the tanh's bend
    g->lm_head->weight.copy_(plain->lm_head->weight);
  }
  const auto raw = plain->forward(idx);
  CHECK(raw.abs().max().item<float>() > 4);
  const auto capped = g->forward(idx);
  CHECK(torch::allclose(capped, 2 * torch::tanh(raw / 2), 1e-5, 1e-6));
  CHECK(capped.abs().max().item<float>() <= 2);  // tanh rounds to 1 in fp32 far out
  const double want = torch::nn::functional::cross_entropy(capped.reshape({-1, capped.size(-1)}), targets.reshape({-1}))
                          .item<double>();
  for (const bool fused : {true, false}) {
    CAPTURE(fused);
    g->set_fused(fused);
    CHECK(g->loss(idx, targets).item<double>() == doctest::Approx(want).epsilon(1e-6));
  }
}

TEST_CASE("the speedrun's switches are part of a run's identity only when on") {
  RunConfig c = test::tiny_config();
  c.data.dataset = "d";
  const auto before = c.identity_json();
  for (const char* key : {"qk_norm", "zero_init_proj", "logit_softcap"}) {
    CHECK_FALSE(before["model"].contains(key));
  }
  RunConfig on = test::tiny_speedrun_config();
  on.data.dataset = "d";
  const auto j = on.identity_json();
  CHECK(j["model"]["qk_norm"] == true);
  CHECK(j["model"]["zero_init_proj"] == true);
  CHECK(j["model"]["logit_softcap"] == 3.0);
  CHECK(j["model"]["mlp_activation"] == "relu2");
}

TEST_CASE("logit_softcap: none is no cap (an intervention can take a base's away)") {
  test::TempDir dir;
  std::ofstream(dir.str("c.yaml")) << "data: {dataset: d}\ntrain: {tokens: 1M}\nmodel: {logit_softcap: none}\n";
  const RunConfig c = load_run_config(dir.str("c.yaml"));
  CHECK(c.model.logit_softcap == 0);
  CHECK_FALSE(c.identity_json()["model"].contains("logit_softcap"));
}
