// Sharded checkpoints: a run whose ranks hold the training state sharded (ZeRO, expert
// parallelism) writes it as each rank holds it, so that no rank ever gathers the whole state.
//
// Each rank writes its shard, NAME.step<N>-<save>.rank<R>-of-<W>.pt beside the checkpoint NAME.pt, in
// the checkpoint file format (a header with the SHA-256 of what follows; atomic; read back whole):
// its piece of every weight that is not a routed expert's — rank r holds the elements
// [r·⌈n/W⌉, (r+1)·⌈n/W⌉) of the weight's n, flattened, as ZeRO cuts it — with AdamW's two moments
// of them after the first step, its experts whole, and its dropout RNG state. Once every rank's
// shard is whole, rank 0 writes the manifest at NAME.pt (the file every reader looks for; the one
// it replaces is kept as NAME.prev.pt, as a checkpoint of one file is): the step, the config, and
// each shard's file, SHA-256 and index (which elements of which weight it holds). Then it removes
// the shards neither manifest names.
//
// A reader in any layout — another number of ranks, another ZeRO stage, experts partitioned or
// not, one process — reads the elements it holds from whichever shards have them: a checkpoint is
// resharded as it is read. The files it reads are checked whole, and to be the ones the manifest
// names, before anything is read; the ranks agree on it, so that all resume from one checkpoint.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "train/checkpoint.h"
#include "train/model.h"

namespace sweep {

class Communicator;

// Elements [begin, begin + value.numel()) of a weight's flattened values, as a rank holds them,
// and AdamW's moments of them (undefined before the first step). 1-D tensors (views are fine).
struct ShardEntry {
  std::string name;  // the weight's name in the model
  int64_t begin = 0;
  torch::Tensor value, exp_avg, exp_avg_sq;
};

// Writes this rank's shard of the checkpoint `path` and, on rank 0, its manifest: a collective.
// `adam_steps`: the steps AdamW has taken (0: no moments); `layout`: how the ranks held the state,
// for the log of a run that reads it in another. When any rank's shard or the manifest cannot be
// written, every rank throws, and the previous checkpoint is kept.
void save_sharded_checkpoint(const std::string& path, const std::vector<ShardEntry>& entries, int64_t adam_steps,
                             const std::string& layout, const CheckpointMeta& meta, const torch::Device& device,
                             Communicator& comm, const std::function<void()>& alive);

// Removes the shards beside the checkpoint `path` that no checkpoint there names (it, the previous
// one, one a resume set aside as damaged): those of older checkpoints, of saves that stopped
// before their manifest, and of a sharded run since resumed unsharded. Nothing when `path` cannot
// be read. Best effort: a shard left behind costs disk only.
void remove_unnamed_shards(const std::string& path);

// What a reader holds of a weight: elements [begin, begin + length) of weight `name`, its values
// (put(values, {})) or its moments (put(exp_avg, exp_avg_sq)); 1-D tensors on the CPU.
struct ShardRead {
  std::string name;
  int64_t numel = 0;  // the weight's elements, whole (the checkpoint's must be as many)
  int64_t begin = 0, length = 0;
  bool moments = false;
  std::function<void(const torch::Tensor&, const torch::Tensor&)> put;
  // The values of elements [begin, begin + to.numel()) of weight `name` (of `numel`) copied into `to`.
  static ShardRead into(const std::string& name, int64_t numel, int64_t begin, torch::Tensor to);
};

class ShardReader {
 public:
  // The sharded checkpoint whose manifest is `path`, checked whole (CheckpointDamaged), or null
  // when `path` is a checkpoint of one file (not hashed here: its reader checks it).
  static std::unique_ptr<ShardReader> open(const std::string& path);

  const CheckpointMeta& meta() const { return m_meta; }
  int64_t world() const { return static_cast<int64_t>(m_shards.size()); }  // the ranks that wrote it
  int64_t adam_steps() const { return m_adam_steps; }  // 0: written before the first step, no moments
  const std::string& layout() const { return m_layout; }
  std::vector<std::string> files() const;  // the shards' files, in rank order

  // Checks the shards `reads` touch, and `rank`'s own, whole; with `comm` every rank agrees:
  // when one finds a shard it needs damaged, every rank throws CheckpointDamaged, and nothing has
  // been read. Then reads and puts every piece, and restores `rank`'s dropout RNG state where it
  // wrote one (CheckpointMeta::rng_restored; rank < 0: none). Returns the metadata.
  CheckpointMeta load(const std::vector<ShardRead>& reads, int64_t rank, const torch::Device& device,
                      Communicator* comm);
  // Every weight of `model` whole, from all shards (export, eval, sample).
  void load_weights(GPT& model);

 private:
  struct Piece {
    size_t shard = 0, entry = 0;
    int64_t begin = 0, length = 0;
  };
  struct Shard {
    std::string file, sha256;
    std::unique_ptr<torch::serialize::InputArchive> archive;  // opened at the first read
  };
  ShardReader() = default;
  // The pieces that hold any of [begin, begin + length) of `name`; an Error when they miss some.
  std::vector<Piece> pieces(const std::string& name, int64_t begin, int64_t length) const;
  // That range of the weight's values (kind "value") or a moment ("exp_avg", "exp_avg_sq").
  torch::Tensor read(const std::string& name, int64_t begin, int64_t length, const char* kind);
  std::string problem(size_t shard) const;
  torch::serialize::InputArchive& archive(size_t shard);  // opened at its first read  // "" when it is whole and the one the manifest names

  std::string m_path, m_layout;
  CheckpointMeta m_meta;
  int64_t m_adam_steps = 0;
  std::vector<Shard> m_shards;
  std::map<std::string, std::vector<Piece>> m_index;  // by weight, in order of begin
};

}  // namespace sweep
