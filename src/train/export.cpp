#include "train/export.h"

#include <cstring>
#include <set>

#include "torchfile/torch_file.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

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

namespace {

torch::ScalarType scalar_type(const std::string& dtype) {
  static const std::map<std::string, torch::ScalarType> types{
      {"float32", torch::kFloat},  {"float64", torch::kDouble}, {"float16", torch::kHalf}, {"bfloat16", torch::kBFloat16},
      {"int64", torch::kLong},     {"int32", torch::kInt},      {"int16", torch::kShort}, {"int8", torch::kChar},
      {"uint8", torch::kByte},     {"bool", torch::kBool}};
  return types.at(dtype);
}

}  // namespace

StateDict read_state_dict(const std::string& path, std::map<std::string, int64_t>* model_args) {
  if (!fs::is_regular_file(path)) {
    throw Error(path + ": no such file (a state dict, e.g. from `sweep export`)", Exit::bad_input);
  }
  const TorchFile file = read_torch_file(path);
  // One tensor per storage, its bytes copied once; each entry a view of it (read_torch_file has
  // checked that every view lies inside its storage): memory stays the file's, however many
  // views it holds.
  std::map<const std::string*, torch::Tensor> storages;
  StateDict out;
  for (const auto& [name, raw] : file.tensors) {
    torch::Tensor& storage = storages[raw.storage.get()];
    if (!storage.defined()) {
      const int64_t n = static_cast<int64_t>(raw.storage->size() / raw.element_size);
      storage = torch::empty({n}, torch::TensorOptions().dtype(scalar_type(raw.dtype)));
      if (n > 0) {
        std::memcpy(storage.data_ptr(), raw.storage->data(), raw.storage->size());
      }
      if (storage.is_floating_point()) {
        const int64_t bad = n - torch::isfinite(storage).sum().item<int64_t>();
        if (bad > 0) {
          throw Error(path + ": tensor '" + name + "' holds " + plural(bad, "non-finite value") + " (NaN or ±inf) in its storage — the weights of a diverged run? A "
                          "score of them would mean nothing",
                      Exit::bad_input);
        }
      }
    }
    out[name] = storage.as_strided(raw.sizes, raw.strides, raw.offset);
  }
  if (model_args != nullptr) {
    *model_args = file.model_args;
  }
  return out;
}

int64_t stored_elements(const StateDict& dict) {
  std::set<const void*> seen;
  int64_t total = 0;
  for (const auto& [name, t] : dict) {
    if (seen.insert(t.storage().unsafeGetStorageImpl()).second) {
      total += static_cast<int64_t>(t.storage().nbytes() / t.element_size());
    }
  }
  return total;
}

void import_state_dict(GPT& model, const StateDict& dict, const std::string& path, bool ignore_extra) {
  torch::NoGradGuard no_grad;
  std::vector<std::pair<std::string, torch::Tensor>> wanted;
  for (auto& p : model->named_parameters()) {
    wanted.emplace_back(p.key(), p.value());
  }
  for (auto& b : model->named_buffers()) {
    wanted.emplace_back(b.key(), b.value());
  }
  std::set<std::string> used;
  for (auto& p : wanted) {
    auto it = dict.find(p.first);
    if (it == dict.end()) {
      throw Error(path + " has no tensor '" + p.first + "'", Exit::bad_input);
    }
    const at::Tensor& t = it->second;
    if (!t.is_floating_point()) {  // integers or bools copied into weights would be read as numbers they are not
      throw Error(path + ": '" + p.first + "' holds " + std::string(c10::toString(t.scalar_type())) +
                      " values; the model's weights are floating point",
                  Exit::bad_input);
    }
    if (t.sizes() != p.second.sizes()) {
      throw Error(path + ": '" + p.first + "' has shape " + c10::str(t.sizes()) + ", the model expects " +
                      c10::str(p.second.sizes()),
                  Exit::bad_input);
    }
    p.second.copy_(t);
    used.insert(p.first);
  }
  // What the model does not have: refused (a layer more, another architecture), but for what
  // nanoGPT's and GPT-2's files carry beside the weights — attention masks, a tied head.
  std::vector<std::string> extra;
  const auto wte = dict.find("transformer.wte.weight");
  for (const auto& [name, t] : dict) {
    const bool mask = ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias");
    const bool tied_head = name == "lm_head.weight" && model->config.tie_weights && wte != dict.end() &&
                           t.sizes() == wte->second.sizes() && torch::equal(t, wte->second);
    if (!used.count(name) && !mask && !tied_head) {
      extra.push_back(name);
    }
  }
  if (!extra.empty() && !ignore_extra) {
    throw Error(path + " holds tensor '" + extra.front() + "', which the model does not have (" +
                    std::to_string(extra.size()) + " such) — a model of another architecture? Give its config, or "
                    "--ignore-extra to score the model without them",
                Exit::bad_input);
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
