// Muon (Keller Jordan, 2024; the NanoGPT speedrun's optimizer): momentum SGD for 2-D weight
// matrices whose update is replaced by the nearest (semi-)orthogonal matrix, found by a quintic
// Newton–Schulz iteration. Per matrix W (rows × cols) and step, with gradient G:
//   B ← μ·B + G;  U ← G + μ·B (Nesterov);  O ← NS5(U);  W ← W − lr·√max(1, rows/cols)·O
// No weight decay. A weight made of stacked matrices (the fused QKV projection: Q, K and V) is
// orthogonalised matrix by matrix, as if they were separate weights.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "train/optim.h"

namespace sweep {

// The published quintic's coefficients (a, b, c): X ← a·X + (b·A + c·A²)·X with A = X·Xᵀ.
inline constexpr double k_ns_a = 3.4445, k_ns_b = -4.7750, k_ns_c = 2.0315;

// NS5(G) over G's last two dims (a batch of matrices), in `dtype` (bf16 as the speedrun, or fp32):
// G scaled to Frobenius norm 1, transposed to wide if tall, `steps` iterations, back to G's shape.
// Returns `dtype`; its singular values lie near 1 (roughly 0.7 to 1.2 after 5 steps), not at 1.
torch::Tensor newton_schulz(const torch::Tensor& g, int64_t steps, torch::ScalarType dtype);

struct MuonOptions {
  double lr = 0.02;
  double momentum = 0.95;
  int64_t momentum_warmup = 0;  // steps from 0.85 to `momentum`; 0: `momentum` from the start
  int64_t ns_steps = 5;
  torch::ScalarType dtype = torch::kFloat;  // of the Newton–Schulz products: bf16 when the step runs in bf16
};

class Muon {
 public:
  // `params`: 2-D weights; `stacked[i]` how many matrices param i stacks along its rows (1, or 3
  // for a fused QKV projection).
  Muon(std::vector<torch::Tensor> params, std::vector<int64_t> stacked, MuonOptions options);

  // One step at lr = options.lr × lr_scale (the schedule's factor) under the step's rule
  // (train/optim.h): the gradients × its clip factor, nothing changed where it skips — on the
  // device, nothing read; `steps_before`: the steps taken before this one (momentum warmup).
  void step(double lr_scale, const StepScale& scale, int64_t steps_before);
  void zero_grad();

  // The momentum buffers live in an SGD's per-parameter state, so that checkpoints save and load
  // them as LibTorch writes an SGD's.
  torch::optim::Optimizer& state() { return m_state; }
  const std::vector<torch::Tensor>& params() const { return m_params; }
  double momentum_at(int64_t step) const;

 private:
  std::vector<torch::Tensor> m_params;
  std::vector<int64_t> m_stacked;
  MuonOptions m_options;
  torch::optim::SGD m_state;
};

}  // namespace sweep
