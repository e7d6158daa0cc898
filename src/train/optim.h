// AdamW with the two parameter groups of GPT training: weight decay on every >= 2-D weight
// (matmul weights and embeddings), none on biases and LayerNorm parameters. A tied weight is
// one registered parameter, so it appears here once. Plus the step's rule around it, kept on the
// device: the global gradient norm, the clip factor and the skip of a non-finite step are tensors
// there, so that a GPU step never waits for a read of the device (docs/performance.md).
#pragma once

#include <torch/torch.h>

#include <memory>

#include "config/run_config.h"

namespace sweep {

std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& params, const TrainConfig& t);
// The same two groups given apart (ZeRO's pieces of weights are 1-D whatever their weight's shape).
std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& decay,
                                                const std::vector<torch::Tensor>& no_decay, const TrainConfig& t);

// make_adamw's options (betas, eps, the decay group's weight decay, the other's 0) set from `t`
// again: loading a checkpoint restores the ones it was saved with, and a branch (config/branch.h)
// goes on with its own.
void set_adamw_options(torch::optim::Optimizer& opt, const TrainConfig& t);
void set_learning_rate(torch::optim::Optimizer& opt, double lr);

// The global L2 norm of all gradients, a 0-dim fp32 tensor on their device (0 with none): one
// _foreach_norm over them, then the norm of those norms — no read of the device. It may be
// non-finite: the step's rule below sees it.
torch::Tensor grad_norm(const std::vector<torch::Tensor>& params);

// The factor that scales gradients of global norm `norm` to `max_norm`: 1 when clipping is off
// (max_norm 0), not needed, or the norm is not finite. The rule on the host, as it was read there:
// step_scale computes it on the device, held to it bit for bit by its test.
double clip_factor(double norm, double max_norm);

// How a step applies its gradients, decided on the device from its loss and gradient norm:
// every gradient is multiplied by `factor` (clip_factor's rule, in double as on the host), and
// nothing is updated when `skip` is 1 (a non-finite loss or norm). A CPU tensor is read for free:
// the host-side paths read both there (factor_on_host, skipped).
struct StepScale {
  torch::Tensor norm;    // () the global gradient norm before clipping
  torch::Tensor factor;  // () double: the clip factor (1 without clipping)
  torch::Tensor skip;    // () fp32: 1 = a non-finite loss or norm, the update is not applied
  bool clipping = false;  // train.grad_clip > 0: without it the gradients are left as they are
  double factor_on_host() const { return factor.item<double>(); }  // a read of the device
  bool skipped() const { return skip.item<float>() != 0; }         // a read of the device
};
// `loss`: the step's loss on the same device (any shape with one element).
StepScale step_scale(const torch::Tensor& loss, const torch::Tensor& norm, double max_norm);

// Which AdamW runs a step. The equations are one (PyTorch's AdamW, the clip factor on the
// gradients); the paths differ in where the factor and the skip are read, and in speed.
enum class AdamWPath {
  automatic,    // foreach on a GPU; on the CPU fused_cpu with train.fused, else per_tensor
  per_tensor,   // LibTorch's AdamW::step, 8-9 ops a parameter; the factor and the skip read on the host
  fused_cpu,    // kernels/adamw: one pass over every parameter on the CPU (bf16 copies written); host-read factor
  foreach,      // at::_fused_adamw_ over each group, the factor as its grad_scale, the skip as its
                // found_inf and the learning rate a 0-dim fp32 tensor: nothing read on the host (CPU and
                // CUDA), and what a captured step runs (CapturedAdamW)
};
// The path `automatic` means for parameters on `device`.
AdamWPath resolve_adamw_path(AdamWPath path, const torch::Device& device, bool fused);
const char* to_string(AdamWPath path);

// One AdamW step of `opt` (its groups' lr, betas, eps, weight decay; its per-parameter state, so
// that a checkpoint of any path loads into any other) under the step's rule. A skipped step counts
// in the state's step count on every path (the foreach path cannot know it skipped without a read;
// a run ends at such a step, so nothing trains on that count).
void adamw_step(torch::optim::AdamW& opt, const StepScale& scale, AdamWPath path);

// AdamW's foreach path as a captured step takes it (train/step_graph.h): the same equations, on
// tensors that stay where the capture found them — the learning rate, set before each replay, and
// the step counts, counted on the device — while the host counts its own (for checkpoints, which
// every path reads). Made once every parameter has a gradient and its state; from then on the
// weights, gradients and moments must stay the tensors it found (backward accumulates into the
// gradients, the step zeroes them in place): a checkpoint loaded into `opt` makes it stale.
class CapturedAdamW {
 public:
  explicit CapturedAdamW(torch::optim::AdamW& opt);
  ~CapturedAdamW();
  // Before a step: the groups' rate on the host and on the device (a launch, no read).
  void set_learning_rate(double lr);
  // The step's update, under capture: the device's counts one more, then _fused_adamw_.
  void step(const StepScale& scale);
  // After each replay of the step: the host's counts one more.
  void counted();

 private:
  struct Groups;
  torch::optim::AdamW& m_opt;
  std::unique_ptr<Groups> m_groups;
  torch::Tensor m_lr;                  // () fp32 on the device
  std::vector<torch::Tensor> m_steps;  // each distinct count tensor once
};

// Every defined gradient of `params` set to zero in one _foreach_zero_ (kept allocated, as the
// memory plan counts them).
void zero_gradients(const std::vector<torch::Tensor>& params);

}  // namespace sweep
