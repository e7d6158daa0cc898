// The runner's side of branched runs (config/branch.h): each seed's baseline run trains to the
// branch step and pauses there, checkpointed; its checkpoint becomes the start of every run
// branched from it (checkpoint/branch.pt in the branch's folder, a hard link or a copy); the
// baseline then trains on to its end and the branches start. A branch waits for its start; one
// whose parent cannot give it (the parent failed, or trained past the step before the branch was
// planned) is not started, and the runner says why.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/sweep_spec.h"
#include "store/store.h"

namespace sweep {

class Branches {
 public:
  Branches(const std::vector<const PlannedRun*>& runs, Store& store);

  bool is_parent(const PlannedRun& run) const { return m_children.count(run.run_id) > 0; }
  // Its folder holds a start: its own checkpoint, or the branch's (a run without a branch: always).
  bool has_start(const PlannedRun& run) const;
  // The step `parent` pauses at for branches still without a start, if it has not trained past it.
  std::optional<int64_t> pause_at(const PlannedRun& parent) const;
  // `parent`, checkpointed at `step` (its events' last checkpoint: else none is given), gives each
  // of its branches at that step without a start its checkpoint (the parent's ckpt.pt); returns them.
  std::vector<const PlannedRun*> give_start(const PlannedRun& parent, int64_t step) const;
  // Why `branch` (without a start) cannot get one ("" when its parent can still give it: it trains
  // to the step, or waits to). Asked by the runner only of a parent it no longer trains: one that
  // crashed and is retried is not written off (its failure is not final until its retries are spent).
  std::string orphaned(const PlannedRun& branch) const;
  // The run that `branch` branches from (null for one that does not).
  const PlannedRun* parent_of(const PlannedRun& branch) const;

 private:
  Store& m_store;
  std::map<std::string, const PlannedRun*> m_by_id;
  std::map<std::string, std::vector<const PlannedRun*>> m_children;  // parent's id -> its branches
};

}  // namespace sweep
