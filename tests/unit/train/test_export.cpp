#include <doctest/doctest.h>

#include <fstream>
#include <limits>

#include "data/prepare.h"
#include "helpers.h"
#include "train/export.h"
#include "train/score_model.h"
#include "util/fs.h"

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

namespace {

// A bytes dataset of a few documents, for scoring.
std::string bytes_dataset(const test::TempDir& dir) {
  std::filesystem::create_directories(dir.path / "in");
  for (int d = 0; d < 20; ++d) {
    std::ofstream(dir.path / "in" / ("doc" + std::to_string(d) + ".txt")) << std::string(400, static_cast<char>('a' + d % 26));
  }
  PrepareOptions o;
  o.input = dir.str("in");
  o.out = dir.str("data");
  o.val_fraction = 0.1;
  o.test_fraction = 0.1;
  prepare_dataset(o);
  return o.out;
}

void save_dict(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, t] : tensors) {
    dict.insert(name, t);
  }
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
  write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
}

}  // namespace

TEST_CASE("eval refuses what it cannot score honestly: non-finite weights, extra tensors, no head count, no size") {
  auto data = test::synthetic_data(256);
  RunConfig c = test::tiny_config();
  c.model.vocab_size = 256;
  c.model.n_embd = 64;  // 2 heads of 32: once scored silently as one 64-wide head
  Trainer t(c, data);
  test::TempDir dir;
  const std::string dataset = bytes_dataset(dir);
  auto sd = nanogpt_state_dict(t.model());
  const std::string good = dir.str("good.pt");
  save_dict(good, sd);
  ScoreOptions o;
  o.model = good;
  o.data = dataset;
  // the head count: in no tensor, so never guessed
  CHECK(test::bad_input_message([&] { score_model(o); }).find("its head count is in none of its tensors (2 layers, width 64") !=
        std::string::npos);
  o.n_head = 2;
  const double loss = score_model(o).loss;
  CHECK(std::isfinite(loss));
  // non-finite weights
  auto nan = sd;
  nan[3].second = nan[3].second.clone();
  nan[3].second.view({-1})[5] = std::numeric_limits<float>::quiet_NaN();
  nan[3].second.view({-1})[6] = std::numeric_limits<float>::infinity();
  save_dict(dir.str("nan.pt"), nan);
  o.model = dir.str("nan.pt");
  CHECK(test::bad_input_message([&] { score_model(o); })
            .find("nan.pt: tensor '" + nan[3].first + "' holds 2 non-finite values (NaN or ±inf)") != std::string::npos);
  // finite weights that overflow: no loss printed, as a reference neither (it failed on the database)
  auto huge = sd;
  huge[0].second = huge[0].second * 1e37;
  save_dict(dir.str("huge.pt"), huge);
  o.model = dir.str("huge.pt");
  CHECK(test::bad_input_message([&] { score_model(o); }).find("huge.pt: its loss on the test split is") !=
        std::string::npos);
  // a tensor the model does not have (another architecture's); nanoGPT's attention masks are not such
  auto more = sd;
  more.emplace_back("transformer.h.0.attn.q_norm.weight", torch::ones({64}));
  more.emplace_back("transformer.h.0.attn.bias", torch::ones({1, 1, 16, 16}).tril());
  save_dict(dir.str("more.pt"), more);
  o.model = dir.str("more.pt");
  CHECK(test::bad_input_message([&] { score_model(o); })
            .find("holds tensor 'transformer.h.0.attn.q_norm.weight', which the model does not have (1 such)") !=
        std::string::npos);
  o.ignore_extra = true;
  CHECK(score_model(o).loss == doctest::Approx(loss).epsilon(1e-12));
  o.ignore_extra = false;
  // shapes that describe a model far bigger than the file (a crafted file asked for 10^11 parameters):
  // refused before the model is built
  auto layers = sd;
  for (int l = 2; l < 200; ++l) {
    layers.emplace_back("transformer.h." + std::to_string(l) + ".attn.c_attn.weight", torch::zeros({1}));
  }
  save_dict(dir.str("layers.pt"), layers);
  o.model = dir.str("layers.pt");
  CHECK(test::bad_input_message([&] { score_model(o); }).find("its tensors' shapes describe a model of") !=
        std::string::npos);
  // a position table of zero rows (it hung): refused, as are a width and a vocabulary of 0
  auto empty = sd;
  for (auto& [name, tensor] : empty) {
    if (name == "transformer.wpe.weight") {
      tensor = torch::zeros({0, 64});
    }
  }
  save_dict(dir.str("empty.pt"), empty);
  o.model = dir.str("empty.pt");
  CHECK(test::bad_input_message([&] { score_model(o); }).find("a vocabulary, width and context of at least 1 each") !=
        std::string::npos);
}
