// Export of trained weights as a PyTorch state dict that Python's torch.load reads, with
// nanoGPT's parameter names (Q, K, V already concatenated as c_attn). A tied model exports both
// transformer.wte.weight and lm_head.weight (nanoGPT's state dict holds both names).
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/run_config.h"
#include "train/model.h"

namespace sweep {

// (name, fp32 CPU tensor) in nanoGPT's order.
std::vector<std::pair<std::string, torch::Tensor>> nanogpt_state_dict(GPT& model);

void export_state_dict(GPT& model, const std::string& path);

// A state dict file as name → tensor: what export_state_dict writes, or Python's torch.save of a
// state dict, or nanoGPT's checkpoint (its "model" entry; torch.compile's "_orig_mod." prefixes
// dropped), read by torchfile/torch_file.h (nothing executed, every tensor checked against its
// storage). A file that is none of these, or holds a non-finite weight, is a one-line bad-input
// error. `model_args`: a nanoGPT checkpoint's integer model_args (n_head, ...), when it has them.
using StateDict = std::map<std::string, torch::Tensor>;
StateDict read_state_dict(const std::string& path, std::map<std::string, int64_t>* model_args = nullptr);

// The elements of the storages a state dict's tensors view (each storage once).
int64_t stored_elements(const StateDict& dict);

// Copies a state dict back into `model`: every parameter and buffer by name, each of the model's
// shape (errors name the file and the tensor). A tensor the model lacks is refused unless
// `ignore_extra`, but for nanoGPT's attention masks (.attn.bias) and a head equal to the tied
// embedding.
void import_state_dict(GPT& model, const StateDict& dict, const std::string& path, bool ignore_extra = false);
void import_state_dict(GPT& model, const std::string& path);

// The model of a finished or stopped run: its config.yaml and the weights of its checkpoint.
GPT load_run_model(const std::string& run_dir, RunConfig* config_out = nullptr);

}  // namespace sweep
