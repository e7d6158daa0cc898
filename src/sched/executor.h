// The local executor: runs a sweep's pending runs as `sweep worker` child processes on device
// slots, ingests their stdout events into the store as they arrive (the scheduler is the
// database's only writer), classifies how each run ended, retries crashes from their
// checkpoints, and handles Ctrl-C (stop launching, SIGTERM the runs so they checkpoint; a second
// Ctrl-C kills). Never talks to the training core except through the worker process.
#pragma once

#include <string>

#include "config/sweep_spec.h"
#include "store/store.h"

namespace sweep {

struct ExecutorOptions {
  std::string results_dir = "results";
  std::string devices = "cpu";
  int retries = 1;
  bool retry_failed = false;
  std::string worker_binary;  // the sweep executable
};

// The state a planned run is in, for `sweep plan` / `sweep status` and for scheduling.
// done | diverged (finished) · failed | oom (need --retry-failed) · resumable (interrupted,
// preempted, or running with no live process) · running · pending
std::string plan_state(const RunRow& row);

// One scheduler per results folder (it is the database's only writer): holds the folder's lock
// while it lives; throws when another scheduler holds it.
class ResultsLock {
 public:
  explicit ResultsLock(const std::string& results_dir);
  ~ResultsLock();
  ResultsLock(const ResultsLock&) = delete;
  ResultsLock& operator=(const ResultsLock&) = delete;

 private:
  int m_fd = -1;
};

// The runs a `sweep run` must (re)start, in plan order, each run id once.
struct ToDo {
  std::vector<const PlannedRun*> runs;
  size_t total = 0;
  int finished_before = 0, failed_before = 0;  // failed/oom: skipped unless retry_failed
  std::string headline(const SweepSpec& spec) const;  // "sweep s: 8 runs, 2 already finished, "
};
ToDo runs_to_do(const SweepSpec& spec, Store& store, bool retry_failed);

// Refuses (bad input) a sweep with a run that needs more slots (resources.ranks) than --devices gives.
void check_fits(const SweepSpec& spec, const std::string& devices);

// Runs every run of the sweep that is not finished. Returns the process exit code:
// 0 all finished, 1 some run failed, 130 interrupted by Ctrl-C. A run with resources.ranks = N
// starts when N slots are free, as one worker that launches its N ranks.
int run_local(const SweepSpec& spec, Store& store, const ExecutorOptions& options);

// Re-ingests a run directory's events.jsonl (after a scheduler crash, or for `sweep ingest`).
void reingest_run_dir(Store& store, const std::string& run_id, const std::string& run_dir);

}  // namespace sweep
