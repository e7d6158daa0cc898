#include "config/run_config.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "util/process.h"
#include "util/text.h"

namespace sweep {

namespace {

constexpr int64_t k_max_int = std::numeric_limits<int64_t>::max();
constexpr double k_inf = std::numeric_limits<double>::infinity();

void read_model(MapReader r, ModelConfig& m) {
  r.read("n_layer", m.n_layer, 1, 1024);
  r.read("n_head", m.n_head, 1, 1024);
  r.read("n_embd", m.n_embd, 1, 65536);
  r.read("block_size", m.block_size, 1, 1 << 20);
  r.read("vocab_size", m.vocab_size, 0, 1 << 22);  // may exceed the data's (uint16) tokens: unused rows
  r.read("pad_vocab_to", m.pad_vocab_to, 1, 65536);
  r.read("dropout", m.dropout, 0.0, 1.0, false, true);
  r.read("qkv_bias", m.qkv_bias);
  r.read("tie_weights", m.tie_weights);
  r.read_choice("family", m.family);
  if (m.family == Family::deepseek) {  // DeepSeek-V2's choices, each still a switch below
    m.norm = Norm::rmsnorm;
    m.position = Position::rope;
    m.mlp_activation = MlpActivation::swiglu;
    m.attention = Attention::mla;
  }
  r.read_choice("norm", m.norm);
  r.read_choice("position", m.position);
  r.read_choice("mlp_activation", m.mlp_activation);
  r.read_choice("attention", m.attention);
  r.read("rope_theta", m.rope_theta, 1.0, k_inf);
  r.read("qk_norm", m.qk_norm);
  r.read("zero_init_proj", m.zero_init_proj);
  if (const YAML::Node cap = r.section("logit_softcap"); cap.IsDefined() && cap.IsScalar() && cap.Scalar() == "none") {
    m.logit_softcap = 0;  // none: an intervention can take a base's cap away
  } else {
    r.read("logit_softcap", m.logit_softcap, -k_inf, k_inf);  // its range: checked in check_model, with the fix
  }
  r.read("intermediate_size", m.intermediate_size, 0, 1 << 20);
  r.read("q_lora_rank", m.q_lora_rank, 0, 65536);
  r.read("kv_lora_rank", m.kv_lora_rank, 0, 65536);
  r.read("qk_nope_head_dim", m.qk_nope_head_dim, 0, 65536);
  r.read("qk_rope_head_dim", m.qk_rope_head_dim, 0, 65536);
  r.read("v_head_dim", m.v_head_dim, 0, 65536);
  r.read("n_routed_experts", m.n_routed_experts, 0, 4096);
  r.read("n_shared_experts", m.n_shared_experts, 0, 4096);
  r.read("moe_top_k", m.moe_top_k, 1, 4096);
  r.read("moe_intermediate_size", m.moe_intermediate_size, 0, 1 << 20);
  r.read("first_k_dense", m.first_k_dense, 0, 1024);
  r.read_choice("balance", m.balance);
  r.read("aux_loss_alpha", m.aux_loss_alpha, 0.0, k_inf);
  r.read("bias_update_speed", m.bias_update_speed, 0.0, k_inf);
  r.finish();
}

// The keys only the deepseek family has (a gpt2 config that names one is refused).
const std::vector<std::string> k_deepseek_keys{
    "q_lora_rank",      "kv_lora_rank",     "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim",       "n_routed_experts", "n_shared_experts", "moe_top_k",
    "moe_intermediate_size", "first_k_dense", "balance",        "aux_loss_alpha",
    "bias_update_speed"};

void read_data(MapReader r, DataConfig& d) {
  r.require("dataset", "the folder written by `sweep data prepare`, e.g. results/data/brown-sp4096");
  r.read("dataset", d.dataset);
  r.finish();
}

void read_train(MapReader r, TrainConfig& t) {
  r.read("micro_batch", t.micro_batch, 1, 1 << 20);
  r.read("grad_accum", t.grad_accum, 1, 1 << 20);
  r.require("tokens", "the token budget of the run, e.g. 5M");
  r.read_size("tokens", t.tokens, 1);
  r.read("lr", t.lr, 0.0, k_inf, true);
  r.read("min_lr", t.min_lr, 0.0, k_inf);
  r.read_choice("schedule", t.schedule);
  r.read("warmup", t.warmup, 0.0, k_inf);
  r.read("decay", t.decay, 0.0, 1.0);
  r.read("weight_decay", t.weight_decay, 0.0, k_inf);
  r.read("beta1", t.beta1, 0.0, 1.0, false, true);
  r.read("beta2", t.beta2, 0.0, 1.0, false, true);
  r.read("eps", t.eps, 0.0, k_inf, true);
  r.read("grad_clip", t.grad_clip, 0.0, k_inf);
  r.read_choice("optimizer", t.optimizer);
  r.read("muon_lr", t.muon_lr, 0.0, k_inf, true);
  r.read("muon_momentum", t.muon_momentum, 0.0, 1.0, false, true);
  r.read("muon_momentum_warmup", t.muon_momentum_warmup, 0, k_max_int);
  r.read_choice("precision", t.precision);
  r.read("fused", t.fused);
  r.read("cuda_kernels", t.cuda_kernels);
  r.read("cuda_graph", t.cuda_graph);
  r.read("activation_checkpointing", t.activation_checkpointing);
  r.finish();
}

void read_eval(MapReader r, EvalConfig& e) {
  r.read("every", e.every, 0, k_max_int);
  r.read_size("val_tokens", e.val_tokens, 2);
  r.read("checkpoint_every", e.checkpoint_every, 0, k_max_int);
  r.finish();
}

void read_seeds(MapReader r, SeedConfig& s) {
  r.read("init", s.init, 0, k_max_int);
  r.read("data", s.data, 0, k_max_int);
  r.finish();
}

void read_branch(MapReader r, BranchConfig& b) {
  r.read("from", b.from);
  r.read("step", b.step, 1, k_max_int);
  r.finish();
}

void read_resources(MapReader r, ResourceConfig& res) {
  YAML::Node threads = r.section("threads");
  if (threads.IsDefined() && threads.IsScalar() && threads.Scalar() == "auto") {
    res.threads = 0;
  } else {
    r.read("threads", res.threads, 1, 4096);
  }
  r.read("ranks", res.ranks, 1, 1024);
  YAML::Node device = r.section("device");
  if (device.IsDefined()) {
    std::string d = device.IsScalar() ? device.Scalar() : "";
    bool ok = d == "cpu" || d == "cuda" || (d.rfind("cuda:", 0) == 0 && d.size() > 5 &&
                                           d.find_first_not_of("0123456789", 5) == std::string::npos);
    if (ok) {
      res.device = d;
    } else {
      r.diagnostics().error(r.child_path("device"), device,
                            "'resources.device' must be cpu, cuda or cuda:N, got '" + d + "'");
    }
  }
  r.read_choice("backend", res.backend);
  r.read("stall_timeout", res.stall_timeout, 0, 999999);
  r.read("device_memory", res.device_memory, 0, 1e6);
  r.finish();
}

void read_parallel(MapReader r, ParallelConfig& p) {
  r.read("zero", p.zero, 0, 3);
  r.read("expert", p.expert, 1, 1024);
  r.finish();
}

std::string num(int64_t v) { return std::to_string(v); }

// The model's cross-field checks, each reported at the key it names.
template <class At>
void check_model(const YAML::Node& root, Diagnostics& diags, const ModelConfig& given, At at) {
  auto error = [&](const std::string& key, const std::string& message) {
    diags.error("model." + key, at(key), message);
  };
  const YAML::Node section = root["model"];
  auto has = [&](const std::string& key) { return section.IsDefined() && section.IsMap() && section[key].IsDefined(); };
  if (given.n_embd % given.n_head != 0) {
    error("n_embd", "'model.n_embd' (" + num(given.n_embd) + ") must be divisible by 'model.n_head' (" +
                        num(given.n_head) + ")");
    return;
  }
  if (has("logit_softcap") && at("logit_softcap").Scalar() != "none" &&
      !(given.logit_softcap >= 1e-3 && given.logit_softcap <= 1e4)) {  // what fp32 tanh(x / cap) · cap resolves
    error("logit_softcap", "'model.logit_softcap' must be in [0.001, 10000], got " + at("logit_softcap").Scalar() +
                               " — the cap the logits tend to (the speedrun's is 30); 'none' or no key for none");
  }
  if (given.qk_norm && given.attention == Attention::mla) {
    error("qk_norm", "'model.qk_norm' normalises the queries and keys of 'attention: mha'; latent attention's keys "
                     "come from its normalised latent already — set 'model.attention: mha', or remove qk_norm");
  }
  if (given.position == Position::rope && given.attention == Attention::mha && given.head_dim() % 2 != 0) {
    error("n_head", "rotary positions need an even head width; n_embd / n_head is " + num(given.head_dim()));
  }
  if (given.family == Family::gpt2) {
    for (const std::string& key : k_deepseek_keys) {
      if (has(key)) {
        diags.error_at_key("model." + key, at(key),
                           "'model." + key + "' is an option of the deepseek family — add 'model.family: deepseek', or remove it");
      }
    }
    if (given.attention == Attention::mla) {
      error("attention", "'model.attention: mla' (latent attention) belongs to the deepseek family — add "
                         "'model.family: deepseek'");
    }
    return;
  }
  const ModelConfig m = given.resolved();
  if (m.attention == Attention::mla) {
    if (m.qkv_bias) {
      error("qkv_bias", "'model.qkv_bias' applies to 'attention: mha'; latent attention has no QKV bias");
    }
    if (m.position == Position::rope && (m.qk_rope_head_dim == 0 || m.qk_rope_head_dim % 2 != 0)) {
      if (has("qk_rope_head_dim")) {
        error("qk_rope_head_dim", "'model.qk_rope_head_dim' (" + num(m.qk_rope_head_dim) +
                                      ") must be even and > 0 with 'position: rope' — the rotary part of each query and key");
      } else {
        error("position", "latent attention with 'position: rope' needs 'model.qk_rope_head_dim' even and > 0; its "
                          "default, half of n_embd / n_head (" + num(m.head_dim()) + ") rounded down to even, is 0 — set it");
      }
    }
    if (m.position == Position::learned && m.qk_rope_head_dim != 0) {
      error(has("qk_rope_head_dim") ? "qk_rope_head_dim" : "position",
            "'model.qk_rope_head_dim' must be 0 with 'position: learned' (the rotary part needs 'position: rope')");
    }
    if (m.qk_nope_head_dim == 0 && m.qk_rope_head_dim == 0) {
      error("qk_nope_head_dim", "queries and keys need a width: 'qk_nope_head_dim' + 'qk_rope_head_dim' is 0");
    }
  }
  if (m.moe()) {
    if (m.moe_top_k > m.n_routed_experts) {
      error("moe_top_k", "'model.moe_top_k' (" + num(m.moe_top_k) + ") exceeds 'model.n_routed_experts' (" +
                             num(m.n_routed_experts) + ") — a token cannot go to more experts than there are");
    }
    if (m.first_k_dense >= m.n_layer) {
      error("first_k_dense", "'model.first_k_dense' (" + num(m.first_k_dense) + ") leaves no MoE layer in " +
                                 num(m.n_layer) + " — make it less than 'model.n_layer', or set 'n_routed_experts: 0'");
    }
  }
}

// Cross-field checks, each reported at the key it names.
void check_relations(const YAML::Node& root, Diagnostics& diags, const RunConfig& c) {
  auto at = [&](const std::string& section, const std::string& key) {
    const YAML::Node s = root[section];
    if (s.IsDefined() && s.IsMap() && s[key].IsDefined()) {
      return s[key];
    }
    return s.IsDefined() ? s : root;
  };
  check_model(root, diags, c.model, [&](const std::string& key) { return at("model", key); });
  if (c.train.optimizer == Optimizer::muon) {
    // Each matrix is orthogonalised whole: ZeRO's flat pieces of it, or experts held on other
    // ranks, would orthogonalise something else.
    if (c.parallel.zero > 0 && c.resources.ranks > 1) {
      diags.error("train.optimizer", at("train", "optimizer"),
                  "'train.optimizer: muon' orthogonalises each weight matrix whole, and parallel.zero " +
                      std::to_string(c.parallel.zero) + " shards them — use parallel.zero: 0, or optimizer: adamw");
    }
    if (c.parallel.expert > 1) {
      diags.error("train.optimizer", at("train", "optimizer"),
                  "'train.optimizer: muon' steps every matrix on every rank; parallel.expert partitions the experts — "
                  "use parallel.expert: 1, or optimizer: adamw");
    }
    if (c.train.muon_momentum_warmup > 0 && c.train.muon_momentum < 0.85) {
      diags.error("train.muon_momentum_warmup", at("train", "muon_momentum_warmup"),
                  "'train.muon_momentum_warmup' raises the momentum from 0.85 to 'train.muon_momentum', which is below it — "
                  "set muon_momentum to 0.85 or more, or remove the warmup");
    }
  } else if (const YAML::Node t = root["train"]; !(t.IsDefined() && t.IsMap() && t["optimizer"].IsDefined())) {
    // Muon's options with the optimizer left at AdamW: a forgotten 'optimizer: muon'. (With
    // 'optimizer: adamw' said, they are ignored: an intervention can take a Muon base back to AdamW.)
    for (const char* key : {"muon_lr", "muon_momentum", "muon_momentum_warmup"}) {
      if (t.IsDefined() && t.IsMap() && t[key].IsDefined()) {
        diags.error_at_key(std::string("train.") + key, t[key],
                           std::string("'train.") + key + "' is an option of Muon — add 'train.optimizer: muon', or remove it");
      }
    }
  }
  if (c.train.min_lr > c.train.lr) {
    diags.error("train.min_lr", at("train", "min_lr"),
                "'train.min_lr' (" + format_number("%g", c.train.min_lr) + ") must not exceed 'train.lr' (" +
                    format_number("%g", c.train.lr) + ") — an intervention that lowers train.lr lowers "
                    "train.min_lr with it (e.g. train.min_lr: " + format_number("%g", c.train.lr / 10) + ")");
  }
  if (c.train.warmup >= 1 && std::floor(c.train.warmup) != c.train.warmup) {
    diags.error("train.warmup", at("train", "warmup"),
                "'train.warmup' must be a whole number of steps (>= 1) or a fraction (< 1)");
  }
  if (c.train.tokens > 0 && planned_steps(c) < 1) {
    diags.error("train.tokens", at("train", "tokens"),
                "'train.tokens' (" + std::to_string(c.train.tokens) +
                    ") is less than one optimizer step of " + std::to_string(planned_tokens_per_step(c)) +
                    " tokens (micro_batch × block_size × grad_accum × resources.ranks)");
  }
  if (c.train.precision == Precision::tf32 && c.resources.device == "cpu") {
    diags.error("train.precision", at("train", "precision"),
                "'train.precision: tf32' needs a CUDA device — use fp32 or bf16 on cpu");
  }
  if (c.resources.stall_timeout > 0 && c.resources.stall_timeout < 1) {
    diags.error("resources.stall_timeout", at("resources", "stall_timeout"),
                "'resources.stall_timeout' is less than a second — at least 1, or 0 to turn the watchdog off");
  }
  if (c.parallel.expert > 1) {
    const std::string e = std::to_string(c.parallel.expert);
    if (!c.model.moe()) {
      diags.error("parallel.expert", at("parallel", "expert"),
                  "'parallel.expert: " + e + "' partitions routed experts, and this model has none — set "
                  "model.n_routed_experts, or remove parallel.expert");
    } else if (c.model.n_routed_experts % c.parallel.expert != 0) {
      diags.error("parallel.expert", at("parallel", "expert"),
                  "'parallel.expert: " + e + "' does not divide model.n_routed_experts (" +
                      std::to_string(c.model.n_routed_experts) + ") — use a divisor of it");
    } else if (c.parallel.expert > c.resources.ranks) {
      diags.error("parallel.expert", at("parallel", "expert"),
                  "'parallel.expert: " + e + "' is more expert ranks than resources.ranks (" +
                      std::to_string(c.resources.ranks) + ") — set resources.ranks: " + e +
                      " (sweep train --nproc " + e + "), or fewer expert ranks");
    } else if (c.parallel.expert != c.resources.ranks) {
      diags.error("parallel.expert", at("parallel", "expert"),
                  "'parallel.expert: " + e + "' on " + std::to_string(c.resources.ranks) +
                      " ranks: the experts are partitioned over every rank — set it to resources.ranks, or 1");
    }
  }
  if (c.resources.backend == Backend::nccl && c.resources.device == "cpu") {
    diags.error("resources.backend", at("resources", "backend"),
                "'resources.backend: nccl' needs resources.device: cuda — use gloo (or auto) on cpu");
  }
}

}  // namespace

int64_t RunConfig::warmup_steps() const {
  if (train.warmup < 1) {
    return static_cast<int64_t>(std::llround(train.warmup * static_cast<double>(total_steps())));
  }
  return static_cast<int64_t>(train.warmup);
}

int RunConfig::threads() const {
  if (resources.threads > 0) {
    return static_cast<int>(resources.threads);
  }
  return available_cores();  // auto: the cores this process may run on
}

int64_t planned_tokens_per_step(const RunConfig& c) {
  return c.train.micro_batch * c.model.block_size * c.train.grad_accum * std::max<int64_t>(1, c.resources.ranks);
}

int64_t planned_steps(const RunConfig& c) { return c.train.tokens / planned_tokens_per_step(c); }

std::string cuda_graph_problem(const RunConfig& c, bool on_cuda) {
  if (!c.train.cuda_graph) {
    return "";
  }
  const std::string key = "train.cuda_graph: ";
  if (!on_cuda) {
    return key + "a CUDA graph replays a GPU's step, and this run trains on the CPU — remove train.cuda_graph";
  }
  if (c.train.optimizer == Optimizer::muon) {
    return key + "Muon's learning rate and momentum warmup are set from the host every step, where a replayed "
                 "graph would not see them — use train.optimizer: adamw, or remove train.cuda_graph";
  }
  if (c.model.moe()) {
    return key + "a mixture of experts routes a number of tokens to each expert that changes every step (a graph's "
                 "shapes cannot) and reads it on the host — remove train.cuda_graph";
  }
  if (c.train.activation_checkpointing) {
    return key + "activation checkpointing sets dropout's generator state from the host in backward, which a "
                 "captured graph cannot — remove one of the two";
  }
  const int64_t ranks = std::max(c.resources.ranks, c.world_size);
  if (ranks > 1) {
    return key + "with " + std::to_string(ranks) + " ranks the gradients' all-reduce and the ranks' agreed stop are "
                 "not captured — train with one rank a run, or remove train.cuda_graph";
  }
  return "";
}

namespace {

// A YAML value of a run's config.yaml as JSON: a quoted scalar is a string, a plain one a number,
// a boolean, null or a string (as config.yaml writes them).
nlohmann::json json_of(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& kv : node) {
      j[kv.first.Scalar()] = json_of(kv.second);
    }
    return j;
  }
  if (node.IsSequence()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& item : node) {
      j.push_back(json_of(item));
    }
    return j;
  }
  if (!node.IsScalar() || node.IsNull()) {
    return nullptr;
  }
  const std::string text = node.Scalar();
  if (node.Tag() != "!") {
    if (text == "true" || text == "false") {
      return text == "true";
    }
    try {
      return node.as<int64_t>();
    } catch (const YAML::Exception&) {
    }
    try {
      return node.as<double>();
    } catch (const YAML::Exception&) {
    }
  }
  return text;
}

