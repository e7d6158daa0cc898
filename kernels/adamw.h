// AdamW (PyTorch's formula: decoupled weight decay, bias-corrected moments) over all parameters
// in one pass: each element's gradient, moments and weight are read and written once.
#pragma once

#include <torch/torch.h>

#include <sstream>
#include <type_traits>

namespace sweep::kernels {

// The key of a parameter's state in Optimizer::state(): in LibTorch 1.13 the TensorImpl's address
// as text (c10::guts::to_string: what an ostream prints), from 2.x the address itself.
template <typename Map>
typename Map::key_type optimizer_state_key(const torch::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream text;
    text << p.unsafeGetTensorImpl();
    return text.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

// One step of `opt` — its param groups' lr, betas, eps and weight decay, its per-parameter state
// (so checkpoints and the reference step are interchangeable) — with every gradient multiplied
// by grad_scale (the clipping factor, 1 for none). CPU fp32 parameters; no amsgrad. A parameter
// with a kept bf16 copy (kernels/linear.h) gets it written in the same pass.
void adamw_step(torch::optim::AdamW& opt, double grad_scale = 1.0);

// p's state in `opt` (the key LibTorch itself uses), made as AdamW::step makes it (zero
// moments, step 0) when it has none yet.
torch::optim::AdamWParamState& adamw_state(torch::optim::AdamW& opt, const torch::Tensor& p);
// p's state in `opt` set to this step count and these moments (taken, not copied), replacing any.
void set_adamw_state(torch::optim::AdamW& opt, const torch::Tensor& p, int64_t step, torch::Tensor exp_avg,
                     torch::Tensor exp_avg_sq);

// The same with LibTorch's own ops: grads scaled in place, then opt.step().
void adamw_step_reference(torch::optim::AdamW& opt, double grad_scale = 1.0);

}  // namespace sweep::kernels
