#include <doctest/doctest.h>

#include <map>
#include <set>

#include "helpers.h"
#include "train/optim.h"
#include "train/precision.h"

using namespace sweep;

namespace {

GPT build(const ModelConfig& m, int64_t seed = 1) { return GPT(m, seed); }

torch::Tensor tokens(int64_t B, int64_t T, int64_t vocab, uint64_t seed = 5) {
  torch::manual_seed(seed);
  return torch::randint(vocab, {B, T}, torch::kLong);
}

}  // namespace

TEST_CASE("weight tying: one parameter, V·C fewer, seen once by the optimizer") {
  ModelConfig m = test::tiny_config().model;
  GPT untied = build(m);
  m.tie_weights = true;
  GPT tied = build(m);
  CHECK(untied->num_params() - tied->num_params() == m.padded_vocab() * m.n_embd);

  int shared = 0;
  for (const auto& p : tied->named_parameters()) {
    CHECK(p.key().find("lm_head") == std::string::npos);
    shared += p.value().data_ptr() == tied->transformer->wte->weight.data_ptr();
  }
  CHECK(shared == 1);
  CHECK(tied->head_weight().data_ptr() == tied->transformer->wte->weight.data_ptr());

  auto opt = make_adamw(tied->parameters(), test::tiny_config().train);
  std::set<void*> seen;
  size_t entries = 0;
  for (const auto& group : opt->param_groups()) {
    for (const auto& p : group.params()) {
      seen.insert(p.data_ptr());
      ++entries;
    }
  }
  CHECK(entries == seen.size());
  CHECK(entries == tied->parameters().size());
  CHECK(seen.count(tied->transformer->wte->weight.data_ptr()) == 1);
}

TEST_CASE("qkv_bias adds exactly 3·C·n_layer parameters") {
  ModelConfig m = test::tiny_config().model;
  m.n_layer = 3;
  const int64_t without = build(m)->num_params();
  m.qkv_bias = true;
  CHECK(build(m)->num_params() - without == 3 * m.n_embd * m.n_layer);
}

TEST_CASE("GPT-2 init: std 0.02, residual projections 0.02/sqrt(2·n_layer), zero biases") {
  ModelConfig m = test::tiny_config().model;
  m.n_embd = 128;
  m.n_layer = 8;
  GPT g = build(m);
  auto& block = *g->transformer->h[0]->as<Block>();
  CHECK(block.mlp->c_fc->weight.std().item<double>() == doctest::Approx(0.02).epsilon(0.02));
  CHECK(block.mlp->c_proj->weight.std().item<double>() == doctest::Approx(0.02 / 4.0).epsilon(0.02));
  CHECK(block.attn->c_proj->weight.std().item<double>() == doctest::Approx(0.02 / 4.0).epsilon(0.05));
  CHECK(block.mlp->c_fc->bias.abs().max().item<double>() == 0.0);
  CHECK(block.ln_1.layer->weight.min().item<double>() == 1.0);
  CHECK(g->transformer->wte->weight.std().item<double>() == doctest::Approx(0.02).epsilon(0.05));
}

// The pairing by seed that the report's paired tests rest on: interventions that add or drop
// parameters must not move the initial values of the parameters they share with the baseline.
TEST_CASE("init: with one init seed, baseline, qkv_bias and tie_weights share every common parameter exactly") {
  const ModelConfig base = test::tiny_config().model;
  ModelConfig with_bias = base, tied = base;
  with_bias.qkv_bias = true;
  tied.tie_weights = true;
  GPT reference = build(base, 3);
  std::map<std::string, torch::Tensor> initial;
  for (const auto& p : reference->named_parameters()) {
    initial.emplace(p.key(), p.value());
  }
  for (const ModelConfig& m : {with_bias, tied}) {
    CAPTURE(m.qkv_bias);
    GPT variant = build(m, 3);
    size_t shared = 0;
    for (const auto& p : variant->named_parameters()) {
      const auto it = initial.find(p.key());
      if (it == initial.end()) {
        CHECK(p.key().find("c_attn.bias") != std::string::npos);  // the only parameter qkv_bias adds
        continue;
      }
      CAPTURE(p.key());
      CHECK(torch::equal(p.value(), it->second));
      ++shared;
    }
    CHECK(shared == (m.tie_weights ? initial.size() - 1 : initial.size()));  // tying drops lm_head
  }
  // The seed and the name both matter: another seed, or another layer's same-shaped weight, differs.
  GPT other_seed = build(base, 4);
  CHECK_FALSE(torch::equal(other_seed->transformer->wte->weight, reference->transformer->wte->weight));
  auto& h0 = *reference->transformer->h[0]->as<Block>();
  auto& h1 = *reference->transformer->h[1]->as<Block>();
  CHECK_FALSE(torch::equal(h0.attn->c_attn->weight, h1.attn->c_attn->weight));
  // And nothing depends on the global generator's state when the model is built.
  torch::manual_seed(12345);
  CHECK(torch::equal(build(base, 3)->transformer->wte->weight, reference->transformer->wte->weight));
}

