// Activation checkpointing (train.activation_checkpointing): a block's forward runs without
// keeping anything for backward but its input; backward runs the block again from that input,
// with autograd on, and back-propagates through the rerun. The rerun computes the same values:
// the generator dropout draws from is put back where it was for the first forward, autocast is
// as it was, and an MoE layer neither counts its tokens twice nor loses its auxiliary loss's
// gradient (the loss is an output of the checkpointed block).
#pragma once

#include <torch/torch.h>

#include "train/model.h"

namespace sweep {

// `block`'s forward of `x` (B, T, C), checkpointed. Sets the block's MoE aux_loss (when it has
// one) to a tensor whose gradient reaches the router through the rerun. With `weights` (ZeRO-3),
// the block's weights are gathered for its forward and for the rerun, freed after each, and its
// gradients handed to `weights` once its backward is done.
torch::Tensor checkpointed_block(BlockImpl& block, const torch::Tensor& x, BlockWeights* weights = nullptr);

}  // namespace sweep
