// Checkpoints: model, optimizer (moments and step counts), the RNG stream of dropout, the
// step (which fixes the loader position) and the config it belongs to, in one file: a header
// line with the SHA-256 of the LibTorch archive that follows. Written atomically (temp + fsync
// + rename) and read back before it replaces anything; the checkpoint it replaces is kept as
// previous_checkpoint(path), so that a damaged latest one has a whole one to fall back to.
// A sharded run writes the same file format as one manifest and a file per rank (train/sharded/checkpoint_shards.h).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "train/model.h"
#include "util/error.h"

namespace sweep {

struct CheckpointMeta {
  int64_t step = 0;            // optimizer steps completed
  int64_t tokens_per_step = 0;  // the loader position is step × this
  std::string config_json;      // the canonical config of the run, checked on resume
  // Filled by load_checkpoint: the device type whose generator wrote the dropout RNG state
  // ("cpu", "cuda"; "" when it holds none for this rank: written by fewer ranks), and whether it
  // was restored. A CPU generator's state means nothing to a
  // GPU's (nor the other way): a checkpoint moved between them resumes everything but that stream.
  std::string rng_device = "cpu";
  bool rng_restored = true;
};

// Where the checkpoint `path` replaced is kept: ckpt.pt → ckpt.prev.pt.
std::string previous_checkpoint(const std::string& path);

// What is wrong with a checkpoint file (missing, truncated, its bytes changed), or nothing when
// it is whole. Reads the whole file; checkpoints from before the checksum are whole when
// LibTorch reads them.
std::optional<std::string> checkpoint_problem(const std::string& path);

// rng_states: every rank's dropout RNG state in rank order (data parallel: rank 0 writes the
// one checkpoint for all); empty = this process's own.
// `alive` is called as the file is written, every chunk (a worker's heartbeat).
// `muon`: Muon's state (train.optimizer: muon), written beside AdamW's.
void save_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer& opt,
                     const CheckpointMeta& meta, const torch::Device& device,
                     const std::vector<torch::Tensor>& rng_states = {}, const std::function<void()>& alive = {},
                     torch::optim::Optimizer* muon = nullptr);

// A checkpoint file that fails checkpoint_problem: thrown before anything was loaded from it.
class CheckpointDamaged : public Error {
 public:
  CheckpointDamaged(const std::string& path, std::string problem)
      : Error("checkpoint " + path + " is damaged: " + problem), m_problem(std::move(problem)) {}
  const std::string& problem() const { return m_problem; }

 private:
  std::string m_problem;
};

// Restores everything saved, with `rank`'s RNG state when it was written on a device of this
// type (see CheckpointMeta::rng_restored); returns the metadata. Throws
// CheckpointDamaged, before changing anything, when the file is damaged.
CheckpointMeta load_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer& opt,
                               const torch::Device& device, int64_t rank = 0, torch::optim::Optimizer* muon = nullptr);

// This process's dropout RNG state on `device` (the device's default generator), and setting it.
torch::Tensor rng_state(const torch::Device& device);
void set_rng_state(const torch::Device& device, const torch::Tensor& state);

// Only the model weights (for export and inspection), of a checkpoint of one file or a sharded one.
void load_checkpoint_weights(const std::string& path, GPT& model);

// ---- the file format's parts, for sharded checkpoints ----
// `root` written to `path` as a checkpoint file (atomically, read back whole before it replaces
// anything); with `keep_previous` the file it replaces is kept as previous_checkpoint(path).
// `step`: the step it holds (for the test builds' fault). Returns the archive's SHA-256 (hex).
std::string write_checkpoint_file(const std::string& path, torch::serialize::OutputArchive& root,
                                  const std::function<void()>& alive, bool keep_previous, int64_t step);
// The archive of a checkpoint file that checkpoint_problem found whole.
void open_checkpoint_archive(const std::string& path, torch::serialize::InputArchive& root, const torch::Device& device);
// The SHA-256 a checkpoint file's header gives (hex); "" when it has none.
std::string checkpoint_sha256(const std::string& path);
void write_checkpoint_meta(torch::serialize::OutputArchive& root, const CheckpointMeta& meta);
CheckpointMeta read_checkpoint_meta(torch::serialize::InputArchive& root);
// The dropout RNG: the device type that wrote it; the state under `key` restored into `meta`'s
// fields and this process's generator.
void write_rng_device(torch::serialize::OutputArchive& root, const torch::Device& device);
void restore_rng(torch::serialize::InputArchive& root, const std::string& key, CheckpointMeta& meta,
                 const torch::Device& device);

}  // namespace sweep
