// The training core for one run: the training loop (micro-batches with loss /
// grad_accum, one backward each; the global grad norm before clipping; clip; LR from the
// schedule; AdamW; zero grads), periodic validation, checkpoints, preemption on SIGTERM/SIGINT
// at a step boundary, and the final test loss with bits per byte. Emits events; never opens a
// database. Data arrive as token vectors, so tests can run it on synthetic tokens.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "data/loader.h"
#include "protocol/run_state.h"
#include "train/checkpoint.h"
#include "train/evaluate_loss.h"
#include "train/event_sink.h"
#include "train/model.h"
#include "train/readback.h"
#include "train/step_graph.h"

namespace sweep {

struct TrainData {
  std::shared_ptr<const Tokens> train, val, test;
  int64_t vocab_size = 0;
  int64_t test_bytes = 0;  // UTF-8 bytes of the test text; 0 = unknown (no bits per byte)
};

// The dataset named by the config, its splits read from their shards window by window (headers
// and lengths checked here; each token as it is read).
std::shared_ptr<const TrainData> load_train_data(const RunConfig& c);

struct StepStats {
  int64_t step = 0;  // the step that just ran (0-based)
  double loss = 0;   // mean training loss over the step's micro-batches
  double grad_norm = 0;  // before clipping
  double lr = 0;
  double seconds = 0;  // from its start to the next step's (run()), or to its values read (train_step())
  double optimizer_seconds = 0;  // the optimizer's update (host time: on a GPU, its launches)
  MoEStepStats moe;  // MoE models: the step's expert load, router entropy and aux loss
  bool finite() const { return std::isfinite(loss) && std::isfinite(grad_norm); }
};

// A step issued to the device, its loss and gradient norm (and with several ranks, whether one was
// asked to stop) on their way to the host: run() reads them once the next step is issued, so that
// a GPU step never waits for the device (docs/performance.md).
struct IssuedStep {
  StepStats stats;  // all but loss, grad_norm and seconds until read
  DeviceReadback values;  // loss, grad norm, the ranks' stop flag
  std::chrono::steady_clock::time_point started;
};

// How a worker's training ended: done, diverged or preempted (a worker that fails throws).
struct RunResult {
  RunState status = RunState::done;
  int64_t step = 0;
  double test_loss = std::numeric_limits<double>::quiet_NaN();
  double test_bpb = std::numeric_limits<double>::quiet_NaN();
  std::string reason;
};

struct RunOptions {
  std::string run_dir;  // checkpoint/ckpt.pt lives here; "" = no checkpoints (tests)
  bool resume = false;  // continue from the run directory's checkpoint
  EventSink* events = nullptr;
  int64_t max_steps = -1;  // stop (as preempted, "paused at step N") after this many steps in total: `sweep worker
                           // --pause-at-step` (a look of --eliminate), tests
};

class Communicator;
class TrainState;

class Trainer {
 public:
  // comm: the process group of a data-parallel run (world > 1), or null for one process. Every
  // rank trains its slice of each step's global batch; gradients and the logged loss are averaged
  // once per optimizer step; rank 0 writes events and checkpoints (with every rank's RNG).
  // parallel.zero shards the training state over the ranks (train/sharded/zero.h); with one rank it is
  // plain training.
  Trainer(RunConfig config, std::shared_ptr<const TrainData> data, Communicator* comm = nullptr);
  ~Trainer();

  // One optimizer step, its loss and norm read at once; the update is skipped (on the device) where
  // the loss or norm is not finite.
  StepStats train_step();
  // The same, issued: read_step() reads its values (waiting for them) and sets the stop agreed
  // by the ranks; `until`: the end of its time (the next step's start), else now.
  IssuedStep issue_step();
  StepStats read_step(IssuedStep& issued,
                      std::optional<std::chrono::steady_clock::time_point> until = std::nullopt);
  // The (inputs, targets) of one micro-batch of this rank on the device, each (micro_batch, block_size).
  std::pair<torch::Tensor, torch::Tensor> batch(int64_t step, int64_t micro);
  // "val": the fixed slice; "test": the whole split. `alive`: called after every batch.
  double evaluate(const std::string& split, const std::function<void()>& alive = {});
  RunResult run(const RunOptions& options);

