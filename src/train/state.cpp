#include "train/state.h"

#include <array>
#include <cmath>
#include <unordered_set>

#include "kernels/adamw.h"
#include "parallel/parallel.h"
#include "train/experts.h"
#include "train/optim.h"
#include "train/zero.h"
#include "util/error.h"

namespace sweep {

namespace {

const void* key(const torch::Tensor& p) { return p.unsafeGetTensorImpl(); }

// `to`'s state for p: `from`'s, shared (not copied).
void share_state(torch::optim::AdamW& from, torch::optim::AdamW& to, const torch::Tensor& p) {
  auto& a = kernels::adamw_state(from, p);
  kernels::set_adamw_state(to, p, a.step(), a.exp_avg(), a.exp_avg_sq());
}

}  // namespace

TrainState::TrainState(GPT& model, const RunConfig& config, Communicator* comm)
    : m_model(model), m_train(config.train), m_comm(comm) {
  m_world = comm != nullptr ? comm->world() : 1;
  m_rank = comm != nullptr ? comm->rank() : 0;
  m_all = model->parameters();
  for (const auto& p : m_all) {
    m_dims.emplace(key(p), p.dim());
  }
  std::unordered_set<const void*> expert, remote;
  if (config.parallel.expert > 1 && m_world > 1) {
    if (config.parallel.expert != m_world) {
      throw Error("parallel.expert " + std::to_string(config.parallel.expert) + " on " + std::to_string(m_world) +
                      " ranks: the experts are partitioned over every rank — set parallel.expert to the ranks, or 1",
                  Exit::bad_input);
    }
    m_experts = std::make_unique<ExpertPartition>(partition_experts(m_model, *comm));
    for (size_t i = 0; i < m_experts->weights.size(); ++i) {
      expert.insert(key(m_experts->weights[i]));
      if (m_experts->owner[i] != m_rank) {
        remote.insert(key(m_experts->weights[i]));
      }
    }
  }
  std::vector<torch::Tensor> held;  // what this rank's AdamW steps when ZeRO does not: in the model's order
  for (const auto& p : m_all) {
    if (expert.count(key(p)) == 0) {
      m_dense.push_back(p);
    }
    if (remote.count(key(p)) == 0) {
      held.push_back(p);
    }
  }
  if (config.parallel.zero > 0 && m_world > 1) {
    // The dense weights outside the blocks (embeddings, head, final norm): whole for a step.
    std::unordered_set<const void*> in_blocks;
    for (const auto& p : m_model->transformer->h->parameters()) {
      in_blocks.insert(key(p));
    }
    std::vector<torch::Tensor> resident;
    for (const auto& p : m_dense) {
      if (in_blocks.count(key(p)) == 0) {
        resident.push_back(p);
      }
    }
    m_zero = std::make_unique<ZeroShards>(m_dense, resident, m_train, *comm, config.parallel.zero);
    if (config.parallel.zero == 3) {
      m_model->block_weights = m_zero.get();
    }
    if (m_experts) {
      m_opt = make_adamw(m_experts->local, m_train);
    }
  } else {
    m_opt = make_adamw(held, m_train);
  }
}

TrainState::~TrainState() = default;

bool TrainState::sharded() const { return m_zero || m_experts; }

std::string TrainState::describe() const {
  std::string s;
  if (m_zero) {
    s += ", ZeRO-" + std::to_string(m_zero->stage()) + " over " + std::to_string(m_world) + " ranks";
  }
  if (m_experts) {
    s += ", routed experts over " + std::to_string(m_world) + " ranks";
  }
  return s;
}

void TrainState::begin_step() {
  if (m_zero) {
    m_zero->gather_resident();
  }
}

void TrainState::reduce_gradients() {
  torch::NoGradGuard no_grad;
  // A weight no micro-batch reached (an expert that got no token) has a zero gradient, on every
  // rank and every LibTorch: AdamW steps it (momentum, weight decay) like the rest. (ZeRO counts
  // its own weights' missing gradients zero as it reduces them.)
  if (m_opt) {
    for (auto& group : m_opt->param_groups()) {
      for (auto& p : group.params()) {
        if (!p.grad().defined()) {
          p.mutable_grad() = torch::zeros_like(p);
        }
      }
    }
  }
  if (m_world <= 1) {
    return;
  }
  if (m_zero) {
    m_zero->reduce_gradients();
  } else {
    average_gradients(*m_comm, m_dense);  // one average a step, never per micro-batch
  }
  if (m_experts) {  // an expert's gradient came summed over every rank's tokens
    for (auto& p : m_experts->local) {
      p.mutable_grad().div_(static_cast<double>(m_world));
    }
  }
}

double TrainState::grad_norm() {
  const double dense = m_zero ? m_zero->grad_norm() : sweep::grad_norm(m_dense);
  if (!m_experts) {
    return dense;
  }
  const double mine = sweep::grad_norm(m_experts->local);  // each expert counted once, on its rank
  torch::Tensor experts = torch::full({1}, mine * mine, torch::TensorOptions().dtype(torch::kDouble));
  m_comm->all_reduce_sum(experts);
  return std::sqrt(dense * dense + experts.item<double>());
}

void TrainState::step(double lr, double grad_scale, bool fused) {
  if (m_zero) {
    m_zero->step(lr, grad_scale, fused);
  }
  if (m_opt) {
    set_learning_rate(*m_opt, lr);
    adamw_step(*m_opt, grad_scale, fused);
  }
}

void TrainState::end_step() {
  if (m_zero) {
    m_zero->zero_grad();
    m_zero->release_resident();
  }
  if (m_opt) {
    m_opt->zero_grad();
  }
}

void TrainState::begin_eval() {
  if (m_zero) {
    m_zero->gather_resident();
  }
}

void TrainState::end_eval() {
  if (m_zero) {
    m_zero->release_resident();
  }
}

std::unique_ptr<torch::optim::AdamW> TrainState::grouped(const std::vector<torch::Tensor>& params) const {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& p : params) {  // by the weight's own shape, whether this rank holds it or not
    (m_dims.at(key(p)) >= 2 ? decay : no_decay).push_back(p);
  }
  return make_adamw(decay, no_decay, m_train);
}