// A run's config.yaml written for a user's trainer: its trainer, config, seeds and resources.
RunConfig parse_external_run(const YAML::Node& root, Diagnostics& diags) {
  RunConfig c;
  MapReader r(root, "", diags);
  MapReader t(r.section("trainer"), "trainer", diags);
  OwnTrainer& trainer = c.trainer.emplace();
  t.read("name", trainer.name);
  t.read("dir", trainer.dir);
  t.read("stop_grace", trainer.stop_grace, 0, 86400);
  const YAML::Node command = t.section("command"), files = t.section("files"), output = t.section("output"),
                   resume_args = t.section("resume_args"), env = t.section("env");
  t.finish();
  if (output.IsDefined()) {
    trainer.output = OutputRules::from_json(json_of(output));
  }
  for (const auto& a : resume_args) {
    trainer.resume_args.push_back(a.Scalar());
  }
  for (const auto& kv : env) {
    trainer.env[kv.first.Scalar()] = kv.second.Scalar();
  }
  for (const auto& part : command) {
    trainer.command.push_back(part.Scalar());
  }
  for (const auto& kv : files) {
    trainer.files[kv.first.Scalar()] = kv.second.Scalar();
  }
  if (trainer.command.empty()) {
    diags.error(command.Mark(), "'trainer.command' must be a non-empty list");
  }
  c.values = json_of(r.section("config"));
  if (!c.values.is_object()) {
    c.values = nlohmann::json::object();
  }
  read_seeds(MapReader(r.section("seeds"), "seeds", diags), c.seeds);
  read_resources(MapReader(r.section("resources"), "resources", diags), c.resources);
  r.finish();
  return c;
}

}  // namespace

