// The sweep engine's commands — `sweep run`, `plan`, `status` and `ls`, `ingest`, `check` — one
// file each (cmd_run.cpp, cmd_plan.cpp, cmd_status.cpp, cmd_ingest.cpp, cmd_check.cpp), and what
// they share (cmd_sweep.cpp: their options, the dispatch, the helpers below). Internal to src/cli.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "cli/commands.h"
#include "cli/results.h"
#include "store/store.h"
#include "util/fs.h"

namespace sweep::commands {

std::string first_line(const std::string& s);

// A dataset a runnable sweep names: found, its dataset.yaml read and its shards whole.
int64_t usable_dataset_vocab(const std::string& dataset, const std::string& dir);

// The kind of device a sweep's runs train on, which is part of each run's id: its slots' kind
// (--devices: a worker trains where its slot is, whatever the file says); with Slurm, cuda when
// --gpus-per-rank gives each rank GPUs, else the file's own.
std::optional<std::string> slot_device(const SweepOptions& o);

// The file beside a saved sweep that says what kind of device its runs trained on, for `sweep
// ingest` (a sweep saved before it: its file's own).
fs::path saved_device_file(const std::string& results, const std::string& sweep);

// What `--until-decided` adds to a sweep beyond its file — the cap, the spending and how many
// seeds each variant has after the rounds so far — saved beside it (`sweeps/NAME.rounds`; a fixed
// design: none) and read back by `sweep ingest`, so that a database rebuilt from the folder keeps
// the design its looks were judged by and the seeds its rounds added.
// `added`: the runs a round is about to add to `spec`'s.
void save_rounds(const std::string& results, const SweepSpec& spec, const std::vector<PlannedRun>& added = {});
// Restores them into `spec` (loaded from the saved sweep file) when the file is there; throws
// Error naming the file when it cannot be read.
void restore_rounds(const std::string& results, SweepSpec& spec);

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
Exit run_plan(const SweepOptions& o, const SweepSpec& spec, const std::set<std::string>& missing);
Exit run_run(const SweepOptions& o, SweepSpec spec);
Exit run_ls(Store& store);
Exit run_status(Store& store, const std::string& name);  // name: sweep_to_read's
// A run directory, or a results folder: its saved sweep files and every run directory. A saved
// sweep's datasets need not be where they were: their vocabulary sizes are its runs' own.
Exit run_ingest(const SweepOptions& o);
// `sweep check FILE`: the sweep's baseline (its first rung on a ladder) with seeds 1..N, each
// trained twice (repeats 0 and 1: repeat 0 is the sweep's own run of that seed), recorded as the
// sweep "<name>-check"; then whether the repeats agree to the last digit, and σ_repeat against σ_seed.
Exit run_check(const SweepOptions& o, const SweepSpec& spec);

}  // namespace sweep::commands
