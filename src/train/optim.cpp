#include "train/optim.h"

#include <cmath>

#include "kernels/adamw.h"

namespace sweep {

std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& params, const TrainConfig& t) {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& p : params) {
    (p.dim() >= 2 ? decay : no_decay).push_back(p);
  }
  return make_adamw(decay, no_decay, t);
}

std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& decay,
                                                const std::vector<torch::Tensor>& no_decay, const TrainConfig& t) {
  auto options = [&](double wd) {
    // Set every field: the C++ defaults (wd 0.01, betas 0.9/0.999) are not GPT's.
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(t.lr).betas({t.beta1, t.beta2}).eps(t.eps).weight_decay(wd).amsgrad(false));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, options(t.weight_decay));
  groups.emplace_back(no_decay, options(0.0));
  return std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(t.lr));
}

void set_learning_rate(torch::optim::Optimizer& opt, double lr) {
  for (auto& group : opt.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
}

double grad_norm(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> norms;
  for (const auto& p : params) {
    if (p.grad().defined()) {
      norms.push_back(p.grad().detach().to(torch::kFloat).norm(2));
    }
  }
  return norms.empty() ? 0.0 : torch::stack(norms).norm(2).item<double>();  // one device sync a step
}

double clip_factor(double norm, double max_norm) {
  return max_norm > 0 && std::isfinite(norm) && norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;
}

void adamw_step(torch::optim::AdamW& opt, double grad_scale, bool fused) {
  const auto& first = opt.param_groups().front().params();
  if (fused && !first.empty() && first.front().device().is_cpu()) {
    kernels::adamw_step(opt, grad_scale);
  } else {
    kernels::adamw_step_reference(opt, grad_scale);
  }
}

}  // namespace sweep
