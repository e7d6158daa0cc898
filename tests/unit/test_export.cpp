#include <doctest/doctest.h>

#include "helpers.h"
#include "train/export.h"

using namespace sweep;

// nanoGPT's GPT(GPTConfig(n_layer=2, n_head=2, n_embd=32, block_size=16, vocab_size=64, bias=True))
// state dict, in order, without the attn.bias mask buffers that PyTorch < 2.0 adds.
static std::vector<std::pair<std::string, std::vector<int64_t>>> nanogpt_names() {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out{{"transformer.wte.weight", {64, 32}},
                                                                {"transformer.wpe.weight", {16, 32}}};
  for (int i = 0; i < 2; ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    out.push_back({h + "ln_1.weight", {32}});
    out.push_back({h + "ln_1.bias", {32}});
    out.push_back({h + "attn.c_attn.weight", {96, 32}});
    out.push_back({h + "attn.c_attn.bias", {96}});
    out.push_back({h + "attn.c_proj.weight", {32, 32}});
    out.push_back({h + "attn.c_proj.bias", {32}});
    out.push_back({h + "ln_2.weight", {32}});
    out.push_back({h + "ln_2.bias", {32}});
    out.push_back({h + "mlp.c_fc.weight", {128, 32}});
    out.push_back({h + "mlp.c_fc.bias", {128}});
    out.push_back({h + "mlp.c_proj.weight", {32, 128}});
    out.push_back({h + "mlp.c_proj.bias", {32}});
  }
  out.push_back({"transformer.ln_f.weight", {32}});
  out.push_back({"transformer.ln_f.bias", {32}});
  out.push_back({"lm_head.weight", {64, 32}});
  return out;
}

TEST_CASE("export: nanoGPT's names and shapes, and reloading gives the same logits") {
  auto data = test::synthetic_data();
  RunConfig c = test::tiny_config();
  c.model.tie_weights = true;
  c.model.qkv_bias = true;
  Trainer t(c, data);
  t.train_step();  // trained weights, not the init

  const auto sd = nanogpt_state_dict(t.model());
  const auto expected = nanogpt_names();
  REQUIRE(sd.size() == expected.size());
  for (size_t i = 0; i < sd.size(); ++i) {
    CHECK(sd[i].first == expected[i].first);
    CHECK(sd[i].second.sizes().vec() == expected[i].second);
  }

  test::TempDir dir;
  export_state_dict(t.model(), dir.str("model.pt"));
  RunConfig fresh_cfg = c;
  fresh_cfg.seeds.init = 99;
  Trainer fresh(fresh_cfg, data);
  auto [x, y] = t.batch(3, 0);
  torch::NoGradGuard no_grad;
  t.model()->eval();
  fresh.model()->eval();
  CHECK_FALSE(torch::equal(fresh.model()->forward(x), t.model()->forward(x)));
  import_state_dict(fresh.model(), dir.str("model.pt"));
  CHECK(torch::equal(fresh.model()->forward(x), t.model()->forward(x)));
}
