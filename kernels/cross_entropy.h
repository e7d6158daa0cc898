// Mean next-token cross-entropy over the vocabulary from fp32 or bf16 logits, accumulated in fp32.
#pragma once

#include <torch/torch.h>

namespace sweep::kernels {

// logits (N, V), targets (N) int64 → the mean loss, a fp32 scalar. In place: the forward writes
// the gradient (softmax − one-hot) / N over the logits (when a gradient is wanted), so the
// logits' memory is not doubled by an fp32 copy or a separate gradient. The logits are spent:
// the caller must not read them afterwards, and backward may run once (no retain_graph).
// softcap > 0: the loss of softcap · tanh(logits / softcap) (Gemma 2's logit soft-capping, the
// NanoGPT speedrun's), capped row by row in the same pass.
torch::Tensor cross_entropy_inplace(const torch::Tensor& logits, const torch::Tensor& targets, double softcap = 0);

// softcap · tanh(logits / softcap) in fp32 with LibTorch's ops; the logits as they are at 0.
torch::Tensor soft_cap_reference(const torch::Tensor& logits, double softcap);

torch::Tensor cross_entropy_reference(const torch::Tensor& logits, const torch::Tensor& targets, double softcap = 0);

}  // namespace sweep::kernels
