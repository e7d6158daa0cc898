#include "train/sharded/state.h"

#include <cmath>
#include <unordered_set>

#include "kernels/adamw.h"
#include "kernels/linear.h"
#include "parallel/parallel.h"
#include "train/sharded/experts.h"
#include "train/muon.h"
#include "train/optim.h"
#include "train/sharded/zero.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

const void* key(const torch::Tensor& p) { return p.unsafeGetTensorImpl(); }

// `to`'s state for p: `from`'s, shared (not copied).
void share_state(torch::optim::AdamW& from, torch::optim::AdamW& to, const torch::Tensor& p) {
  auto& a = kernels::adamw_state(from, p);
  kernels::set_adamw_state(to, p, a.step(), a.exp_avg(), a.exp_avg_sq());
}

// The parameters inside the transformer blocks (not the embeddings, the head or the final norm).
std::unordered_set<const void*> block_parameters(GPT& model) {
  std::unordered_set<const void*> out;
  for (const auto& p : model->transformer->h->parameters()) {
    out.insert(key(p));
  }
  return out;
}

}  // namespace

TrainState::TrainState(GPT& model, const RunConfig& config, Communicator* comm)
    : m_model(model), m_train(config.train), m_comm(comm) {
  m_world = comm != nullptr ? comm->world() : 1;
  m_rank = comm != nullptr ? comm->rank() : 0;
  for (const auto& item : model->named_parameters()) {
    const torch::Tensor& p = item.value();
    m_all.push_back(p);
    m_names.push_back(item.key());
    m_shapes.emplace(key(p), p.sizes().vec());
  }
  if (config.train.optimizer == Optimizer::muon && m_world > 1 && (config.parallel.zero > 0 || config.parallel.expert > 1)) {
    // (the config refuses it at the key; ranks given on the command line come here)
    throw Error("train.optimizer: muon orthogonalises each weight matrix whole on every rank: not with parallel.zero or "
                "parallel.expert over " + std::to_string(m_world) + " ranks — set both to their defaults, or use adamw",
                Exit::bad_input);
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
      m_owner.emplace(key(m_experts->weights[i]), m_experts->owner[i]);
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
    const std::unordered_set<const void*> in_blocks = block_parameters(m_model);
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
  } else if (config.train.optimizer == Optimizer::muon) {
    // Muon takes the blocks' 2-D weights (each matrix whole: no ZeRO, no expert parallelism, both
    // refused with it at the config); AdamW the embeddings, the head, biases and norms.
    const std::unordered_set<const void*> in_blocks = block_parameters(m_model);
    std::vector<torch::Tensor> matrices, rest;
    std::vector<int64_t> stacked;
    for (size_t i = 0; i < m_all.size(); ++i) {
      const torch::Tensor& p = m_all[i];
      if (p.dim() == 2 && in_blocks.count(key(p)) != 0) {
        matrices.push_back(p);
        stacked.push_back(ends_with(m_names[i], "attn.c_attn.weight") ? 3 : 1);  // Q, K and V apart
      } else {
        rest.push_back(p);
      }
    }
    MuonOptions options;
    options.lr = config.train.muon_lr;
    options.momentum = config.train.muon_momentum;
    options.momentum_warmup = config.train.muon_momentum_warmup;
    options.dtype = config.train.precision == Precision::bf16 ? torch::kBFloat16 : torch::kFloat;
    m_muon = std::make_unique<Muon>(matrices, stacked, options);
    m_opt = make_adamw(rest, m_train);
  } else {
    m_opt = make_adamw(held, m_train);
  }
  // The fused bf16 step multiplies by bf16 copies of the weights that stay whole between steps,
  // kept and written by the fused AdamW (kernels/linear.h); ZeRO-3 gathers its weights at each use.
  if (config.train.fused && config.train.precision == Precision::bf16 && !m_all.empty() && m_all.front().device().is_cpu() &&
      !(m_zero && m_zero->stage() == 3)) {
    std::vector<torch::Tensor> kept;
    for (const auto& w : model->matmul_weights()) {
      if (remote.count(key(w)) == 0) {
        kept.push_back(w);
      }
    }
    m_bf16_copies = std::make_unique<kernels::KeptBf16Copies>(kept);
  }
  m_fused = config.train.fused;
  set_adamw_path(AdamWPath::automatic);
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
  // rank and every LibTorch: AdamW (or Muon) steps it (momentum, weight decay) like the rest. (ZeRO counts
  // its own weights' missing gradients zero as it reduces them.)
  for (auto* opt : {static_cast<torch::optim::Optimizer*>(m_opt.get()), muon_state()}) {
    if (opt == nullptr) {
      continue;
    }
    for (auto& group : opt->param_groups()) {
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

torch::Tensor TrainState::grad_norm() {
  torch::Tensor dense = m_zero ? m_zero->grad_norm() : sweep::grad_norm(m_dense);
  if (!m_experts) {
    return dense;
  }
  // each expert counted once, on its rank; the squares summed over the ranks (in double)
  torch::Tensor experts = sweep::grad_norm(m_experts->local).to(torch::kDouble).square().reshape({1});
  m_comm->all_reduce_sum(experts);
  return (dense.to(torch::kDouble).square() + experts.reshape({})).sqrt();
}

void TrainState::set_adamw_path(AdamWPath path) {
  m_path = resolve_adamw_path(path, m_all.empty() ? torch::Device(torch::kCPU) : m_all.front().device(), m_fused);
}

void TrainState::step(double lr, const StepScale& scale, int64_t steps_before) {
  if (m_zero) {
    m_zero->step(lr, scale, m_path);
  }
  if (m_opt) {
    set_learning_rate(*m_opt, lr);
    adamw_step(*m_opt, scale, m_path);
  }
  if (m_muon) {  // on the same schedule: its lr scaled as AdamW's is
    m_muon->step(lr / m_train.lr, scale, steps_before);
  }
}

torch::optim::Optimizer* TrainState::muon_state() { return m_muon ? &m_muon->state() : nullptr; }

void TrainState::end_step() {
  if (m_zero) {
    m_zero->zero_grad();
    m_zero->release_resident();
  }
  // Gradients are zeroed, not freed (LibTorch 2.x's default): they stay allocated between steps,
  // as the memory plan counts them (memory_plan/memory.cpp), and a weight no token reached keeps a
  // zero one. One _foreach_zero_ for all of them.
  if (m_opt) {
    std::vector<torch::Tensor> params;
    for (const auto& group : m_opt->param_groups()) {
      params.insert(params.end(), group.params().begin(), group.params().end());
    }
    zero_gradients(params);
  }
  if (m_muon) {
    m_muon->zero_grad();
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
    (m_shapes.at(key(p)).size() >= 2 ? decay : no_decay).push_back(p);
  }
  return make_adamw(decay, no_decay, m_train);
}

void TrainState::gather_weights() {
  torch::NoGradGuard no_grad;
  if (m_zero) {
    m_zero->gather_all();
  }
  if (m_experts) {
    ExpertPartition& x = *m_experts;
    for (size_t i = 0; i < x.weights.size(); ++i) {  // every rank, every expert, one order
      const torch::Tensor whole = from_owner(*m_comm, x.weights[i], x.shapes[i], x.owner[i], x.weights[i].options());
      if (x.owner[i] != m_rank) {
        x.weights[i].set_data(whole);
      }
    }
  }
}

void TrainState::release_weights() {
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
}

int64_t TrainState::adam_steps() {
  if (m_zero) {
    return m_zero->adam_steps();  // every weight steps together: the experts' count is the same
  }
  if (m_opt->state().empty()) {
    return 0;  // before the first step
  }
  for (auto& group : m_opt->param_groups()) {
    if (!group.params().empty()) {
      return kernels::adamw_state(*m_opt, group.params().front()).step();
    }
  }
  return 0;
}

std::vector<ShardEntry> TrainState::shard_entries() {
  const bool moments = adam_steps() > 0;
  std::vector<ShardEntry> out;
  // `t` whole: rank r writes its r-th piece as ZeRO cuts it, or (`all`: an expert) all of it.
  auto add = [&](const std::string& name, const torch::Tensor& t, const torch::Tensor& param, bool all) {
    const int64_t n = t.numel(), piece = all ? n : (n + m_world - 1) / m_world;
    const int64_t begin = all ? 0 : std::min(n, m_rank * piece), length = std::min(n, begin + piece) - begin;
    if (length == 0) {
      return;
    }
    ShardEntry e{name, begin, t.detach().view({-1}).narrow(0, begin, length), {}, {}};
    if (moments && param.defined()) {
      auto& state = kernels::adamw_state(*m_opt, param);
      e.exp_avg = state.exp_avg().view({-1}).narrow(0, begin, length);
      e.exp_avg_sq = state.exp_avg_sq().view({-1}).narrow(0, begin, length);
    }
    out.push_back(std::move(e));
  };
  for (size_t i = 0; i < m_all.size(); ++i) {
    const torch::Tensor& p = m_all[i];
    const auto owner = m_owner.find(key(p));
    if (owner != m_owner.end() && owner->second != m_rank) {
      continue;  // another rank's expert
    }
    if (m_zero && m_zero->holds(p)) {
      ZeroShards::Piece piece = m_zero->piece(p);
      if (piece.value.numel() > 0) {
        out.push_back({m_names[i], piece.begin, piece.value.view({-1}), piece.exp_avg, piece.exp_avg_sq});
      }
    } else {
      add(m_names[i], p, p, owner != m_owner.end());
    }
  }
  for (const auto& b : m_model->named_buffers()) {  // the balancing biases: the same on every rank
    add(b.key(), b.value(), torch::Tensor(), false);
  }
  return out;
}

std::vector<ShardRead> TrainState::shard_reads(int64_t adam_steps) {
  if (m_zero) {
    m_zero->clear_moments();
  }
  if (m_opt) {
    m_opt->state().clear();
  }
  std::vector<ShardRead> out;
  for (size_t i = 0; i < m_all.size(); ++i) {
    const torch::Tensor p = m_all[i];
    const auto owner = m_owner.find(key(p));
    if (owner != m_owner.end() && owner->second != m_rank) {
      continue;  // another rank's expert
    }
    const std::vector<int64_t>& shape = m_shapes.at(key(p));
    const int64_t n = c10::multiply_integers(shape);
    // The values: whole, where this rank holds the weight whole; else (ZeRO-3) its piece.
    const bool zero = m_zero && m_zero->holds(p);
    const ZeroShards::Piece piece = zero ? m_zero->piece(p) : ZeroShards::Piece{0, p, {}, {}};
    const int64_t length = zero ? piece.value.numel() : n;
    const bool own_piece = zero && m_zero->stage() == 3;
    torch::Tensor to = own_piece ? piece.value : p.detach();
    if (to.numel() > 0) {
      out.push_back(ShardRead::into(m_names[i], n, own_piece ? piece.begin : 0, to));
    }
    if (adam_steps == 0 || length == 0) {
      continue;
    }
    // The moments of what this rank steps: its piece under ZeRO, else the whole weight.
    ZeroShards* z = zero ? m_zero.get() : nullptr;
    torch::optim::AdamW* opt = m_opt.get();
    out.push_back({m_names[i], n, zero ? piece.begin : 0, length, true,
                   [z, opt, p, shape, adam_steps](const torch::Tensor& m, const torch::Tensor& v) {
                     if (z != nullptr) {
                       z->set_moments(p, adam_steps, m.to(p.device()), v.to(p.device()));
                     } else {
                       kernels::set_adamw_state(*opt, p, adam_steps, m.view(shape).to(p.device()),
                                                v.view(shape).to(p.device()));
                     }
                   }});
  }
  for (const auto& b : m_model->named_buffers()) {
    out.push_back(ShardRead::into(b.key(), b.value().numel(), 0, b.value()));
  }
  return out;
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
  release_weights();  // the other ranks' experts
}

torch::optim::AdamW& TrainState::optimizer() {
  TORCH_CHECK(!sharded(), "optimizer(): the state of this run is sharded");
  return *m_opt;
}

}  // namespace sweep
