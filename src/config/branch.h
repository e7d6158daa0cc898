// Late interventions branched from the baseline's checkpoint (docs/verdicts.md#branch): a sweep
// file's `branch: {at: f}` (on the sweep, or on an intervention) makes each seed's baseline run keep
// its checkpoint at the first validation point at or after f of training, and every branched run of
// that seed start there, its own config from then on. What a branch may change is what resumes
// from the parent's checkpoint as it is: its weights' shapes, its optimizer state, its data order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/sweep_spec.h"

namespace sweep {

// The dotted keys a branch may set otherwise than its parent: the schedule and the optimizer's
// hyperparameters, clipping, dropout and the precision.
const std::vector<std::string>& branch_keys();

// The step at `fraction` of a run of `c`: its first validation point at or after it, if one comes
// before its end (the points at which a run of it pauses, looks and branches).
std::optional<int64_t> validation_step_at(const RunConfig& c, double fraction);

// An identity (RunConfig::identity_json) without the keys a branch may change and without its
// branch: a branch's and its parent's are the same.
nlohmann::json across_branch(nlohmann::json identity);

// The keys (dotted) in which `child` is not what a branch of `parent` may be: those it sets
// otherwise that are not branch_keys().
std::vector<std::string> keys_a_branch_cannot_change(const RunConfig& parent, const RunConfig& child);

// Why runs of `c` cannot be branched ("" when they can): a trainer of your own, Muon, sharded
// checkpoints (parallel.zero, parallel.expert).
std::string branch_problem(const RunConfig& c);

// Where a branched run's start is kept in its run folder: its parent's checkpoint at the branch
// step, put there by `sweep run` (a hard link, or a copy) before the run first starts.
inline std::string branch_checkpoint(const std::string& run_dir) { return run_dir + "/checkpoint/branch.pt"; }

// Some variant of `spec` branches (a `branch:` point in its file).
bool any_branched(const SweepSpec& spec);

// Each run of a variant with a branch point (Variant::branch_at) given its parent — the run of the
// baseline at the same grid point or rung with the same seeds and repeat — and the step, and its id
// recomputed. Called once the runs are planned, and again whenever the parents' ids change (train_on).
void link_branches(SweepSpec& spec);

}  // namespace sweep
