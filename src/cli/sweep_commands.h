// What the sweep engine's commands — `sweep run`, `plan`, `status` and `ls`, `ingest`, `check`,
// one file each (cmd_run.cpp, cmd_plan.cpp, cmd_status.cpp, cmd_ingest.cpp, cmd_check.cpp) —
// share (cmd_sweep.cpp): a sweep file planned, and its runs trained. Internal to src/cli.
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

// The command a sweep file is planned for: what it checks differs (sched/planning.h).
enum class PlanFor { run, plan, check };

// A sweep as it will run (sched/planning.h): every dataset checked, vocabulary sizes from their
// dataset.yaml, every run on the kind of device it will train on, with the seeds the folder's
// rounds added. `run`: `sweep run`'s options (its executor and --until-decided); null for the
// others. With `missing` (sweep plan), a dataset not prepared yet is no error: it is listed
// there, and its runs get a stand-in vocabulary (their sizes relative to each other, a ladder's
// order, still hold; their ids and memory do not).
SweepPlan plan_from_file(const SweepFileOptions& o, PlanFor purpose, const RunOptions* run = nullptr,
                         std::set<std::string>* missing = nullptr);

// The planned sweep trained as `sweep run` trains it: every check before anything is written, the
// references scored, then the runner (`sweep check` trains its twins with it).
Exit train_planned(const RunOptions& o, SweepPlan plan);

}  // namespace sweep::commands
