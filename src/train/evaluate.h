// Evaluation loss over fixed windows of a split: the validation slice (first val_tokens) or
// the whole test split. Deterministic: eval mode (no dropout), fixed order, no RNG.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "train/model.h"

namespace sweep {

struct EvalLoss {
  double sum_nats = 0;  // summed next-token cross-entropy
  int64_t count = 0;    // predicted tokens
  double mean() const { return count > 0 ? sum_nats / static_cast<double>(count) : 0.0; }
};

// limit <= 0: every token of `tokens`. Batches of `batch` windows, under `precision` autocast.
EvalLoss evaluate_loss(GPT& model, const std::vector<uint16_t>& tokens, int64_t limit, int64_t batch,
                       const std::string& precision, const torch::Device& device);

}  // namespace sweep
