#include "kernels/adamw.h"

#include <cmath>
#include <string>

#include "kernels/common.h"
#include "kernels/linear.h"

namespace sweep::kernels {

torch::optim::AdamWParamState& adamw_state(torch::optim::AdamW& opt, const torch::Tensor& p) {
  auto& states = opt.state();
  using Map = std::remove_reference_t<decltype(states)>;
  auto key = optimizer_state_key<Map>(p);
  auto it = states.find(key);
  if (it == states.end()) {  // as AdamW::step: zero moments, step 0
    auto state = std::make_unique<torch::optim::AdamWParamState>();
    state->step(0);
    state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    it = states.emplace(key, std::move(state)).first;
  }
  return static_cast<torch::optim::AdamWParamState&>(*it->second);
}

void set_adamw_state(torch::optim::AdamW& opt, const torch::Tensor& p, int64_t step, torch::Tensor exp_avg,
                     torch::Tensor exp_avg_sq) {
  auto& states = opt.state();
  auto state = std::make_unique<torch::optim::AdamWParamState>();
  state->step(step);
  state->exp_avg(std::move(exp_avg));
  state->exp_avg_sq(std::move(exp_avg_sq));
  states[optimizer_state_key<std::remove_reference_t<decltype(states)>>(p)] = std::move(state);
}

void adamw_step(torch::optim::AdamW& opt, double grad_scale) {
  RECORD_USER_SCOPE("sweep::adamw");
  torch::NoGradGuard no_grad;
  std::vector<cpu::AdamWSegment> segments;
  std::vector<torch::Tensor> copied;  // the parameters whose kept bf16 copy the pass writes
  for (auto& group : opt.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    TORCH_CHECK(!o.amsgrad(), "adamw_step: amsgrad is not supported by the fused AdamW");
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) {
        continue;
      }
      const auto& grad = p.grad();
      TORCH_CHECK(p.scalar_type() == torch::kFloat && grad.scalar_type() == torch::kFloat && p.device().is_cpu() &&
                      p.is_contiguous() && grad.is_contiguous(),
                  "adamw_step: contiguous fp32 CPU parameters and gradients expected");
      auto& state = adamw_state(opt, p);
      state.step(state.step() + 1);
      const auto step = static_cast<double>(state.step());
      const double bias_correction1 = 1 - std::pow(beta1, step), bias_correction2 = 1 - std::pow(beta2, step);
      c10::BFloat16* const copy = bf16_copy_target(p);
      if (copy != nullptr) {
        copied.push_back(p);
      }
      segments.push_back({p.data_ptr<float>(), copy, grad.data_ptr<float>(), state.exp_avg().data_ptr<float>(),
                          state.exp_avg_sq().data_ptr<float>(), p.numel(),
                          static_cast<float>(1 - o.lr() * o.weight_decay()), static_cast<float>(o.lr() / bias_correction1),
                          static_cast<float>(std::sqrt(bias_correction2)), static_cast<float>(beta1),
                          static_cast<float>(1 - beta1), static_cast<float>(beta2), static_cast<float>(1 - beta2),
                          static_cast<float>(o.eps())});
    }
  }
  cpu::ops().adamw(segments.data(), static_cast<int64_t>(segments.size()), static_cast<float>(grad_scale));
  for (const auto& p : copied) {  // the kept bf16 copies are the new weights' now
    bf16_copy_written(p);
  }
}

void adamw_step_reference(torch::optim::AdamW& opt, double grad_scale) {
  if (grad_scale != 1.0) {
    torch::NoGradGuard no_grad;
    for (auto& group : opt.param_groups()) {
      for (auto& p : group.params()) {
        if (p.grad().defined()) {
          p.grad().mul_(grad_scale);
        }
      }
    }
  }
  opt.step();
}

}  // namespace sweep::kernels
