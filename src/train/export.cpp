#include "train/export.h"

#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fs.h"

namespace sweep {

std::vector<std::pair<std::string, torch::Tensor>> nanogpt_state_dict(GPT& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : model->named_parameters()) {
    out.emplace_back(p.key(), p.value().detach().to(torch::kCPU, torch::kFloat).contiguous().clone());
  }
  for (const auto& b : model->named_buffers()) {  // the MoE layers' balancing biases (they choose the experts)
    out.emplace_back(b.key(), b.value().detach().to(torch::kCPU, torch::kFloat).contiguous().clone());
  }
  if (model->config.tie_weights) {
    out.emplace_back("lm_head.weight", model->head_weight().detach().to(torch::kCPU, torch::kFloat).contiguous().clone());
  }
  return out;
}

void export_state_dict(GPT& model, const std::string& path) {
  c10::Dict<std::string, at::Tensor> dict;
  for (auto& [name, tensor] : nanogpt_state_dict(model)) {
    dict.insert(name, tensor);
  }
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
  write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
}

StateDict read_state_dict(const std::string& path) {
  if (!fs::is_regular_file(path)) {
    throw Error(path + ": no such file (a state dict, e.g. from `sweep export`)", Exit::bad_input);
  }
  const std::string raw = read_file(path);
  c10::IValue value;
  try {
    value = torch::pickle_load(std::vector<char>(raw.begin(), raw.end()));
  } catch (const std::exception&) {
    value = c10::IValue();
  }
  if (value.isGenericDict()) {  // nanoGPT's checkpoint holds the state dict under "model"
    const auto top = value.toGenericDict();
    const auto it = top.find(c10::IValue(std::string("model")));
    if (it != top.end() && it->value().isGenericDict()) {
      value = it->value();
    }
  }
  if (!value.isGenericDict()) {
    throw Error(path + " is not a PyTorch state dict (a dict of tensors, as `sweep export` or torch.save writes)",
                Exit::bad_input);
  }
  StateDict out;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor()) {
      continue;  // nanoGPT's checkpoint also holds optimizer state and arguments
    }
    std::string name = entry.key().toStringRef();
    if (name.rfind("_orig_mod.", 0) == 0) {
      name = name.substr(10);
    }
    out[name] = entry.value().toTensor();
  }
  if (out.empty()) {
    throw Error(path + " holds no tensors — not a state dict", Exit::bad_input);
  }
  return out;
}

void import_state_dict(GPT& model, const StateDict& dict, const std::string& path) {
  torch::NoGradGuard no_grad;
  std::vector<std::pair<std::string, torch::Tensor>> wanted;
  for (auto& p : model->named_parameters()) {
    wanted.emplace_back(p.key(), p.value());
  }
  for (auto& b : model->named_buffers()) {
    wanted.emplace_back(b.key(), b.value());
  }
  for (auto& p : wanted) {
    auto it = dict.find(p.first);
    if (it == dict.end()) {
      throw Error(path + " has no tensor '" + p.first + "'", Exit::bad_input);
    }
    const at::Tensor& t = it->second;
    if (t.sizes() != p.second.sizes()) {
      throw Error(path + ": '" + p.first + "' has shape " + c10::str(t.sizes()) + ", the model expects " +
                      c10::str(p.second.sizes()),
                  Exit::bad_input);
    }
    p.second.copy_(t);
  }
}

void import_state_dict(GPT& model, const std::string& path) { import_state_dict(model, read_state_dict(path), path); }

GPT load_run_model(const std::string& run_dir, RunConfig* config_out) {
  const fs::path dir(run_dir);
  const fs::path ckpt = dir / "checkpoint" / "ckpt.pt";
  if (!fs::exists(dir / "config.yaml") || !fs::exists(ckpt)) {
    throw Error(run_dir + " is not a run directory with a checkpoint (config.yaml and checkpoint/ckpt.pt)",
                Exit::bad_input);
  }
  RunConfig cfg = load_run_config((dir / "config.yaml").string());
  GPT model(cfg.model, cfg.seeds.init);
  load_checkpoint_weights(ckpt.string(), model);
  if (config_out != nullptr) {
    *config_out = cfg;
  }
  return model;
}

}  // namespace sweep
