// Checkpoints: model, optimizer (moments and step counts), the RNG stream of dropout, the
// step (which fixes the loader position) and the config it belongs to, in one file written
// atomically (temp + fsync + rename): the previous checkpoint stays until the new one is whole.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "train/model.h"

namespace sweep {

struct CheckpointMeta {
  int64_t step = 0;            // optimizer steps completed
  int64_t tokens_per_step = 0;  // the loader position is step × this
  std::string config_json;      // the canonical config of the run, checked on resume
};

// rng_states: every rank's dropout RNG state in rank order (data parallel: rank 0 writes the
// one checkpoint for all); empty = this process's own.
void save_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer& opt,
                     const CheckpointMeta& meta, const torch::Device& device,
                     const std::vector<torch::Tensor>& rng_states = {});

// Restores everything saved, with `rank`'s RNG state; returns the metadata. Throws Error when
// the file is unreadable or holds no state for `rank`.
CheckpointMeta load_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer& opt,
                               const torch::Device& device, int64_t rank = 0);

// This process's dropout RNG state on `device`.
torch::Tensor rng_state(const torch::Device& device);

// Only the model weights (for export and inspection).
void load_checkpoint_weights(const std::string& path, GPT& model);

}  // namespace sweep
