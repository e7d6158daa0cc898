// The sweep engine's commands — `sweep run`, `plan`, `status` and `ls`, `ingest`, `check` — one
// file each (cmd_run.cpp, cmd_plan.cpp, cmd_status.cpp, cmd_ingest.cpp, cmd_check.cpp), and what
// they share (cmd_sweep.cpp: their options, the dispatch, the helpers below). Internal to src/cli.
#pragma once

#include <set>
#include <string>

#include "cli/commands.h"
#include "cli/results.h"
#include "sched/planning.h"
#include "store/store.h"
#include "util/fs.h"

namespace sweep::commands {

// A dataset a runnable sweep names: found, its dataset.yaml read and its shards whole.
int64_t usable_dataset_vocab(const std::string& dataset, const std::string& dir);

// "3 done, 1 failed"
template <typename Map>
std::string join_counts(const Map& counts) {
  std::string out;
  for (const auto& [state, n] : counts) {
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + state;
  }
  return out;
}

// `missing`: datasets not prepared yet. Their runs are planned without what needs the data — a
// run's id (its vocabulary is part of it), its epochs, its memory and the vocabulary's weights.
Exit run_plan(const SweepOptions& o, const SweepPlan& plan, const std::set<std::string>& missing);
Exit run_run(const SweepOptions& o, SweepPlan plan);
Exit run_ls(Store& store);
Exit run_status(Store& store, const std::string& name);  // name: sweep_to_read's
// A run directory, or a results folder: its saved sweep files and every run directory. A saved
// sweep's datasets need not be where they were: their vocabulary sizes are its runs' own.
Exit run_ingest(const SweepOptions& o);
// `sweep check FILE`: the sweep's baseline (its first rung on a ladder) with seeds 1..N, each
// trained twice (repeats 0 and 1: repeat 0 is the sweep's own run of that seed), recorded as the
// sweep "<name>-check"; then whether the repeats agree to the last digit, and σ_repeat against σ_seed.
Exit run_check(const SweepOptions& o, const SweepPlan& plan);

}  // namespace sweep::commands