TEST_CASE("the manual causal attention path equals a masked-softmax reference") {
  ModelConfig m = test::tiny_config().model;
  m.qkv_bias = true;
  GPT g = build(m);
  auto& attn = *g->transformer->h[0]->as<Block>()->attn;
  torch::manual_seed(9);
  auto x = torch::randn({3, 11, m.n_embd});  // (B, T, C), T < block_size
  const int64_t B = 3, T = 11, C = m.n_embd, nh = m.n_head, hs = C / nh;
  auto qkv = attn.c_attn->forward(x).split(C, 2);
  auto q = qkv[0].view({B, T, nh, hs}).transpose(1, 2);
  auto k = qkv[1].view({B, T, nh, hs}).transpose(1, 2);
  auto v = qkv[2].view({B, T, nh, hs}).transpose(1, 2);
  auto att = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hs));
  auto mask = torch::ones({T, T}, torch::kBool).tril().logical_not();
  att = torch::softmax(att.masked_fill(mask, -std::numeric_limits<float>::infinity()), -1);
  auto ref = attn.c_proj->forward(torch::matmul(att, v).transpose(1, 2).contiguous().view({B, T, C}));
  CHECK(torch::allclose(attn.forward(x), ref, 1e-5, 1e-6));
}

TEST_CASE("dropout 0: train-mode forward is deterministic, dropout > 0: it depends on data_seed") {
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_config();
  const auto x = tokens(2, 16, 50);
  auto train_forward = [&](double dropout, int64_t data_seed) {
    c.model.dropout = dropout;
    c.seeds.data = data_seed;
    Trainer t(c, data);  // seeds the dropout stream from data_seed
    t.model()->train();
    torch::NoGradGuard no_grad;
    return t.model()->forward(x);
  };
  CHECK(torch::equal(train_forward(0.0, 1), train_forward(0.0, 2)));
  CHECK(torch::equal(train_forward(0.2, 1), train_forward(0.2, 1)));
  CHECK_FALSE(torch::equal(train_forward(0.2, 1), train_forward(0.2, 2)));
}

TEST_CASE("bf16 autocast: loss within 2% of fp32, master weights and gradients stay fp32") {
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_config();
  Trainer fp32(c, data);
  c.train.precision = Precision::bf16;
  Trainer bf16(c, data);
  const auto s32 = fp32.train_step();
  const auto s16 = bf16.train_step();
  CHECK(std::abs(s16.loss - s32.loss) / s32.loss < 0.02);
  for (const auto& p : bf16.model()->parameters()) {
    CHECK((p.scalar_type() == torch::kFloat));
  }
  auto [x, y] = bf16.batch(1, 0);
  {
    AutocastScope autocast(Precision::bf16, torch::kCPU);
    bf16.model()->loss(x, y).backward();
  }
  for (const auto& p : bf16.model()->parameters()) {
    CHECK((p.grad().scalar_type() == torch::kFloat));
  }
}

TEST_CASE("autocast sees in-place weight updates (its cast cache is cleared after each scope)") {
  GPT g = build(test::tiny_config().model);
  auto x = tokens(2, 8, 50);
  torch::NoGradGuard no_grad;
  torch::Tensor before, after;
  {
    AutocastScope autocast(Precision::bf16, torch::kCPU);
    before = g->forward(x);
  }
  g->lm_head->weight.mul_(2.0);  // what optimizer.step() does: an in-place update
  {
    AutocastScope autocast(Precision::bf16, torch::kCPU);
    after = g->forward(x);
  }
  CHECK((before.scalar_type() == torch::kBFloat16));
  CHECK(torch::allclose(after.to(torch::kFloat), 2.0 * before.to(torch::kFloat), 2e-2, 1e-2));
}
