// AdamW with the two parameter groups of GPT training: weight decay on every >= 2-D weight
// (matmul weights and embeddings), none on biases and LayerNorm parameters. A tied weight is
// one registered parameter, so it appears here once. Plus the global gradient norm.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "config/run_config.h"

namespace sweep {

std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& params, const TrainConfig& t);
// The same two groups given apart (ZeRO's pieces of weights are 1-D whatever their weight's shape).
std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& decay,
                                                const std::vector<torch::Tensor>& no_decay, const TrainConfig& t);

void set_learning_rate(torch::optim::Optimizer& opt, double lr);

// The global L2 norm of all gradients (may be non-finite: the caller checks).
double grad_norm(const std::vector<torch::Tensor>& params);

// The factor that scales gradients of global norm `norm` to `max_norm`: 1 when clipping is off
// (max_norm 0), not needed, or the norm is not finite.
double clip_factor(double norm, double max_norm);

// One AdamW step with the gradients multiplied by grad_scale (the clip factor): the fused
// one-pass kernel (CPU parameters, `fused`) or LibTorch's AdamW.
void adamw_step(torch::optim::AdamW& opt, double grad_scale, bool fused);

}  // namespace sweep
