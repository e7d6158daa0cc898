// train.cuda_graph: a training step captured once as a CUDA graph and replayed from then on — the
// forward and backward of every micro-batch, the gradient norm, the step's rule, AdamW, the zeroed
// gradients and the step's values for the host — so that a small model's step is one launch
// instead of hundreds. The trainer hands it the step's work and the batches; it knows nothing of
// the model. What a graph cannot replay is refused before training (config/run_config.h:
// cuda_graph_problem). Not yet run on a GPU: off by default (docs/performance.md).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "train/optim.h"

namespace sweep {

// Each micro-batch's (inputs, targets), each (micro_batch, block_size) int64.
using Batches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;
// A step's update under its rule (train/optim.h): the eager step's, or the captured AdamW's.
using Update = std::function<void(const StepScale&)>;
// A step's work on the device, given its batches there and its update: its values (loss, gradient
// norm) as one 1-D tensor.
using StepWork = std::function<torch::Tensor(const Batches&, const Update&)>;

class StepGraph {
 public:
  // Eager steps before the capture: cuBLAS's workspaces, the gradients and AdamW's moments exist
  // by then, on the graph's stream (PyTorch's advice: warm up where you capture).
  static constexpr int k_warmup = 3;

  // A stream of its own on `device` (a GPU; an Error without CUDA in this build).
  explicit StepGraph(const torch::Device& device);
  ~StepGraph();

  // One step on the graph's stream, which first waits for the caller's (an event, no read), as the
  // caller's waits for it after. The first k_warmup times `work` runs eagerly on `host` moved to
  // the device, updating by `eager`; the next is captured — `work` on the graph's own batches,
  // updating by a CapturedAdamW of `opt` — and every step from then on replays it: `host` copied
  // into those batches, the learning rate set, one launch. Returns the step's values (after a
  // replay the graph's own tensor: copy it before the next step, as a DeviceReadback does).
  torch::Tensor step(const Batches& host, double lr, torch::optim::AdamW& opt, const StepWork& work,
                     const Update& eager);
  bool captured() const;
  // Why the capture failed ("" where it did not): the capture ended and its pool freed, CUDA
  // usable, and every step from then on eager — `step` runs `work` by `eager`, as the warm-up did.
  const std::string& failure() const;
  // The capture forgotten (a checkpoint was loaded: the tensors it captured are not the state's
  // any more): the next steps warm up and capture again.
  void reset();

 private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

}  // namespace sweep
