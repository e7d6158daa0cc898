#include "train/optim.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

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

void set_adamw_options(torch::optim::Optimizer& opt, const TrainConfig& t) {
  auto& groups = opt.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    auto& o = static_cast<torch::optim::AdamWOptions&>(groups[i].options());
    o.betas({t.beta1, t.beta2}).eps(t.eps).weight_decay(i == 0 ? t.weight_decay : 0.0);
  }
}

void set_learning_rate(torch::optim::Optimizer& opt, double lr) {
  for (auto& group : opt.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
}

torch::Tensor grad_norm(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) {
      grads.push_back(p.grad().detach().to(torch::kFloat));
    }
  }
  if (grads.empty()) {
    return torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(params.empty() ? torch::kCPU : params.front().device()));
  }
  // (the norm of the per-tensor norms, as before: on the CPU bitwise the per-tensor .norm(2)'s)
  return torch::stack(at::_foreach_norm(grads, 2)).norm(2);
}

double clip_factor(double norm, double max_norm) {
  return max_norm > 0 && std::isfinite(norm) && norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;
}

StepScale step_scale(const torch::Tensor& loss, const torch::Tensor& norm, double max_norm) {
  torch::NoGradGuard no_grad;
  const torch::Tensor n = norm.detach().to(torch::kDouble).reshape({});
  const torch::Tensor norm_finite = torch::isfinite(n);
  StepScale s;
  s.norm = norm;
  s.clipping = max_norm > 0;
  s.skip = torch::logical_not(norm_finite & torch::isfinite(loss.detach()).all()).to(torch::kFloat);
  // clip_factor's rule, elementwise in double: the same bits as the host's
  s.factor = max_norm > 0 ? torch::where(norm_finite & (n > max_norm), torch::full_like(n, max_norm) / (n + 1e-6),
                                         torch::ones_like(n))
                          : torch::ones_like(n);
  return s;
}

AdamWPath resolve_adamw_path(AdamWPath path, const torch::Device& device, bool fused) {
  if (path != AdamWPath::automatic) {
    return path;
  }
  if (!device.is_cpu()) {
    return AdamWPath::foreach;
  }
  return fused ? AdamWPath::fused_cpu : AdamWPath::per_tensor;
}

const char* to_string(AdamWPath path) {
  switch (path) {
    case AdamWPath::automatic:
      return "automatic";
    case AdamWPath::per_tensor:
      return "per-tensor";
    case AdamWPath::fused_cpu:
      return "fused-cpu";
    case AdamWPath::foreach:
      return "foreach";
  }
  return "?";
}

