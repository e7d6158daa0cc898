// ZeRO (parallel.zero): data parallel with the training state sharded over the ranks.
//   1: each rank keeps AdamW's moments for its piece of every weight and steps only that piece;
//      the gradients are averaged whole (as plain data parallel), the updated pieces gathered.
//   2: also the gradients: reduce-scattered into each rank's pieces once a step, the whole ones
//      freed (they exist only between the step's first backward and its reduction).
//   3: also the weights: a rank keeps its pieces only. A block's weights are gathered just before
//      the block runs and freed after; in backward the block runs again from its input (as under
//      activation checkpointing: its forward keeps nothing that refers to the freed weights),
//      with its weights gathered again, and its gradients are reduce-scattered as soon as its
//      backward is done. The weights outside the blocks (embeddings, head, final norm) are gathered
//      for a step or an evaluation.
// A weight of n elements is cut into world pieces of ceil(n / world) (the last ones short or
// empty); the collectives move rank-major buckets of pieces. The maths is plain data parallel's up
// to fp32 rounding: AdamW element by element, but the gradient norm summed piece by piece, and
// stage 3 averaging each micro-batch's gradients as it reduces them.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <unordered_map>
#include <vector>

#include "config/run_config.h"
#include "train/optim.h"
#include "train/model.h"

namespace sweep {

class Communicator;

class ZeroShards : public BlockWeights {
 public:
  // `params`: the weights to shard (the model's, or its dense ones under expert parallelism),
  // every rank in the same order, whole (each rank's init is the same).
  // Stage 3 keeps this rank's pieces and frees the weights; `resident` (the weights outside the
  // blocks) are then gathered by gather_resident().
  ZeroShards(std::vector<torch::Tensor> params, std::vector<torch::Tensor> resident, const TrainConfig& train,
             Communicator& comm, int64_t stage);

  int64_t stage() const { return m_stage; }

  // After the step's last backward: stage 1 averages the whole gradients over the ranks; 2 and 3
  // reduce-scatter those still whole into this rank's pieces (averaged) and free them. A weight
  // no micro-batch reached counts a zero gradient.
  void reduce_gradients();
  // The global L2 norm of the averaged gradients, the same on every rank (a collective), a 0-dim
  // tensor on the device (no read of it).
  torch::Tensor grad_norm();
  // AdamW on this rank's pieces under the step's rule (train/optim.h); stages 1 and 2 then gather
  // the updated weights on every rank (unchanged ones where the step was skipped).
  void step(double lr, const StepScale& scale, AdamWPath path);
  // The gradients zeroed for the next step (taken or not).
  void zero_grad();

  // Stage 3: the weights outside the blocks, whole for a step or an evaluation, and freed after.
  void gather_resident();
  void release_resident();
  // Every weight whole / back to pieces (stage 3; checkpoints and tests).
  void gather_all();
  void release_all();

  // BlockWeights (stage 3): a block's weights and gradients, from inside the model.
  void gather(torch::nn::Module& block) override;
  void release(torch::nn::Module& block) override;
  void reduce_gradients(torch::nn::Module& block) override;

  // Sharded checkpoints (train/sharded/checkpoint_shards.h): this rank's piece of a weight of these (holds()):
  // where it begins in the flattened weight, its values (stages 1, 2: a view of the whole
  // weight; 3: its own storage) and AdamW's moments (undefined before the first step and for an
  // empty piece); the moments set or dropped; the steps AdamW has taken (0 before the first).
  struct Piece {
    int64_t begin = 0;
    torch::Tensor value, exp_avg, exp_avg_sq;
  };
  bool holds(const torch::Tensor& param) const;
  Piece piece(const torch::Tensor& param);
  void set_moments(const torch::Tensor& param, int64_t steps, const torch::Tensor& exp_avg,
                   const torch::Tensor& exp_avg_sq);
  void clear_moments();
  int64_t adam_steps();
  // A checkpoint of one file (the whole state: the weights loaded into the model, the moments
  // in `whole`): this rank's pieces of it kept, and (stage 3) the whole weights freed.
  void load(torch::optim::AdamW& whole);

 private:
  struct Slot {
    torch::Tensor param;   // the model's weight
    int64_t numel = 0;     // its elements
    std::vector<int64_t> shape;
    int64_t piece = 0;     // ceil(numel / world): the padded length of every rank's piece
    torch::Tensor weight;  // this rank's piece of it: a view (stages 1, 2) or its own storage (3); may be empty
    torch::Tensor grad;    // its averaged gradient (stages 2, 3: accumulated here)
    int64_t begin(int64_t rank) const { return std::min(numel, rank * piece); }
    int64_t length(int64_t rank) const { return std::min(numel, (rank + 1) * piece) - begin(rank); }
  };
  // Consecutive slots whose rank-major buffer (world × the sum of their pieces) stays within a
  // bucket (at least one slot), each slot's piece at its offset within a rank's part.
  struct Bucket {
    std::vector<size_t> slots;
    std::vector<int64_t> offsets;
    int64_t size = 0;  // the elements of one rank's part
  };
  // This rank's pieces of the weights (and of their gradients), and AdamW over them.
  void make_pieces();
  std::vector<size_t> slots_of(const std::vector<torch::Tensor>& params) const;
  std::vector<size_t> block_slots(torch::nn::Module& block) const;  // the block's weights that are ZeRO's
  std::vector<size_t> all() const;
  std::vector<Bucket> buckets(const std::vector<size_t>& which) const;
  // Bucketed collectives over the slots `which`: each param's whole value from every rank's
  // piece (from(slot)) into to(slot); and each param's whole gradient summed, this rank's piece
  // of the average added to its grad.
  void all_gather(const std::vector<size_t>& which, const std::function<torch::Tensor(const Slot&)>& from,
                  const std::function<torch::Tensor(const Slot&)>& to);
  void reduce_scatter(const std::vector<size_t>& which);
  void gather_weights(const std::vector<size_t>& which);   // stage 3: each param whole again
  void release_weights(const std::vector<size_t>& which);  // stage 3: each param's memory freed

  Communicator& m_comm;
  int64_t m_stage, m_rank, m_world;
  TrainConfig m_train;
  std::vector<Slot> m_slots;
  std::vector<size_t> m_resident;
  std::unordered_map<const void*, size_t> m_index;  // a weight's TensorImpl → its slot
  std::unique_ptr<torch::optim::AdamW> m_opt;        // over the pieces
};

}  // namespace sweep
