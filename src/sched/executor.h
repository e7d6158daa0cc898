// Where a sweep's workers run. An executor only starts, watches and stops `sweep worker`
// processes — a local child on a device slot (sched/local.h) or a Slurm array task
// (sched/slurm.h) — and reports what it saw. It never writes the database: the sweep runner
// (sched/runner.h) owns the lifecycle and is the database's only writer.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/sweep_spec.h"
#include "store/store.h"

namespace sweep {

// A worker that has ended.
struct WorkerEnd {
  std::string run_id;
  std::optional<int> exit_code;  // nullopt: the executor cannot tell (a batch task that left the queue)
  bool out_of_memory = false;    // evidence of an OOM kill (see EndFacts)
  std::string log;               // the file to read about it
  std::string log_tail;          // its last lines
  std::string detail;            // what ended, when the exit code is unknown
  bool requeues_spent = false;   // stopped by SIGTERM after the batch system requeued it --max-preemptions times
};

// A batch-system task of a run and its state, as the batch system reports it ("12_3", "RUNNING").
struct JobUpdate {
  std::string run_id, job, state;
};

// What an executor saw since it last reported, in the order to apply it.
struct Observed {
  std::vector<std::pair<std::string, std::vector<std::string>>> events;  // a run's new complete event lines
  std::vector<JobUpdate> jobs;
  std::vector<std::string> queued;  // runs the batch system accepted (a --retry-failed run is pending again)
  std::vector<std::pair<std::string, std::string>> running;  // a queued worker now runs: run id, where
  std::vector<std::string> requeued;  // a batch task back in the queue after a preemption
  std::vector<WorkerEnd> ended;
  std::vector<std::string> notes;  // lines for the user ("submitted Slurm array 12: ...")
  std::string error;  // a failure, raised by the runner once the rest is recorded (a later sbatch failed)
};

class Executor {
 public:
  virtual ~Executor() = default;

  // What the headline says the runs run on: "2 slots (cpu:2x1)", "Slurm".
  virtual std::string describe() const = 0;
  // A run recorded with a live worker by an earlier `sweep run` (`running`, or a batch task):
  // where that worker is ("Slurm task 12_3 is RUNNING") when the executor follows it from now on;
  // nullopt when there is none to follow (an orphaned local worker is stopped, so that it
  // checkpoints). `run` is null for a run the sweep file no longer plans: never followed.
  virtual std::optional<std::string> adopt(const RunRow& row, const PlannedRun* run) = 0;
  // Whether `run` can start now (a local run needs as many free slots as it has ranks).
  virtual bool can_start(const PlannedRun& run) const = 0;
  // Starts a worker on `run`, whose directory holds its config.yaml — to pause, checkpointed, at
  // step `pause_at` (--eliminate's next look) when given. Returns the process id of a worker that
  // runs now, nullopt for one that was queued (a batch task, sent at `submit`). `where`: said in
  // the start line.
  virtual std::optional<int64_t> start(const PlannedRun& run, const RunRow& row, std::optional<int64_t> pause_at,
                                       std::string& where) = 0;
  // A run whose lock another process holds — a worker a killed scheduler left, still training: the
  // slots it would take are kept busy until `release`, so that none is double-booked (a batch
  // system's tasks are its own: nothing to keep). Asked only where can_start(run) holds.
  virtual void hold(const PlannedRun& run) { (void)run; }
  virtual void release(const std::string& run_id) { (void)run_id; }
  // Sends what `start` queued.
  virtual Observed submit() { return {}; }
  // Waits a little (a local poll, a batch system's polling interval) and reports.
  virtual Observed poll() = 0;
  // Kills a run's worker at once (its process group; a batch task is cancelled): the watchdog's,
  // for a worker that sent no event for its stall timeout. A later poll reports it ended.
  virtual void kill(const std::string& run_id) = 0;
  // The user asked to stop, for the `times`th time: ask the workers to checkpoint and stop (1),
  // or kill them (2 and more). Every watched worker is reported ended by later polls. Returns
  // the line to show.
  virtual std::string stop(int times) = 0;
};

}  // namespace sweep