  void save(const std::string& path, const std::function<void()>& alive = {});
  // That file, or an Error (nothing changed when it is damaged). Returns a note when something
  // could not be resumed exactly (a dropout stream written on another device type), else "".
  std::string load(const std::string& path);
  // Continues from the run's checkpoint `path` when it is whole, else from the previous one, else
  // from step 0 (a damaged file is set aside as NAME.damaged by rank 0): never from a damaged
  // one. Returns whether a checkpoint was loaded, and what was wrong ("" when nothing was).
  std::pair<bool, std::string> resume(const std::string& path);
  // A branched run's start (config/branch.h): its parent's checkpoint at the branch step, `path`,
  // loaded as this run's — the same run but for branch_keys() —, its own optimizer options set.
  // Returns a note as load() does. An Error when it is missing, damaged or not the parent's.
  std::string start_branch(const std::string& path);

  GPT& model() { return m_model; }
  torch::optim::Optimizer& optimizer();  // unsharded runs only
  TrainState& state() { return *m_state; }  // how the weights are held and stepped (the bench's levers, tests)
  // ZeRO-3, expert parallelism: every weight of model() whole / back to this rank's pieces or
  // experts (collectives; tests).
  void gather_weights();
  void release_weights();
  const RunConfig& config() const { return m_cfg; }
  bool step_captured() const { return m_graph && m_graph->captured(); }  // train.cuda_graph: replaying
  // train.cuda_graph: why its capture failed ("": it did not, or no graph) — the steps then run eagerly
  std::string capture_failure() const { return m_graph ? m_graph->failure() : std::string(); }
  int64_t step() const { return m_step; }
  torch::Device device() const { return m_device; }

 private:
  // An Error when a checkpoint's metadata is not this run's: another config, or another batch
  // of a step (the ranks and the accumulation may differ: the checkpoint is resharded).
  void check_same_run(const CheckpointMeta& meta, const std::string& path) const;
  // batch(), on the host (page-locked on a GPU).
  std::pair<torch::Tensor, torch::Tensor> host_batch(int64_t step, int64_t micro);
  // A step's work on the device over its micro-batches there: forward and backward, the gradients
  // averaged over the ranks, the norm and the step's rule, `update`, the gradients zeroed; its
  // values (loss, norm, the ranks' stop flag) as one tensor, nothing read. What a graph captures.
  torch::Tensor device_step(const Batches& batches, const Update& update, StepStats& s);
  // A split's loss (stage 3 gathers the weights outside the blocks for it); `blocks`: as evaluate_loss.
  EvalLoss evaluate_split(const std::string& split, bool blocks, const std::function<void()>& alive);
  // run(), in its three parts: the start event and note; the steps (a result when the run stops
  // early: preempted, diverged); the final validation and test.
  struct RunContext;
  void announce_start(EventSink& ev, bool resumed, const std::string& checkpoint_note) const;
  std::optional<RunResult> train_steps(const RunContext& c, const RunOptions& o);
  RunResult final_evaluation(const RunContext& c);

  RunConfig m_cfg;
  std::shared_ptr<const TrainData> m_data;
  Communicator* m_comm;
  int64_t m_rank;
  bool m_branching = false;  // start_branch is loading: the checkpoint is the parent's
  bool m_stop = false;  // a stop every rank agreed on at the last step (data parallel)
  torch::Device m_device;
  GPT m_model{nullptr};
  int64_t m_num_params = 0;
  std::unique_ptr<TrainState> m_state;  // the optimizer, and how the ranks hold the state
  std::unique_ptr<BatchLoader> m_loader;
  std::unique_ptr<StepGraph> m_graph;  // train.cuda_graph
  int64_t m_step = 0;
  std::function<void()> m_alive;  // during run(): a heartbeat, after every micro-batch
};

}  // namespace sweep
