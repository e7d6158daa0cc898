// AdamW with the two parameter groups of GPT training: weight decay on every >= 2-D weight
// (matmul weights and embeddings), none on biases and LayerNorm parameters. A tied weight is
// one registered parameter, so it appears here once. Plus the global gradient norm.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "config/run_config.h"

namespace sweep {

std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& params, const TrainConfig& t);

void set_learning_rate(torch::optim::Optimizer& opt, double lr);

// The global L2 norm of all gradients (before any clipping); scales them to `max_norm` when it
// is > 0 and exceeded. Returns the pre-clip norm (may be non-finite: the caller checks).
double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace sweep
