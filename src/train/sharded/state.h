// The training state of a run's weights and how its ranks hold it: AdamW over the whole model
// (one process, or plain data parallel), ZeRO 1-3 over the ranks (train/sharded/zero.h), the routed
// experts partitioned over the ranks (train/sharded/experts.h), or both — the dense weights under ZeRO,
// each rank's experts under an AdamW of their own. The trainer asks it for the step's parts in
// order; every call that is a collective is made by every rank.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/run_config.h"
#include "train/model.h"
#include "train/optim.h"
#include "train/sharded/checkpoint_shards.h"

namespace sweep {

namespace kernels {
class KeptBf16Copies;
}
class Communicator;
class ZeroShards;
class Muon;
struct ExpertPartition;

class TrainState {
 public:
  // `comm`: the ranks (null or world 1: one process); the layout from config.parallel.
  TrainState(GPT& model, const RunConfig& config, Communicator* comm);
  ~TrainState();

  bool sharded() const;  // ZeRO or experts over the ranks
  // "" unsharded; else ", ZeRO-3 over 2 ranks, routed experts over 2 ranks" for the run's log.
  std::string describe() const;

  // A step: the weights it needs whole (ZeRO-3: those outside the blocks); after the last
  // backward, the gradients averaged (world > 1) — a weight no micro-batch reached counts a
  // zero gradient; the global gradient norm (a 0-dim tensor on the device, nothing read); AdamW
  // (and Muon) on what this rank holds under the step's rule (train/optim.h: the clip factor, the
  // skip of a non-finite step); the gradients zeroed and what was gathered for the step freed.
  void begin_step();
  void reduce_gradients();
  torch::Tensor grad_norm();
  // `steps_before`: the optimizer steps taken before this one (Muon's momentum warmup).
  void step(double lr, const StepScale& scale, int64_t steps_before);
  void end_step();
  // Which AdamW steps (train/optim.h; from the device and train.fused unless set: the bench's lever, tests).
  AdamWPath adamw_path() const { return m_path; }
  void set_adamw_path(AdamWPath path);
  // An evaluation: the weights outside the blocks whole for it (ZeRO-3), freed after.
  void begin_eval();
  void end_eval();

  // Every weight of the model whole on every rank (a collective; tests look at them), and back
  // to what each rank holds.
  void gather_weights();
  void release_weights();

  // Checkpoints. A sharded state is written as each rank holds it (train/sharded/checkpoint_shards.h):
  // shard_entries() is this rank's piece of every weight but the routed experts' (the values,
  // and AdamW's moments after the first step) and its experts whole; adam_steps() the steps
  // AdamW has taken (0 before the first). shard_reads() is what this rank reads back of a sharded
  // checkpoint written with `adam_steps` steps in any layout, and where each piece goes (the
  // moments it holds are dropped first).
  std::vector<ShardEntry> shard_entries();
  int64_t adam_steps();
  std::vector<ShardRead> shard_reads(int64_t adam_steps);
  // A checkpoint of one file (unsharded training's) read into a sharded state: for_load() is an
  // AdamW over every weight with no state, to read it into; adopt() keeps this rank's share of
  // it and of the weights loaded into the model, and frees the rest.
  std::unique_ptr<torch::optim::AdamW> for_load() const;
  void adopt(torch::optim::AdamW& loaded);

  torch::optim::AdamW& optimizer();  // unsharded runs only
  // With train.optimizer: muon, the state of Muon's matrices (its momentum), checkpointed beside
  // AdamW's; null otherwise.
  torch::optim::Optimizer* muon_state();

 private:
  // AdamW's two groups over `params`, by each weight's whole shape (held or not: m_dims).
  std::unique_ptr<torch::optim::AdamW> grouped(const std::vector<torch::Tensor>& params) const;

  GPT m_model;
  TrainConfig m_train;
  Communicator* m_comm;
  int64_t m_rank = 0, m_world = 1;
  std::vector<torch::Tensor> m_all;    // every weight of the model, in its order
  std::vector<std::string> m_names;    // their names in the model
  std::unordered_map<const void*, std::vector<int64_t>> m_shapes;  // each weight's shape, whole
  std::unordered_map<const void*, int64_t> m_owner;  // each routed expert's rank (expert parallelism)
  std::vector<torch::Tensor> m_dense;  // every weight but the routed experts'
  std::unique_ptr<ExpertPartition> m_experts;
  std::unique_ptr<ZeroShards> m_zero;         // over the dense weights
  std::unique_ptr<torch::optim::AdamW> m_opt;  // over what ZeRO does not hold: everything, or this rank's experts
  std::unique_ptr<Muon> m_muon;                // train.optimizer: muon: the blocks' matrices (m_opt the rest)
  std::unique_ptr<kernels::KeptBf16Copies> m_bf16_copies;  // the fused bf16 step's copies of the matmul weights
  bool m_fused = false;                     // train.fused
  AdamWPath m_path = AdamWPath::automatic;  // resolved for the weights' device
};

}  // namespace sweep
