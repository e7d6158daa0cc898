// bf16 causal attention with its matrix products on AMX tiles. Flash attention's 64 × 64 tiles
// (kernels/cpu/attention.cpp) are too small for AMX to pay off: here each thread takes one head at
// a time whole — its seq × seq scores materialised (k_thread_bytes at most, in the thread's cache
// where they fit) — and multiplies with oneDNN's matmul, which runs on the tiles. Between the
// products, cpu::Ops' row kernels: the causal softmax and its gradient, with the flash kernels'
// dropout hash. The results are the flash kernels' up to rounding: the weights and their
// gradients are rounded to bf16 once before their products, as there.
#pragma once

#include <torch/torch.h>

#include "kernels/cpu/ops.h"

namespace sweep::kernels::amx {

constexpr int64_t k_thread_bytes = int64_t{64} << 20;
// The bytes a thread holds for one head on this path: fp32 scores and their gradient, bf16
// weights and their gradient, seq × seq each.
constexpr int64_t head_bytes(int64_t seq) { return 12 * seq * seq; }

// Whether this path takes the attention: bf16, a CPU whose kernels are AMX's (cpu::ops().amx), and
// one head's scores within k_thread_bytes (sequences up to 2048 tokens).
bool takes(const cpu::AttentionArgs& s, torch::ScalarType dtype);

// qkv (batch, seq, 3C) contiguous bf16 → out (batch, seq, C) bf16, lse (batch, heads, seq) fp32.
void forward(const cpu::AttentionArgs& s, const torch::Tensor& qkv, torch::Tensor& out, torch::Tensor& lse);
// dqkv (batch, seq, 3C) from dout (batch, seq, C) and the forward's out and lse.
torch::Tensor backward(const cpu::AttentionArgs& s, const torch::Tensor& qkv, const torch::Tensor& out,
                       const torch::Tensor& dout, const torch::Tensor& lse);

}  // namespace sweep::kernels::amx