namespace {

// One group of an AdamW as at::_fused_adamw_ takes it: its parameters with a gradient, their
// moments and step counts (0-dim fp32 tensors on the device: one per distinct count in the group,
// one unless a checkpoint says otherwise), and its options.
struct FusedGroup {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
  const torch::optim::AdamWOptions* options = nullptr;
};

// Every group of `opt` with its parameters' counts as the host keeps them — each one more first
// when `advance` (a step counted now).
std::vector<FusedGroup> fused_groups(torch::optim::AdamW& opt, bool advance) {
  std::vector<FusedGroup> groups;
  for (auto& group : opt.param_groups()) {
    FusedGroup g;
    g.options = &static_cast<const torch::optim::AdamWOptions&>(group.options());
    std::map<int64_t, torch::Tensor> steps;  // count -> its tensor on the device
    for (auto& p : group.params()) {
      if (!p.grad().defined()) {
        continue;
      }
      auto& state = kernels::adamw_state(opt, p);
      if (advance) {
        state.step(state.step() + 1);
      }
      auto [it, added] = steps.try_emplace(state.step());
      if (added) {
        it->second = torch::full({}, static_cast<double>(state.step()), p.options().dtype(torch::kFloat));
      }
      g.steps.push_back(it->second);
      g.params.push_back(p.detach());
      g.grads.push_back(p.grad());
      g.exp_avgs.push_back(state.exp_avg());
      g.exp_avg_sqs.push_back(state.exp_avg_sq());
    }
    if (!g.params.empty()) {
      groups.push_back(std::move(g));
    }
  }
  return groups;
}

// at::_fused_adamw_ over each group at learning rate `lr` (0-dim fp32 on the weights' device: a
// replayed graph reads it there): it divides the gradients by grad_scale (the clip factor's
// reciprocal; none without clipping) and leaves everything as it was where found_inf is 1.
void fused_adamw(const std::vector<FusedGroup>& groups, const torch::Tensor& lr, const StepScale& scale) {
  RECORD_USER_SCOPE("sweep::adamw_foreach");
  torch::NoGradGuard no_grad;
  const std::optional<torch::Tensor> divisor =
      scale.clipping ? std::optional<torch::Tensor>(scale.factor.reciprocal().to(torch::kFloat)) : std::nullopt;
  for (const FusedGroup& g : groups) {
    const torch::optim::AdamWOptions& o = *g.options;
    at::_fused_adamw_(g.params, g.grads, g.exp_avgs, g.exp_avg_sqs, {}, g.steps, lr, std::get<0>(o.betas()),
                      std::get<1>(o.betas()), o.weight_decay(), o.eps(), /*amsgrad=*/false, /*maximize=*/false, divisor,
                      scale.skip);
  }
}

torch::Tensor lr_tensor(double lr, const torch::Device& device) {
  return torch::full({}, lr, torch::TensorOptions().dtype(torch::kFloat).device(device));
}

// The foreach path of one step: the counts from the host's, one more; the groups' learning rate
// (one for all: set_learning_rate sets every group's).
void foreach_adamw_step(torch::optim::AdamW& opt, const StepScale& scale) {
  const std::vector<FusedGroup> groups = fused_groups(opt, /*advance=*/true);
  if (!groups.empty()) {
    fused_adamw(groups, lr_tensor(groups.front().options->lr(), groups.front().params.front().device()), scale);
  }
}

// A step counted in every parameter's state, as the foreach path counts it.
void count_step(torch::optim::AdamW& opt) {
  for (auto& group : opt.param_groups()) {
    for (auto& p : group.params()) {
      if (p.grad().defined()) {
        auto& state = kernels::adamw_state(opt, p);
        state.step(state.step() + 1);
      }
    }
  }
}

}  // namespace

void adamw_step(torch::optim::AdamW& opt, const StepScale& scale, AdamWPath path) {
  if (path == AdamWPath::foreach) {
    foreach_adamw_step(opt, scale);
    return;
  }
  if (scale.skipped()) {  // a skipped step counts, as on the foreach path
    count_step(opt);
    return;
  }
  if (path == AdamWPath::fused_cpu) {
    kernels::adamw_step(opt, scale.factor_on_host());
  } else {
    kernels::adamw_step_reference(opt, scale.factor_on_host());
  }
}

struct CapturedAdamW::Groups {
  std::vector<FusedGroup> list;
};

CapturedAdamW::CapturedAdamW(torch::optim::AdamW& opt)
    : m_opt(opt), m_groups(std::make_unique<Groups>(Groups{fused_groups(opt, /*advance=*/false)})) {
  TORCH_CHECK(!m_groups->list.empty(), "CapturedAdamW: no parameter has a gradient yet (take a step first)");
  m_lr = lr_tensor(m_groups->list.front().options->lr(), m_groups->list.front().params.front().device());
  for (const FusedGroup& g : m_groups->list) {
    for (const torch::Tensor& count : g.steps) {
      if (std::none_of(m_steps.begin(), m_steps.end(), [&](const torch::Tensor& t) { return t.is_same(count); })) {
        m_steps.push_back(count);
      }
    }
  }
}

CapturedAdamW::~CapturedAdamW() = default;

void CapturedAdamW::set_learning_rate(double lr) {
  sweep::set_learning_rate(m_opt, lr);
  m_lr.fill_(lr);
}

void CapturedAdamW::step(const StepScale& scale) {
  torch::NoGradGuard no_grad;
  at::_foreach_add_(m_steps, 1);
  fused_adamw(m_groups->list, m_lr, scale);
}

void CapturedAdamW::counted() { count_step(m_opt); }

void zero_gradients(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) {
      grads.push_back(p.grad());
    }
  }
  if (!grads.empty()) {
    torch::NoGradGuard no_grad;
    at::_foreach_zero_(grads);
  }
}

}  // namespace sweep
