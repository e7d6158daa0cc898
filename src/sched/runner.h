// The sweep runner: one `sweep run` over an executor. It owns a sweep's lifecycle — the results
// folder's lock, recovery from a scheduler that died, the plan (what is left to run), Ctrl-C,
// preemptions and retries, ingesting the workers' events (it is the database's only writer),
// the live view, the summary and the exit code — and leaves to the executor only starting,
// watching and stopping workers. Never talks to the training core except through the worker.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "config/sweep_spec.h"
#include "sched/branches.h"
#include "sched/executor.h"
#include "sched/lifecycle.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"

namespace sweep {

// One scheduler per results folder (it is the database's only writer): holds the folder's lock
// while it lives; throws when another scheduler holds it. Also keeps a little space in reserve
// (.sweep-reserve, 1 MiB when the disk has it), so that a scheduler that meets a full disk can
// still record how its runs stopped.
class ResultsLock {
 public:
  explicit ResultsLock(const std::string& results_dir);
  ~ResultsLock();
  void release_reserve();  // frees the reserved space, for the last writes

 private:
  std::unique_ptr<FileLock> m_lock;
  std::filesystem::path m_reserve;
};

// Re-ingests a run directory's events.jsonl (after a scheduler crash, or for `sweep ingest`); a
// run whose events stop in an attempt without an end is recorded interrupted (resumable). Returns
// the attempts its starts make (events::EventOrder::attempts), for a database rebuilt from it.
int64_t reingest_run_dir(Store& store, const std::string& run_id, const std::string& run_dir);

// Records how an attempt of the run ended as the scheduler reads it (an exit code, a kill, a stop),
// where its events do not say it already: an end event "by" the scheduler appended to the run's
// events.jsonl (protocol/event_order.h), so that `sweep ingest` of its folder records what the
// database does; then the database. A finished run's result is never rewritten.
void record_end(Store& store, const std::string& run_id, RunState state, const std::string& error);

// --eliminate's looks (docs/verdicts.md#eliminate) as the runner takes them: every run trains to
// the step of the look to come and pauses there, checkpointed; once none trains or waits to start,
// the look decides which arms stop, and the rest train to the next look, then to their end.
class Looks {
 public:
  virtual ~Looks() = default;
  // The step `run` pauses at for the look to come; nullopt: it trains to its end (no look is left
  // before it).
  virtual std::optional<int64_t> pause_at(const PlannedRun& run) const = 0;
  // Its arm was stopped by a look: it is not trained further.
  virtual bool stopped(const PlannedRun& run) const = 0;
  // The look the paused runs wait for, taken and recorded in `spec`'s design; the line that says
  // what it decided. Not asked while some runs failed or were skipped (an arm's seeds would be
  // missing): the paused runs then wait for a later `sweep run`.
  virtual std::string take(SweepSpec& spec) = 0;
};

struct RunnerOptions {
  int retries = 1;            // crashes retried per run and `sweep run`, from its checkpoint
  int max_preemptions = 10;   // requeues after SIGTERM per run and `sweep run`, then it is failed
  bool retry_failed = false;  // run again the runs that ended failed or out of memory
  // The watchdog: seconds without an event after which a running worker is killed and its run
  // retried from its checkpoint. < 0: each run's resources.stall_timeout; 0: never.
  double stall_timeout = -1;
  // The least silence a worker is allowed before its first event (its start): loading the
  // training core's libraries on a busy machine takes seconds, and a short stall timeout (a
  // test's 2 s) would kill healthy workers before they could speak.
  double startup_allowance = 60;
  // --until-decided: asked, with the sweep's runs so far, when they have all ended and none
  // failed: the runs to add (the sweep is recorded with them; none: it is over), and a line that
  // says why. Unset: the sweep's runs are the file's.
  std::function<std::vector<PlannedRun>(const SweepSpec& sweep, std::string& why)> next_round;
  // --eliminate: its looks. Unset: every run trains to its end.
  std::shared_ptr<Looks> looks;
};

class SweepRunner {
 public:
  // `lock`: the results folder's, taken before anything was written there. The executor lives
  // as long as the runner and goes first: the lock is held until its workers are gone.
  SweepRunner(const SweepSpec& spec, Store& store, std::unique_ptr<ResultsLock> lock,
              std::unique_ptr<Executor> executor, RunnerOptions options);

