#include "train/score_model.h"

#include <cmath>

#include "data/dataset.h"
#include "data/tokens.h"
#include "train/evaluate_loss.h"
#include "train/export.h"
#include "train/precision.h"
#include "util/error.h"
#include "util/fs.h"

namespace sweep {

namespace {

[[noreturn]] void bad(const std::string& what) { throw Error(what, Exit::bad_input); }

const torch::Tensor& need(const StateDict& dict, const std::string& name, int64_t dims, const std::string& path) {
  const auto it = dict.find(name);
  if (it == dict.end()) {
    bad(path + " has no tensor '" + name + "' — not a GPT-2/nanoGPT state dict (for sweep's other families pass "
               "--config with the run's config.yaml)");
  }
  if (it->second.dim() != dims) {
    bad(path + ": '" + name + "' has shape " + c10::str(it->second.sizes()) + ", a " + std::to_string(dims) +
        "-dimensional tensor expected");
  }
  return it->second;
}

// Whether the shapes are one of the published GPT-2 models' (small, medium, large, XL; the
// vocabulary as published or padded as nanoGPT pads it): their heads are 64 wide.
bool published_gpt2(const ModelConfig& m) {
  const bool shape = (m.n_layer == 12 && m.n_embd == 768) || (m.n_layer == 24 && m.n_embd == 1024) ||
                     (m.n_layer == 36 && m.n_embd == 1280) || (m.n_layer == 48 && m.n_embd == 1600);
  return shape && m.block_size == 1024 && (m.vocab_size == 50257 || m.vocab_size == 50304);
}

ModelConfig infer_gpt2_config(const StateDict& dict, int64_t n_head, const std::map<std::string, int64_t>& model_args,
                              const std::string& path) {
  ModelConfig m;
  const torch::Tensor wte = need(dict, "transformer.wte.weight", 2, path);
  const torch::Tensor wpe = need(dict, "transformer.wpe.weight", 2, path);
  m.vocab_size = wte.size(0);
  m.pad_vocab_to = 1;  // the rows as they are (GPT-2's 50257, nanoGPT's padded 50304)
  m.n_embd = wte.size(1);
  m.block_size = wpe.size(0);
  if (m.vocab_size < 1 || m.n_embd < 1 || m.block_size < 1) {  // a model of no size (a zero-row position table hung)
    bad(path + ": 'transformer.wte.weight' is " + c10::str(wte.sizes()) + " and 'transformer.wpe.weight' " +
        c10::str(wpe.sizes()) + " — a vocabulary, width and context of at least 1 each are needed");
  }
  if (wpe.size(1) != m.n_embd) {
    bad(path + ": 'transformer.wpe.weight' is " + c10::str(wpe.sizes()) + ", its width differs from wte's " +
        std::to_string(m.n_embd));
  }
  m.n_layer = 0;
  while (dict.count("transformer.h." + std::to_string(m.n_layer) + ".attn.c_attn.weight")) {
    ++m.n_layer;
  }
  if (m.n_layer == 0) {
    bad(path + " has no tensor 'transformer.h.0.attn.c_attn.weight' — not a GPT-2/nanoGPT state dict");
  }
  // The head count is in no tensor's shape: given, in a nanoGPT checkpoint's model_args, or
  // GPT-2's 64-wide heads for the published GPT-2 shapes; never guessed otherwise.
  const auto args_heads = model_args.find("n_head");
  if (n_head > 0) {
    m.n_head = n_head;
  } else if (args_heads != model_args.end()) {
    m.n_head = args_heads->second;
  } else if (published_gpt2(m)) {
    m.n_head = m.n_embd / 64;
  } else {
    bad(path + ": its head count is in none of its tensors (" + std::to_string(m.n_layer) + " layers, width " +
        std::to_string(m.n_embd) + ": no published GPT-2 shape) — pass it: --n-head N (a sweep export: the run's "
        "model.n_head), or the run's config (--config)");
  }
  if (m.n_head < 1 || m.n_embd % m.n_head != 0) {
    bad(path + ": width " + std::to_string(m.n_embd) + " is not divisible into " + std::to_string(m.n_head) +
        " heads — pass a head count that divides it (--n-head)");
  }
  if (!dict.count("transformer.h.0.mlp.c_fc.bias") || !dict.count("transformer.h.0.ln_1.bias")) {
    bad(path + " has no linear or LayerNorm biases (nanoGPT's bias=False): sweep's gpt2 family has them, as GPT-2 "
               "does — such a model cannot be scored");
  }
  m.qkv_bias = dict.count("transformer.h.0.attn.c_attn.bias") > 0;
  const torch::Tensor fc = need(dict, "transformer.h.0.mlp.c_fc.weight", 2, path);
  m.intermediate_size = fc.size(0) == 4 * m.n_embd ? 0 : fc.size(0);
  const auto head = dict.find("lm_head.weight");
  m.tie_weights = head == dict.end() || (head->second.sizes() == wte.sizes() && torch::equal(head->second, wte));
  m.dropout = 0;
  return m;
}

}  // namespace

Score score_model(const ScoreOptions& o) {
  if (o.split != "train" && o.split != "val" && o.split != "test") {
    bad("--split " + o.split + ": expected train, val or test");
  }
  const DatasetInfo info = read_dataset(o.data);
  std::map<std::string, int64_t> model_args;
  const StateDict dict = read_state_dict(o.model, &model_args);
  Score score;
  RunConfig run;  // the kernels a run evaluates with: the run's, or the default
  if (o.config.empty()) {
    score.model = infer_gpt2_config(dict, o.n_head, model_args, o.model);
  } else {
    run = load_run_config(o.config);
    score.model = run.model;
    score.model.dropout = 0;
    if (score.model.vocab_size == 0) {
      score.model.vocab_size = info.vocab_size;
    }
  }
  // Before the model is built: the shapes read from the file must describe what the file holds
  // (a crafted 1 MB file could ask for a model of 10^11 parameters), within contexts sweep scores.
  if (score.model.block_size > k_max_score_context) {
    bad(o.model + ": a context of " + std::to_string(score.model.block_size) + " tokens — sweep scores models of "
        "contexts up to " + std::to_string(k_max_score_context));
  }
  const ModelConfig built = score.model.resolved();
  if (model_size(built).total > stored_elements(dict)) {
    bad(o.model + ": its tensors' shapes describe a model of " + std::to_string(model_size(built).total) +
        " parameters, the file holds " + std::to_string(stored_elements(dict)) + " values — damaged or crafted");
  }
  if (score.model.padded_vocab() < info.vocab_size) {
    bad(o.model + ": its vocabulary has " + std::to_string(score.model.padded_vocab()) + " tokens, the dataset " + o.data +
        " has " + std::to_string(info.vocab_size) + " — score it on data of its own tokenizer");
  }
  configure_matmul_precision(o.precision);
  GPT model(score.model, 0);
  model->set_fused(run.train.fused);
  import_state_dict(model, dict, o.model, o.ignore_extra);
  score.parameters = model->num_params();
  const ShardTokens tokens(info, o.split);
  if (tokens.size() < 2) {
    bad((fs::path(o.data) / "dataset.yaml").string() + ": the " + o.split + " split has " + std::to_string(tokens.size()) +
        " tokens — nothing to score");
  }
  const EvalLoss loss = evaluate_loss(model, tokens, o.tokens, o.batch, o.precision, torch::kCPU);
  score.tokens = loss.count;
  score.loss = loss.mean();
  if (!std::isfinite(score.loss)) {  // finite weights that overflow: a number that would mean nothing
    bad(o.model + ": its loss on the " + o.split + " split is " + (std::isnan(score.loss) ? "NaN" : "infinite") +
        " — its weights overflow on this data; nothing to score");
  }
  const int64_t bytes = info.splits.at(o.split).bytes;
  if (bytes > 0 && (o.tokens <= 0 || o.tokens >= tokens.size())) {
    score.bpb = loss.sum_nats / (std::log(2.0) * static_cast<double>(bytes));
  }
  return score;
}

}  // namespace sweep
