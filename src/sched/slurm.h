// The Slurm executor: runs become sbatch array tasks (one array per rank and thread count, one
// task per run), each starting its run's ranks with srun. Tasks are followed with squeue, their
// events read from each run directory's events.jsonl as it grows; a task stopped with SIGTERM
// checkpoints, requeues itself and resumes; stopping the sweep cancels its tasks. Slurm's
// commands run from argv vectors, never through a shell.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sched/executor.h"

namespace sweep {

// squeue's state of a task that runs (runs.job_state holds squeue's states as they are).
constexpr const char* k_slurm_running = "RUNNING";

struct SlurmOptions {
  std::string worker_binary;  // the sweep executable (must be reachable from the compute nodes)
  std::string partition;      // "" = the cluster's default
  std::string time;           // --time of each task, "" = the partition's default
  int gpus_per_rank = 0;
  int max_parallel = 0;       // array throttle (%K); 0 = no limit
  int max_preemptions = 10;   // requeues of a task stopped by SIGTERM (SLURM_RESTART_COUNT), then it ends
  double poll_seconds = 2.0;
  double stall_timeout = -1;  // sweep run --stall-timeout (< 0: each run's resources.stall_timeout)
};

// What sbatch would misread in the options or the folders (the results folder, each run's data):
// the script writes them as they are and its run list holds one folder per line (tab-separated),
// so each must be plainly one value. "" when all are.
std::string slurm_options_problem(const SlurmOptions& options, const std::vector<std::string>& folders);

// The sbatch script of one array: task i runs the run directory on line i+1 of `runs_file`.
std::string sbatch_script(const std::string& job_name, const std::string& runs_file, size_t tasks, int64_t ranks,
                          int64_t threads, const std::string& slurm_dir, const SlurmOptions& options);

class SlurmExecutor : public Executor {
 public:
  // `slurm_dir`: where the arrays' run lists, scripts and task logs go; `job_name` names the arrays.
  SlurmExecutor(SlurmOptions options, std::string slurm_dir, std::string job_name);

  std::string describe() const override { return "Slurm"; }
  std::optional<std::string> adopt(const RunRow& row, const PlannedRun* run) override;
  bool can_start(const PlannedRun&) const override { return true; }  // Slurm queues what does not fit
  std::optional<int64_t> start(const PlannedRun& run, const RunRow& row, std::optional<int64_t> pause_at,
                               std::string& where) override;
  Observed submit() override;
  Observed poll() override;
  void kill(const std::string& run_id) override;
  std::string stop(int times) override;

 private:
  struct Task {
    std::string run_id;
    std::string run_dir;
    std::string job;  // "ARRAY_INDEX"
    std::string state;
    uintmax_t offset = 0;  // bytes of events.jsonl already reported
    bool seen_running = false;
    std::optional<std::chrono::steady_clock::time_point> requeued_at;  // preempted and back in the queue
  };
  void follow(Task& t, Observed& seen);  // reports the complete event lines the task's run gained
  WorkerEnd ended(const Task& t) const;

  SlurmOptions m_options;
  std::string m_dir, m_job_name;
  struct ToSubmit {
    std::string run_id, run_dir, data_dir;
    int64_t pause_at = 0;  // --eliminate: the step it pauses at (0: none)
  };
  std::map<std::pair<int64_t, int64_t>, std::vector<ToSubmit>> m_to_submit;  // (ranks, threads) → runs
  int m_arrays_written = 0;
  std::set<std::string> m_arrays;  // the array ids followed
  std::vector<Task> m_tasks;
  bool m_cancelled = false;
  std::map<std::string, std::map<std::string, std::string>> m_earlier;  // an earlier sweep's array → its tasks' states
};

}  // namespace sweep