  // Runs every run of the sweep that is not finished. Returns ok when all finished, failed when
  // some failed, interrupted after Ctrl-C (the runs checkpointed; `sweep run` again resumes).
  Exit run();

 private:
  struct Watched {
    const PlannedRun* run;
    double started;                // steady seconds
    std::optional<double> heard;   // when its worker last sent an event (or started); none while queued
    std::string last_event = "its launch";  // what that event was ("train, step 120")
    bool spoke = false;            // it has sent an event since its launch
    std::optional<int64_t> pause_at = std::nullopt;  // --eliminate, branches: the step it was launched to pause at
    bool for_branches = false;  // that pause gives its branches their start (sched/branches.h)
  };
  bool stopping() const;  // Ctrl-C, or a halt: nothing more starts
  void plan(const std::vector<const PlannedRun*>& runs);  // queues what is not finished, counts the rest
  ToDo to_do(const std::vector<const PlannedRun*>& runs);  // of `runs`, those to (re)start, by the database
  void enqueue(const ToDo& todo);                         // its runs queued, longest first, but those followed
  bool add_round();                                       // --until-decided: queues the next round, if any
  bool take_look();  // --eliminate: the look the paused runs wait for, then the runs left queued to the next
  void abandon();
  void recover();
  // Branches (sched/branches.h): `parent`'s branches at `step` given its checkpoint and queued; and
  // those waiting for `parent`, queued again to be judged anew once it has ended otherwise.
  void start_branches(const PlannedRun& parent, int64_t step);
  void requeue_waiting(const std::string& parent);
  void launch(const PlannedRun& run);
  void apply(Observed seen);
  void finish(const WorkerEnd& end);
  // Another process holds the run's lock (a worker a killed scheduler left): the run is followed —
  // its slots kept busy, its events read as they grow — and taken up once that process lets go.
  bool held_elsewhere(const PlannedRun& run, const std::filesystem::path& dir);
  void follow_held();
  void check_stalls();  // the watchdog: kills the workers silent for longer than their stall timeout
  void draw();
  void clear_block();
  void say(const std::string& line);
  std::string describe(const std::string& run_id) const;  // a watched run
  std::string describe(const PlannedRun& run) const;

  SweepSpec m_spec;                 // as recorded: the file's runs, and the rounds --until-decided added
  std::deque<PlannedRun> m_runs;    // the same runs, where they stay put: the queue points into it
  Store& m_store;
  RunnerOptions m_options;
  std::unique_ptr<ResultsLock> m_lock;  // declared before the executor: released after it
  std::unique_ptr<Executor> m_executor;
  std::deque<const PlannedRun*> m_queue;
  std::map<std::string, Watched> m_watched;  // runs with a worker started or adopted
  std::map<std::string, int> m_preemptions;  // requeues after SIGTERM, per run
  std::map<std::string, int> m_crashes;      // crashes retried, per run (--retries)
  std::map<std::string, std::string> m_stalled;  // runs the watchdog killed: what it last heard, how long ago
  std::map<std::string, double> m_killed_at;     // and when it last sent the kill
  std::string m_halt;                        // why the sweep stops (a worker could not write its files)
  int m_done = 0, m_failed = 0, m_finished_before = 0, m_failed_before = 0;
  size_t m_total = 0;  // distinct runs planned
  struct Held {
    const PlannedRun* run;
    std::string holder;  // the pid that holds its lock, as it wrote it
    double read = 0;     // when its events were last read
  };
  std::map<std::string, Held> m_held;  // runs whose lock another process holds, followed until it lets go
  int m_paused = 0;   // --eliminate: runs at the step of the look to come, waiting for it
  std::set<std::string> m_stopped;  // --eliminate: runs of the arms its looks stopped
  std::unique_ptr<Branches> m_branches;
  std::map<std::string, std::vector<const PlannedRun*>> m_waiting;  // parent's id -> branches waiting for their start
  int m_orphaned = 0;  // branches not started: their parent cannot give them their start
  bool m_tty = false;
  size_t m_drawn = 0;  // lines of the live block on the terminal
  double m_last_draw = 0, m_started = 0;
};

}  // namespace sweep
