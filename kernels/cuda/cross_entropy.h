// The CUDA twin of kernels/cross_entropy.h's in-place cross-entropy: one pass per row over fp32 or
// bf16 logits for the row's max and log-sum-exp, a second writing (softmax − one-hot) × grad_scale
// over the logits themselves — no fp32 copy of the logits, no separate gradient. Plain CUDA: this
// header and its .cu know nothing of LibTorch (kernels/cross_entropy.cpp wraps them).
#pragma once

#include <cstdint>

namespace sweep::kernels::cuda {

// logits: rows × vocab, row-major, on the device (bf16 when `bf16`, else fp32); targets: rows
// int64; row_losses: rows fp32, each −log softmax at its target (NaN for a target outside
// [0, vocab)). grad_scale 0: the logits are left as they are. softcap > 0: the loss and gradient
// of softcap · tanh(logits / softcap). `stream`: a cudaStream_t. Returns the launch's error ("" when none).
const char* cross_entropy_inplace(bool bf16, void* logits, const int64_t* targets, int64_t rows, int64_t vocab,
                                  float grad_scale, float softcap, float* row_losses, void* stream);

}  // namespace sweep::kernels::cuda
