#include "train/muon.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "kernels/adamw.h"
#include "kernels/linear.h"

namespace sweep {

torch::Tensor newton_schulz(const torch::Tensor& g, int64_t steps, torch::ScalarType dtype) {
  TORCH_CHECK(g.dim() >= 2, "newton_schulz: a matrix (or a batch of them) expected, got ", g.sizes());
  auto x = g.to(dtype);
  const bool tall = g.size(-2) > g.size(-1);
  if (tall) {
    x = x.transpose(-2, -1);
  }
  x = x / (x.to(torch::kFloat).norm(2, {-2, -1}, /*keepdim=*/true) + 1e-7).to(dtype);
  for (int64_t i = 0; i < steps; ++i) {
    const auto a = kernels::matmul(x, x.transpose(-2, -1));
    const auto b = k_ns_b * a + k_ns_c * kernels::matmul(a, a);
    x = k_ns_a * x + kernels::matmul(b, x);
  }
  return tall ? x.transpose(-2, -1) : x;
}

Muon::Muon(std::vector<torch::Tensor> params, std::vector<int64_t> stacked, MuonOptions options)
    : m_params(std::move(params)),
      m_stacked(std::move(stacked)),
      m_options(options),
      // (LibTorch's SGD refuses Nesterov without momentum; the options only label the saved state)
      m_state(m_params, torch::optim::SGDOptions(options.lr).momentum(options.momentum).nesterov(options.momentum > 0)) {
  TORCH_CHECK(m_stacked.size() == m_params.size(), "Muon: one stacked count per parameter");
  for (size_t i = 0; i < m_params.size(); ++i) {
    TORCH_CHECK(m_params[i].dim() == 2 && m_stacked[i] >= 1 && m_params[i].size(0) % m_stacked[i] == 0,
                "Muon: a 2-D weight whose rows split into ", m_stacked[i], " matrices expected, got ",
                m_params[i].sizes());
  }
}

double Muon::momentum_at(int64_t step) const {
  if (m_options.momentum_warmup <= 0) {
    return m_options.momentum;
  }
  const double frac = std::min(1.0, static_cast<double>(step) / static_cast<double>(m_options.momentum_warmup));
  return (1 - frac) * 0.85 + frac * m_options.momentum;
}

void Muon::step(double lr_scale, const StepScale& scale, int64_t steps_before) {
  torch::NoGradGuard no_grad;
  const torch::Tensor skip = scale.skip.to(torch::kBool);  // where it is set, every buffer and weight stays
  const double lr = m_options.lr * lr_scale, mu = momentum_at(steps_before);
  auto& states = m_state.state();
  using Map = std::remove_reference_t<decltype(states)>;
  // The Nesterov updates, as (matrices, rows, cols) batches of one shape each: the Newton–Schulz
  // products then run once per shape (an MoE layer's experts, the blocks' like projections),
  // not once per matrix — each matrix is still orthogonalised on its own.
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_shape;
  std::vector<torch::Tensor> updates(m_params.size());
  for (size_t i = 0; i < m_params.size(); ++i) {
    torch::Tensor& p = m_params[i];
    if (!p.grad().defined()) {
      continue;
    }
    // (× a 0-dim double: the bits of × the host's factor)
    const auto g = scale.clipping ? p.grad() * scale.factor : p.grad();
    const auto key = kernels::optimizer_state_key<Map>(p);
    auto it = states.find(key);
    if (it == states.end()) {
      auto state = std::make_unique<torch::optim::SGDParamState>();
      state->momentum_buffer(torch::zeros_like(p, torch::MemoryFormat::Contiguous));
      it = states.emplace(key, std::move(state)).first;
    }
    auto& buf = static_cast<torch::optim::SGDParamState&>(*it->second).momentum_buffer();
    buf.copy_(torch::where(skip, buf, buf * mu + g));
    const int64_t n = m_stacked[i], rows = p.size(0) / n, cols = p.size(1);
    updates[i] = g.add(buf, mu).view({n, rows, cols});  // Nesterov
    by_shape[{rows, cols}].push_back(i);
  }
  for (const auto& [shape, members] : by_shape) {
    std::vector<torch::Tensor> batch;
    for (const size_t i : members) {
      batch.push_back(updates[i]);
    }
    const auto o = newton_schulz(batch.size() == 1 ? batch[0] : torch::cat(batch), m_options.ns_steps, m_options.dtype);
    const double aspect = std::sqrt(std::max(1.0, static_cast<double>(shape.first) / static_cast<double>(shape.second)));
    int64_t first = 0;
    for (const size_t i : members) {
      torch::Tensor& p = m_params[i];
      const auto update = o.narrow(0, first, m_stacked[i]).reshape_as(p).to(p.scalar_type());
      p.add_(torch::where(skip, torch::zeros({}, update.options()), update), -lr * aspect);
      first += m_stacked[i];
    }
  }
}

void Muon::zero_grad() { zero_gradients(m_params); }  // as the other weights' (kept, zeroed)

}  // namespace sweep
