// Evaluation loss over fixed windows of a split: the validation slice (first val_tokens) or
// the whole test split. Deterministic: eval mode (no dropout), fixed order, no RNG.
#pragma once

#include <functional>

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/tokens.h"
#include "train/model.h"

namespace sweep {

struct EvalLoss {
  double sum_nats = 0;  // summed next-token cross-entropy
  int64_t count = 0;    // predicted tokens
  // With per_window: each window's summed cross-entropy and predicted tokens, in order.
  std::vector<double> window_nats;
  std::vector<int64_t> window_tokens;
  double mean() const { return count > 0 ? sum_nats / static_cast<double>(count) : 0.0; }
};

// limit <= 0: every token of `tokens`. Batches of `batch` windows, under `precision` autocast.
// per_window also keeps each window's loss (the total is computed as without it, to the bit).
// `alive` is called after every batch (a worker's heartbeat).
EvalLoss evaluate_loss(GPT& model, const Tokens& tokens, int64_t limit, int64_t batch,
                       Precision precision, const torch::Device& device, bool per_window = false,
                       const std::function<void()>& alive = {});

// The test loss in at most `most` blocks of consecutive windows (as equal as the windows allow):
// (predicted tokens, summed nats) per block — what the test set's sampling error is estimated from.
std::vector<std::pair<int64_t, double>> loss_blocks(const EvalLoss& loss, size_t most = 1000);

}  // namespace sweep
