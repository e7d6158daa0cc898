// The pure rules of a run's lifecycle, shared by the sweep runner and both executors and
// table-tested in tests/unit/sched/test_sched.cpp: the state a run is in for planning, which runs a
// `sweep run` must (re)start, what to do with a worker that ended, and the worker's command line.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/sweep_spec.h"
#include "protocol/run_state.h"
#include "store/store.h"

namespace sweep {

// A recorded run read with what is known now. `worker_alive`: whether a local worker process of
// a run recorded `running` is still there (a batch task is followed through the batch system, its
// job_state, and counts as running).
PlanState plan_state(const RunRow& row, bool worker_alive);
// The same, looking the worker process up in /proc (for `sweep plan`, `status`, `ls`).
PlanState plan_state(const RunRow& row);
// A run's state as `ls`, `status` and `plan` say it: its plan state, but "stopped" for a run that
// --eliminate stopped (the record's stop_of its id) and that has not finished, failed or restarted
// since — one answer, by run id, whatever its arm is named now.
std::string state_label(PlanState state, const std::optional<EliminationDesign>& eliminate, const std::string& run_id);
// Whether the run's recorded worker is still alive — checked by its command line, so a pid
// reused by an unrelated process (after a reboot, say) is never taken for it, or signalled.
bool worker_alive(const RunRow& row);

// Of `runs` (in plan order), those a `sweep run` must (re)start, each run id once.
struct ToDo {
  std::vector<const PlannedRun*> runs;
  size_t total = 0;                            // distinct runs in the sweep
  int finished_before = 0, failed_before = 0;  // failed/oom: skipped unless retry_failed
};
ToDo runs_to_do(const std::vector<const PlannedRun*>& runs,
                const std::function<PlanState(const std::string& run_id)>& state_of, bool retry_failed);

// A run's training FLOPs from its config (6·N per token and attention, times its tokens): what
// it costs, to order the queue. 0 when the config does not say (a trainer of the user's own).
double estimated_flops(const PlannedRun& run);
// Orders `runs` longest first (plan order among equals): the last runs of a sweep, or of an
// --until-decided round, are then its shortest, and a slot idles at the end for less — a
// ladder's top-rung runs, 20× its bottom rung's, no longer start last and train alone.
void longest_first(std::vector<const PlannedRun*>& runs);

// What is known when a worker has ended.
struct EndFacts {
  std::optional<int> exit_code;         // nullopt: the executor cannot tell (a batch task that left the queue)
  RunState recorded = RunState::running;  // the run's state once its last events were ingested
  std::string recorded_error;           // and the reason its events gave (a divergence's)
  bool stopping = false;                // the sweep is stopping (Ctrl-C, or a halt)
  bool out_of_memory = false;           // by the log, the kernel's OOM-kill count, or an unexplained SIGKILL
  int crashes = 0;                      // the run's crashes retried so far by this `sweep run` (not its
                                        // out-of-memory ends, preemptions or earlier sweeps' attempts)
  int retries = 0;                      // crashes retried per run (--retries)
  int preemptions = 0;                  // the run's requeues after SIGTERM so far
  int max_preemptions = 10;             // then it is failed (--max-preemptions)
  std::string detail;                   // what ended, when the exit code is unknown ("Slurm task 12_3 ended …")
  std::string log_tail;                 // the last lines of the worker's log
  std::string stalled;                  // the watchdog killed it: what it last heard, how long ago ("" = not)
  std::optional<int64_t> paused_at;     // --eliminate, branches: the step it was launched to pause at
  std::string paused_for = "a look of --eliminate";  // and what for
  int64_t steps = 0;                    // the steps it has trained, as its events say
  // a trainer of your own that exited with a code of its own before its first event in this
  // attempt (a missing module, a wrong path): it would fail the same way again, not retried
  bool own_failed_before_start = false;
};

// What the runner does next with the run.
enum class Then {
  finished,  // done or diverged: counts as finished
  requeue,   // preempted by SIGTERM: back to the front of the queue, resumes from its checkpoint
  retry,     // crashed: back to the end of the queue, resumes from its checkpoint
  give_up,   // failed or out of memory: counts as failed (`--retry-failed` runs it again)
  stopped,   // interrupted by Ctrl-C: left for the next `sweep run`
  halt,      // its files could not be written (disk full, read-only): the sweep stops, resumable
  paused,    // --eliminate: checkpointed at the step it was to pause at; waits for the look (resumable)
};

struct Outcome {
  RunState state;
  Then then;
  std::string error;  // recorded as the run's error
};

Outcome classify_end(const EndFacts& facts);

// The worker's command line for a run directory (which holds config.yaml) and the folder where
// its dataset is on this machine. `device` "" keeps the config's. The Slurm script passes
// "${run_dir}" and "${data_dir}", its variables.
// `stall_timeout` < 0 keeps the config's (the worker's heartbeats follow it).
// `pause_at`: the step the worker pauses at, checkpointed, for a look of --eliminate ("" = none; the
// Slurm script passes "${pause_at}", 0 there meaning none).
std::vector<std::string> worker_argv(const std::string& binary, const std::string& run_dir, const std::string& data_dir,
                                     int64_t threads, const std::string& device, double stall_timeout = -1,
                                     const std::string& pause_at = "");

}  // namespace sweep
