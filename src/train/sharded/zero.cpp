#include "train/sharded/zero.h"

#include <ATen/autocast_mode.h>

#include <array>

#include "kernels/adamw.h"
#include "parallel/parallel.h"
#include "train/optim.h"

namespace sweep {

namespace {

constexpr int64_t k_bucket_bytes = 25 << 20;  // as plain data parallel's all-reduce buckets

const void* key(const torch::Tensor& p) { return p.unsafeGetTensorImpl(); }

// A weight's elements as one row (its storage, not a copy).
torch::Tensor row(const torch::Tensor& p) { return p.detach().view({-1}); }

}  // namespace

ZeroShards::ZeroShards(std::vector<torch::Tensor> params, std::vector<torch::Tensor> resident,
                       const TrainConfig& train, Communicator& comm, int64_t stage)
    : m_comm(comm), m_stage(stage), m_rank(comm.rank()), m_world(comm.world()), m_train(train) {
  TORCH_CHECK(stage >= 1 && stage <= 3, "ZeRO stage ", stage, ": 1, 2 or 3");
  for (size_t i = 0; i < params.size(); ++i) {
    Slot s;
    s.param = params[i];
    TORCH_CHECK(s.param.is_contiguous(), "ZeRO shards contiguous weights");
    s.numel = s.param.numel();
    s.shape = s.param.sizes().vec();
    s.piece = (s.numel + m_world - 1) / m_world;
    m_index.emplace(key(s.param), i);
    m_slots.push_back(std::move(s));
  }
  m_resident = slots_of(resident);
  make_pieces();
  if (m_stage == 3) {
    release_all();
  }
}

void ZeroShards::make_pieces() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> decay, no_decay;
  for (Slot& s : m_slots) {
    const torch::Tensor mine = row(s.param).narrow(0, s.begin(m_rank), s.length(m_rank));
    s.weight = m_stage == 3 ? mine.clone() : mine;
    if (m_stage >= 2) {
      s.grad = torch::zeros_like(s.weight);
      s.weight.mutable_grad() = s.grad;
    }
    if (s.weight.numel() > 0) {
      (s.shape.size() >= 2 ? decay : no_decay).push_back(s.weight);  // as make_adamw groups the whole weights
    }
  }
  m_opt = make_adamw(decay, no_decay, m_train);
}

std::vector<size_t> ZeroShards::slots_of(const std::vector<torch::Tensor>& params) const {
  std::vector<size_t> which;
  for (const auto& p : params) {
    which.push_back(m_index.at(key(p)));
  }
  return which;
}

std::vector<size_t> ZeroShards::all() const {
  std::vector<size_t> which(m_slots.size());
  for (size_t i = 0; i < which.size(); ++i) {
    which[i] = i;
  }
  return which;
}

std::vector<ZeroShards::Bucket> ZeroShards::buckets(const std::vector<size_t>& which) const {
  std::vector<Bucket> out;
  for (size_t i : which) {
    const Slot& s = m_slots[i];
    const int64_t bytes = s.piece * m_world * s.param.element_size();
    if (out.empty() || (out.back().size * m_world * s.param.element_size() + bytes > k_bucket_bytes)) {
      out.emplace_back();
    }
    out.back().slots.push_back(i);
    out.back().offsets.push_back(out.back().size);
    out.back().size += s.piece;
  }
  return out;
}

void ZeroShards::all_gather(const std::vector<size_t>& which, const std::function<torch::Tensor(const Slot&)>& from,
                            const std::function<torch::Tensor(const Slot&)>& to) {
  torch::NoGradGuard no_grad;
  for (const Bucket& b : buckets(which)) {
    const auto options = m_slots[b.slots.front()].param.options();
    torch::Tensor mine = torch::zeros({b.size}, options), whole = torch::empty({b.size * m_world}, options);
    for (size_t k = 0; k < b.slots.size(); ++k) {
      const Slot& s = m_slots[b.slots[k]];
      if (s.length(m_rank) > 0) {
        mine.narrow(0, b.offsets[k], s.length(m_rank)).copy_(from(s));
      }
    }
    m_comm.all_gather_into(mine, whole);
    for (size_t k = 0; k < b.slots.size(); ++k) {
      const Slot& s = m_slots[b.slots[k]];
      torch::Tensor dst = to(s);
      for (int64_t r = 0; r < m_world; ++r) {
        if (s.length(r) > 0) {
          dst.narrow(0, s.begin(r), s.length(r)).copy_(whole.narrow(0, r * b.size + b.offsets[k], s.length(r)));
        }
      }
    }
  }
}