RunConfig parse_trainer_run(const YAML::Node& tree, const TrainerSpec& spec, const std::string& file,
                            const std::map<std::string, Origin>& origins) {
  Diagnostics diags(file, origins);
  RunConfig c;
  c.trainer = spec.trainer;
  if (spec.stall_timeout > 0) {
    c.resources.stall_timeout = spec.stall_timeout;  // the trainer's, unless resources.stall_timeout says otherwise
  }
  read_resources(MapReader(tree.IsMap() ? tree["resources"] : YAML::Node(), "resources", diags), c.resources);
  std::vector<Diagnostic> problems;
  try {
    c.values = resolve_trainer_values(tree, spec, file, origins);
  } catch (const InputErrors& e) {
    problems = e.diagnostics();
  }
  try {
    diags.throw_if_any();
  } catch (const InputErrors& e) {
    problems.insert(problems.begin(), e.diagnostics().begin(), e.diagnostics().end());
  }
  if (!problems.empty()) {
    throw InputErrors(problems);
  }
  return c;
}

RunConfig parse_run_config(const YAML::Node& root, const std::string& file,
                           const std::map<std::string, Origin>& origins) {
  Diagnostics diags(file, origins);
  if (root.IsMap() && root["trainer"].IsDefined()) {
    RunConfig c = parse_external_run(root, diags);
    diags.throw_if_any();
    return c;
  }
  RunConfig c;
  MapReader r(root, "", diags);
  read_model(MapReader(r.section("model"), "model", diags), c.model);
  read_data(MapReader(r.section("data"), "data", diags), c.data);
  read_train(MapReader(r.section("train"), "train", diags), c.train);
  read_eval(MapReader(r.section("eval"), "eval", diags), c.eval);
  read_seeds(MapReader(r.section("seeds"), "seeds", diags), c.seeds);
  read_resources(MapReader(r.section("resources"), "resources", diags), c.resources);
  read_parallel(MapReader(r.section("parallel"), "parallel", diags), c.parallel);
  if (root.IsMap() && root["branch"]) {  // written by `sweep run` for a branch (config/branch.h): not listed as a key
    read_branch(MapReader(r.section("branch"), "branch", diags), c.branch);
  }
  r.finish();
  if (diags.empty()) {
    check_relations(root, diags, c);
  }
  diags.throw_if_any();
  return c;
}

RunConfig load_run_config(const std::string& path, const std::vector<Override>& overrides) {
  YAML::Node root = load_yaml_file(path);
  std::map<std::string, Origin> origins;
  apply_overrides(root, overrides, origins);
  return parse_run_config(root, path, origins);
}

std::string seeds_in_words(int64_t init, int64_t data, int64_t repeat) {
  std::string s = init == data ? "seed " + std::to_string(init)
                               : "init seed " + std::to_string(init) + ", data seed " + std::to_string(data);
  return repeat > 0 ? s + ", repeat " + std::to_string(repeat) : s;
}

std::string seeds_in_column(int64_t init, int64_t data, int64_t repeat) {
  std::string s = init == data ? std::to_string(init) : "init=" + std::to_string(init) + ",data=" + std::to_string(data);
  return repeat > 0 ? s + ",repeat=" + std::to_string(repeat) : s;
}

}  // namespace sweep
