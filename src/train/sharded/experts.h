// Expert parallelism (parallel.expert): each MoE layer's routed experts partitioned over the
// ranks, rank r running experts [r·E/P, (r+1)·E/P) for the tokens of every rank. A rank routes
// its own tokens as without it (so the load, the aux loss and the balancing bias are computed
// over exactly the same tokens), sends each token's rows to the rank of its expert and gets the
// outputs back, both with an all-to-all (its backward is the all-to-all the other way). The
// dense weights (attention, router, shared experts, embeddings) stay replicated and averaged as
// in plain data parallel; an expert's gradient arrives summed over every rank's tokens and is
// divided by the ranks, which is that average.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "train/model.h"

namespace sweep {

class Communicator;

// The routed experts' output for `grouped` (rows, C): `padded[e]` rows of expert e after one
// another, as MoEImpl::forward groups them; the result in the same order.
torch::Tensor run_experts_parallel(MoEImpl& moe, const torch::Tensor& grouped, const std::vector<int64_t>& padded);

// Every routed expert weight of every layer in the model's order (the same on every rank), with
// the rank that runs it and its shape; the weights of other ranks' experts are freed (numel 0).
struct ExpertPartition {
  std::vector<torch::Tensor> weights;
  std::vector<int64_t> owner;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<torch::Tensor> local;  // this rank's: those whose owner it is
};

// Partitions every MoE layer's routed experts over `comm`'s ranks (n_routed_experts divisible
// by them) and frees the weights of the experts this rank does not run.
ExpertPartition partition_experts(GPT& model, Communicator& comm);

// A tensor of `shape` whole on every rank from `owner`'s `value` (a collective: every rank calls
// it in the same order; the others' `value` is not read).
torch::Tensor from_owner(Communicator& comm, const torch::Tensor& value, const std::vector<int64_t>& shape,
                         int64_t owner, const torch::TensorOptions& options);

}  // namespace sweep