void ZeroShards::reduce_scatter(const std::vector<size_t>& which) {
  torch::NoGradGuard no_grad;
  for (const Bucket& b : buckets(which)) {
    const auto options = m_slots[b.slots.front()].param.options();
    torch::Tensor whole = torch::zeros({b.size * m_world}, options), mine = torch::empty({b.size}, options);
    for (size_t k = 0; k < b.slots.size(); ++k) {
      const Slot& s = m_slots[b.slots[k]];
      if (!s.param.grad().defined()) {
        continue;  // no micro-batch reached it (an expert that got no token): a zero gradient
      }
      const torch::Tensor g = row(s.param.grad());
      for (int64_t r = 0; r < m_world; ++r) {
        if (s.length(r) > 0) {
          whole.narrow(0, r * b.size + b.offsets[k], s.length(r)).copy_(g.narrow(0, s.begin(r), s.length(r)));
        }
      }
    }
    m_comm.reduce_scatter_sum(whole, mine);
    mine.div_(static_cast<double>(m_world));  // summed, then divided: plain data parallel's average
    for (size_t k = 0; k < b.slots.size(); ++k) {
      Slot& s = m_slots[b.slots[k]];
      if (s.length(m_rank) > 0) {
        s.grad.add_(mine.narrow(0, b.offsets[k], s.length(m_rank)));
      }
      s.param.mutable_grad() = torch::Tensor();  // the whole gradient's memory back
    }
  }
}

void ZeroShards::reduce_gradients() {
  torch::NoGradGuard no_grad;
  if (m_stage == 1) {
    std::vector<torch::Tensor> params;
    for (Slot& s : m_slots) {
      if (!s.param.grad().defined()) {
        s.param.mutable_grad() = torch::zeros_like(s.param);
      }
      params.push_back(s.param);
    }
    average_gradients(m_comm, params);
    for (Slot& s : m_slots) {  // this rank's pieces step with their piece of the whole gradient
      s.weight.mutable_grad() = row(s.param.grad()).narrow(0, s.begin(m_rank), s.length(m_rank));
    }
    return;
  }
  // Stage 3's blocks handed theirs over in backward; what is left is outside them.
  reduce_scatter(m_stage == 2 ? all() : m_resident);
}

torch::Tensor ZeroShards::grad_norm() {
  if (m_stage == 1) {
    std::vector<torch::Tensor> params;
    for (const Slot& s : m_slots) {
      params.push_back(s.param);
    }
    return sweep::grad_norm(params);  // the whole averaged gradients, on every rank: data parallel's norm
  }
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> pieces;
  for (const Slot& s : m_slots) {
    if (s.grad.numel() > 0) {
      pieces.push_back(s.grad);
    }
  }
  // this rank's sum of squares (in double), summed over the ranks: one _foreach_norm, no read
  torch::Tensor total = pieces.empty() ? torch::zeros({1}, m_slots.front().param.options().dtype(torch::kDouble))
                                       : torch::stack(at::_foreach_norm(pieces, 2)).to(torch::kDouble).square().sum().reshape({1});
  m_comm.all_reduce_sum(total);
  return total.sqrt().reshape({});
}

void ZeroShards::step(double lr, const StepScale& scale, AdamWPath path) {
  set_learning_rate(*m_opt, lr);
  adamw_step(*m_opt, scale, path);
  if (m_stage < 3) {  // every rank's updated pieces into every rank's weights
    all_gather(all(), [](const Slot& s) { return s.weight; }, [](const Slot& s) { return row(s.param); });
  }
}

void ZeroShards::zero_grad() {
  std::vector<torch::Tensor> held;  // stages 2-3: this rank's pieces (their gradients); 1: the whole weights
  for (Slot& s : m_slots) {
    held.push_back(m_stage >= 2 ? s.weight : s.param);
  }
  zero_gradients(held);
}

