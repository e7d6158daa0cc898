#include "train/sharded/experts.h"

#include "parallel/parallel.h"

namespace sweep {

namespace {

// The exchange as an autograd op: rows out by `send`, in by `recv`; backward sends the
// gradients of what came in back where it came from.
struct AllToAll : torch::autograd::Function<AllToAll> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, Communicator* comm,
                               std::vector<int64_t> send, std::vector<int64_t> recv) {
    ctx->saved_data["comm"] = reinterpret_cast<int64_t>(comm);
    ctx->saved_data["send"] = send;
    ctx->saved_data["recv"] = recv;
    return comm->all_to_all(x, send, recv);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* comm = reinterpret_cast<Communicator*>(ctx->saved_data["comm"].toInt());
    const std::vector<int64_t> send = ctx->saved_data["send"].toIntVector();
    const std::vector<int64_t> recv = ctx->saved_data["recv"].toIntVector();
    return {comm->all_to_all(grads[0].contiguous(), recv, send), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor run_experts_parallel(MoEImpl& moe, const torch::Tensor& grouped, const std::vector<int64_t>& padded) {
  Communicator& comm = *moe.expert_group;
  const int64_t P = comm.world(), E = moe.config.n_routed_experts, L = moe.local_experts, first = moe.first_expert;
  // Every rank's padded rows per expert: what it sends to each rank, and what each rank gets.
  const torch::Tensor mine = torch::tensor(padded, torch::TensorOptions().dtype(torch::kLong));
  const std::vector<torch::Tensor> all = comm.all_gather(mine);
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(P));  // rows[s][e]: rank s's rows for expert e
  for (int64_t s = 0; s < P; ++s) {
    const torch::Tensor counts = all[static_cast<size_t>(s)].cpu();
    rows[s].assign(counts.data_ptr<int64_t>(), counts.data_ptr<int64_t>() + E);
  }
  std::vector<int64_t> send(static_cast<size_t>(P), 0), recv(static_cast<size_t>(P), 0);
  for (int64_t e = 0; e < E; ++e) {
    send[e / L] += padded[e];
  }
  for (int64_t s = 0; s < P; ++s) {
    for (int64_t j = 0; j < L; ++j) {
      recv[s] += rows[s][first + j];
    }
  }
  const torch::Tensor received = AllToAll::apply(grouped.contiguous(), &comm, send, recv);  // by source, then expert

  // Each local expert over its rows from every rank (a source's rows for it are consecutive).
  std::vector<int64_t> source_start(static_cast<size_t>(P), 0);
  for (int64_t s = 1; s < P; ++s) {
    source_start[s] = source_start[s - 1] + recv[s - 1];
  }
  std::vector<torch::Tensor> outputs(static_cast<size_t>(L));
  for (int64_t j = 0; j < L; ++j) {
    std::vector<torch::Tensor> parts;
    for (int64_t s = 0; s < P; ++s) {
      int64_t offset = source_start[s];
      for (int64_t k = 0; k < j; ++k) {
        offset += rows[s][first + k];
      }
      if (rows[s][first + j] > 0) {
        parts.push_back(received.narrow(0, offset, rows[s][first + j]));
      }
    }
    if (!parts.empty()) {  // an expert without tokens runs nothing (its gradient is zero)
      outputs[j] = moe.experts[first + j]->as<MLP>()->forward(parts.size() == 1 ? parts[0] : torch::cat(parts, 0));
    }
  }
  // Back in the order they came: by source, then expert.
  std::vector<torch::Tensor> back;
  std::vector<int64_t> taken(static_cast<size_t>(L), 0);
  for (int64_t s = 0; s < P; ++s) {
    for (int64_t j = 0; j < L; ++j) {
      if (rows[s][first + j] > 0) {
        back.push_back(outputs[j].narrow(0, taken[j], rows[s][first + j]));
        taken[j] += rows[s][first + j];
      }
    }
  }
  // A rank whose experts got no row still sends its (empty) part through the graph: both
  // exchanges must be in every rank's backward, or the others would wait for it there.
  const torch::Tensor returned = back.empty() ? received.narrow(0, 0, 0) : torch::cat(back, 0);
  return AllToAll::apply(returned, &comm, recv, send);
}

ExpertPartition partition_experts(GPT& model, Communicator& comm) {
  ExpertPartition out;
  const int64_t P = comm.world(), rank = comm.rank();
  torch::NoGradGuard no_grad;
  for (MoE layer : model->moe_layers()) {
    const int64_t E = layer->config.n_routed_experts;
    TORCH_CHECK(E % P == 0, "expert parallelism: ", E, " routed experts do not divide over ", P, " ranks");
    const int64_t L = E / P;
    layer->expert_group = &comm;
    layer->first_expert = rank * L;
    layer->local_experts = L;
    for (int64_t e = 0; e < E; ++e) {
      for (auto& p : layer->experts[e]->parameters()) {
        out.weights.push_back(p);
        out.owner.push_back(e / L);
        out.shapes.push_back(p.sizes().vec());
        if (e / L == rank) {
          out.local.push_back(p);
        } else {
          p.set_data(torch::empty({0}, p.options()));
        }
      }
    }
  }
  return out;
}

torch::Tensor from_owner(Communicator& comm, const torch::Tensor& value, const std::vector<int64_t>& shape,
                         int64_t owner, const torch::TensorOptions& options) {
  torch::Tensor t = comm.rank() == owner ? value.detach().clone().contiguous() : torch::zeros(shape, options);
  comm.all_reduce_sum(t);  // zeros elsewhere: the owner's value, exactly
  return t;
}

}  // namespace sweep
