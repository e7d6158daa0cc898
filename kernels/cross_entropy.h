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
// On a CUDA device (kernels/cuda/cross_entropy.h, train.cuda_kernels) the same in two passes over
// each row, nothing read on the host: a target outside [0, V) gives a NaN loss there instead of an error.
torch::Tensor cross_entropy_inplace(const torch::Tensor& logits, const torch::Tensor& targets, double softcap = 0);

// Whether the CUDA twin takes such logits: a CUDA build, (N, V) fp32 or bf16 on a CUDA device with
// 0 < N < 2³¹, int64 targets (N) on the same device. Anything else goes to the reference, never to
// a wrong result.
bool cuda_cross_entropy_takes(c10::DeviceType device, torch::ScalarType dtype, torch::IntArrayRef sizes,
                              torch::ScalarType target_dtype, torch::IntArrayRef target_sizes);
bool cuda_cross_entropy_takes(const torch::Tensor& logits, const torch::Tensor& targets);

// softcap · tanh(logits / softcap) in fp32 with LibTorch's ops; the logits as they are at 0.
torch::Tensor soft_cap_reference(const torch::Tensor& logits, double softcap);

torch::Tensor cross_entropy_reference(const torch::Tensor& logits, const torch::Tensor& targets, double softcap = 0);

}  // namespace sweep::kernels