void ZeroShards::gather_weights(const std::vector<size_t>& which) {
  torch::NoGradGuard no_grad;
  for (size_t i : which) {
    m_slots[i].param.set_data(torch::empty(m_slots[i].shape, m_slots[i].param.options()));
  }
  all_gather(which, [](const Slot& s) { return s.weight; }, [](const Slot& s) { return row(s.param); });
}

void ZeroShards::release_weights(const std::vector<size_t>& which) {
  torch::NoGradGuard no_grad;
  // autocast keeps its bf16 copy of every weight until the forward ends: these weights' go now
  at::autocast::clear_cache();
  for (size_t i : which) {
    m_slots[i].param.set_data(torch::empty({0}, m_slots[i].param.options()));
  }
}

void ZeroShards::gather_resident() {
  if (m_stage == 3) {
    gather_weights(m_resident);
  }
}

void ZeroShards::release_resident() {
  if (m_stage == 3) {
    release_weights(m_resident);
  }
}

void ZeroShards::gather_all() {
  if (m_stage == 3) {
    gather_weights(all());
  }
}

void ZeroShards::release_all() {
  if (m_stage == 3) {
    release_weights(all());
  }
}

std::vector<size_t> ZeroShards::block_slots(torch::nn::Module& block) const {
  std::vector<size_t> which;
  for (const auto& p : block.parameters()) {
    const auto it = m_index.find(key(p));
    if (it != m_index.end()) {  // not an expert of expert parallelism's: those stay with their rank
      which.push_back(it->second);
    }
  }
  return which;
}

void ZeroShards::gather(torch::nn::Module& block) { gather_weights(block_slots(block)); }

void ZeroShards::release(torch::nn::Module& block) { release_weights(block_slots(block)); }

void ZeroShards::reduce_gradients(torch::nn::Module& block) { reduce_scatter(block_slots(block)); }

bool ZeroShards::holds(const torch::Tensor& param) const { return m_index.count(key(param)) > 0; }

ZeroShards::Piece ZeroShards::piece(const torch::Tensor& param) {
  const Slot& s = m_slots[m_index.at(key(param))];
  Piece out{s.begin(m_rank), s.weight, {}, {}};
  if (s.weight.numel() > 0 && !m_opt->state().empty()) {
    auto& state = kernels::adamw_state(*m_opt, s.weight);
    out.exp_avg = state.exp_avg();
    out.exp_avg_sq = state.exp_avg_sq();
  }
  return out;
}

void ZeroShards::set_moments(const torch::Tensor& param, int64_t steps, const torch::Tensor& exp_avg,
                             const torch::Tensor& exp_avg_sq) {
  const Slot& s = m_slots[m_index.at(key(param))];
  kernels::set_adamw_state(*m_opt, s.weight, steps, exp_avg, exp_avg_sq);
}

void ZeroShards::clear_moments() { m_opt->state().clear(); }

int64_t ZeroShards::adam_steps() {
  // Every piece has stepped as often as every other (a weight no token reached steps on a zero
  // gradient): one count.
  for (const Slot& s : m_slots) {
    if (s.weight.numel() > 0 && !m_opt->state().empty()) {
      return kernels::adamw_state(*m_opt, s.weight).step();
    }
  }
  return 0;
}

void ZeroShards::load(torch::optim::AdamW& whole) {
  torch::NoGradGuard no_grad;
  // Loading a model may give its weights new storage: the pieces are made again from them.
  make_pieces();
  if (!whole.state().empty()) {
    for (const Slot& s : m_slots) {
      if (s.weight.numel() == 0) {
        continue;
      }
      auto& from = kernels::adamw_state(whole, s.param);
      kernels::set_adamw_state(*m_opt, s.weight, from.step(),
                               row(from.exp_avg()).narrow(0, s.begin(m_rank), s.length(m_rank)).clone(),
                               row(from.exp_avg_sq()).narrow(0, s.begin(m_rank), s.length(m_rank)).clone());
    }
  }
  release_all();
}

}  // namespace sweep