torch::optim::AdamW& TrainState::whole() {
  if (!sharded()) {
    return *m_opt;
  }
  torch::NoGradGuard no_grad;
  m_whole = grouped(m_all);
  if (m_zero) {
    m_zero->gather_all();
    m_zero->gather_state(*m_whole);
  } else if (!m_opt->state().empty()) {
    for (const auto& p : m_dense) {
      share_state(*m_opt, *m_whole, p);
    }
  }
  if (!m_experts) {
    return *m_whole;
  }
  // Every weight has a state after the first step: the experts' step count is the dense weights'.
  const bool stepped = !m_whole->state().empty();
  const int64_t steps = stepped ? kernels::adamw_state(*m_whole, m_dense.front()).step() : 0;
  ExpertPartition& x = *m_experts;
  for (size_t i = 0; i < x.weights.size(); ++i) {  // every rank, every expert, one order
    const torch::Tensor w = x.weights[i];
    const bool mine = x.owner[i] == m_rank;
    const torch::Tensor whole = from_owner(*m_comm, w, x.shapes[i], x.owner[i], w.options());
    if (!mine) {
      x.weights[i].set_data(whole);
    }
    if (stepped) {
      std::array<torch::Tensor, 2> moments;
      for (size_t k = 0; k < 2; ++k) {
        torch::Tensor own;
        if (mine) {
          auto& state = kernels::adamw_state(*m_opt, w);
          own = k == 0 ? state.exp_avg() : state.exp_avg_sq();
        }
        moments[k] = from_owner(*m_comm, own, x.shapes[i], x.owner[i], w.options());
      }
      kernels::set_adamw_state(*m_whole, w, steps, moments[0], moments[1]);
    }
  }
  return *m_whole;
}

void TrainState::release() {
  if (m_zero) {
    m_zero->release_all();
  }
  if (m_experts) {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < m_experts->weights.size(); ++i) {
      if (m_experts->owner[i] != m_rank) {
        m_experts->weights[i].set_data(torch::empty({0}, m_experts->weights[i].options()));
      }
    }
  }
  m_whole.reset();
}

std::unique_ptr<torch::optim::AdamW> TrainState::for_load() const { return grouped(m_all); }

void TrainState::adopt(torch::optim::AdamW& loaded) {
  if (m_zero) {
    m_zero->load(loaded);  // this rank's pieces of the dense weights and their moments
  }
  if (m_opt) {
    m_opt->state().clear();
    if (!loaded.state().empty()) {
      for (auto& group : m_opt->param_groups()) {
        for (auto& p : group.params()) {
          share_state(loaded, *m_opt, p);
        }
      }
    }
  }
  release();  // the other ranks' experts
}

torch::optim::AdamW& TrainState::optimizer() {
  TORCH_CHECK(!sharded(), "optimizer(): the state of this run is sharded");
  return *m_opt;
}

}  // namespace sweep
