// A RunConfig written out: its JSON, its identity (what a run id hashes) and config.yaml.
#include "config/run_config.h"


#include "util/text.h"

namespace sweep {

// The architecture's keys, resolved; a key that changes nothing in this config is left out
// (the MLA sizes under mha, the MoE options of a dense model), so equal models hash alike.
static void add_architecture(nlohmann::ordered_json& j, const ModelConfig& given) {
  const ModelConfig m = given.resolved();
  j["family"] = m.family;
  j["norm"] = m.norm;
  j["position"] = m.position;
  j["mlp_activation"] = m.mlp_activation;
  j["attention"] = m.attention;
  j["intermediate_size"] = m.intermediate_size;
  if (m.position == Position::rope) {
    j["rope_theta"] = m.rope_theta;
  }
  if (m.qk_norm) {  // the speedrun's switches: named only when on (the ids of runs before them kept)
    j["qk_norm"] = true;
  }
  if (m.zero_init_proj) {
    j["zero_init_proj"] = true;
  }
  if (m.logit_softcap > 0) {
    j["logit_softcap"] = m.logit_softcap;
  }
  if (m.attention == Attention::mla) {
    j["q_lora_rank"] = m.q_lora_rank;
    j["kv_lora_rank"] = m.kv_lora_rank;
    j["qk_nope_head_dim"] = m.qk_nope_head_dim;
    j["qk_rope_head_dim"] = m.qk_rope_head_dim;
    j["v_head_dim"] = m.v_head_dim;
  }
  if (m.family == Family::deepseek) {
    j["n_routed_experts"] = m.n_routed_experts;
  }
  if (m.moe()) {
    j["n_shared_experts"] = m.n_shared_experts;
    j["moe_top_k"] = m.moe_top_k;
    j["moe_intermediate_size"] = m.moe_intermediate_size;
    j["first_k_dense"] = m.first_k_dense;
    j["balance"] = m.balance;
    if (m.balance == Balance::aux_loss) {
      j["aux_loss_alpha"] = m.aux_loss_alpha;
    }
    if (m.balance == Balance::bias) {
      j["bias_update_speed"] = m.bias_update_speed;
    }
  }
}

namespace {

nlohmann::ordered_json resources_json(const ResourceConfig& resources) {
  return {{"threads", resources.threads == 0 ? nlohmann::ordered_json("auto") : nlohmann::ordered_json(resources.threads)},
          {"device", resources.device},
          {"ranks", resources.ranks},
          {"backend", resources.backend},
          {"stall_timeout", resources.stall_timeout},
          {"device_memory", resources.device_memory}};
}

}  // namespace

nlohmann::json RunConfig::to_json() const {
  if (trainer) {
    const nlohmann::ordered_json j{{"trainer", trainer->to_json(false)},
                                   {"config", values},
                                   {"seeds", {{"init", seeds.init}, {"data", seeds.data}}},
                                   {"resources", resources_json(resources)}};
    return nlohmann::json::parse(j.dump());
  }
  nlohmann::ordered_json j;
  j["model"] = {{"n_layer", model.n_layer},       {"n_head", model.n_head},
                {"n_embd", model.n_embd},         {"block_size", model.block_size},
                {"vocab_size", model.vocab_size}, {"pad_vocab_to", model.pad_vocab_to},
                {"dropout", model.dropout},       {"qkv_bias", model.qkv_bias},
                {"tie_weights", model.tie_weights}};
  add_architecture(j["model"], model);
  j["data"] = {{"dataset", data.dataset}};
  j["train"] = {{"micro_batch", train.micro_batch},
                {"grad_accum", train.grad_accum},
                {"tokens", train.tokens},
                {"lr", train.lr},
                {"min_lr", train.min_lr},
                {"schedule", train.schedule},
                {"warmup", train.warmup},
                {"decay", train.decay},
                {"weight_decay", train.weight_decay},
                {"beta1", train.beta1},
                {"beta2", train.beta2},
                {"eps", train.eps},
                {"grad_clip", train.grad_clip},
                {"precision", train.precision},
                {"fused", train.fused},
                {"cuda_kernels", train.cuda_kernels},
                {"cuda_graph", train.cuda_graph},
                {"activation_checkpointing", train.activation_checkpointing}};
  if (train.optimizer != Optimizer::adamw) {  // named only when not AdamW: the runs before Muon keep their ids
    j["train"]["optimizer"] = train.optimizer;
    j["train"]["muon_lr"] = train.muon_lr;
    j["train"]["muon_momentum"] = train.muon_momentum;
    j["train"]["muon_momentum_warmup"] = train.muon_momentum_warmup;
  }
  j["eval"] = {{"every", eval.every},
               {"val_tokens", eval.val_tokens},
               {"checkpoint_every", eval.checkpoint_every}};
  j["seeds"] = {{"init", seeds.init}, {"data", seeds.data}};
  j["resources"] = resources_json(resources);
  j["parallel"] = {{"zero", parallel.zero}, {"expert", parallel.expert}};
  if (branch.on()) {  // absent unless branched: every run before branches keeps its id
    j["branch"] = {{"from", branch.from}, {"step", branch.step}};
  }
  return nlohmann::json::parse(j.dump());  // keys sorted: the canonical form
}

nlohmann::json RunConfig::across_layouts(nlohmann::json identity) {
  identity.erase("ranks");
  if (identity.contains("train") && identity["train"].is_object()) {
    identity["train"].erase("grad_accum");
  }
  return identity;
}

std::optional<std::string> RunConfig::other_device(nlohmann::json written, nlohmann::json here,
                                                   const std::string& what) {
  const std::string was = written.value("device", std::string("cpu")), is = here.value("device", std::string("cpu"));
  written.erase("device");
  here.erase("device");
  if (was == is || written != here) {
    return std::nullopt;
  }
  return what + " was trained on " + was + " and would go on on " + is +
         " — the kind of device is part of what a run is (its kernels, its dropout stream): go on with --set "
         "resources.device=" + was + ", or train a new run on " + is;
}

nlohmann::json RunConfig::identity_json() const {
  nlohmann::json j = to_json();
  j.erase("resources");
  j.erase("parallel");  // how the ranks hold the state, not what they compute (tests/unit/train/sharded/test_zero.cpp)
  if (resources.ranks != 1) {  // absent at 1, so that one-process runs keep their ids
    j["ranks"] = resources.ranks;
  }
  // The kind of device, not which one: a GPU's kernels and dropout stream are not the CPU's, so a
  // run on each is a run of its own, never paired with the other (absent on the CPU: CPU runs
  // keep the ids they had before the device counted). A user's trainer too, whose GPU use is its own.
  if (trains_on_cuda()) {
    j["device"] = "cuda";
  }
  if (trainer) {  // the command, its files' contents and the config: not where it runs, nor its name
    j["trainer"] = trainer->to_json(true);
    return j;
  }
  if (train.fused) {  // absent when on (the default): the fused path is the default path
    j["train"].erase("fused");
  }
  if (!train.cuda_kernels) {  // absent when off (the default): every run before them keeps its id
    j["train"].erase("cuda_kernels");
  }
  // Absent when off, like cuda_kernels. A replay runs the eager step's kernels in their order, so it
  // should compute the same bits; until a GPU has shown that, a graph's run is a run of its own.
  if (!train.cuda_graph) {
    j["train"].erase("cuda_graph");
  }
  // How memory is spent, not what is computed (the same values, bitwise: tests/unit/equivalences.h),
  // like resources: a run interrupted with it off resumes with it on.
  j["train"].erase("activation_checkpointing");
  // GPT-2's architecture, as every run had before the switches existed: left out, so those runs keep their ids
  ModelConfig gpt2;
  gpt2.n_embd = model.n_embd;
  gpt2 = gpt2.resolved();
  nlohmann::json& mj = j["model"];
  for (const auto& [key, value] : {std::pair<std::string, nlohmann::json>{"family", gpt2.family},
                                   {"norm", gpt2.norm},
                                   {"position", gpt2.position},
                                   {"mlp_activation", gpt2.mlp_activation},
                                   {"attention", gpt2.attention},
                                   {"intermediate_size", gpt2.intermediate_size},
                                   {"n_routed_experts", 0}}) {
    if (mj.contains(key) && mj[key] == value) {
      mj.erase(key);
    }
  }
  j["numerics"] = k_numerics_version;
  return j;
}

// `quote`: every string double-quoted, so that a user trainer's string "1e-3" reads back a string.
static void emit_json(YAML::Emitter& out, const nlohmann::json& j, bool quote) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (auto it = j.begin(); it != j.end(); ++it) {
      out << YAML::Key << it.key() << YAML::Value;
      emit_json(out, it.value(), quote);
    }
    out << YAML::EndMap;
  } else if (j.is_array() && quote) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& item : j) {
      emit_json(out, item, quote);
    }
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    if (quote) {
      out << YAML::DoubleQuoted;
    }
    out << j.get<std::string>();
  } else if (j.is_boolean()) {
    out << j.get<bool>();
  } else if (j.is_number_integer()) {
    out << j.get<int64_t>();
  } else {
    out << j.dump();  // doubles in JSON's shortest round-trip form
  }
}

std::string RunConfig::to_yaml() const {
  YAML::Emitter out;
  emit_json(out, to_json(), trainer.has_value());
  return std::string(out.c_str()) + "\n";
}

}  // namespace sweep
