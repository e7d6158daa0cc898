// The Slurm executor: a sweep's unfinished runs become sbatch array tasks (one array per
// rank count, one task per run), each starting its run's ranks with srun. The scheduler follows
// the tasks with squeue and ingests each run directory's events.jsonl as it grows; a task
// stopped with SIGTERM checkpoints, requeues itself and resumes; Ctrl-C cancels the sweep's
// tasks. Slurm's commands run from argv vectors, never through a shell.
#pragma once

#include <string>

#include "config/sweep_spec.h"
#include "store/store.h"

namespace sweep {

struct SlurmOptions {
  std::string results_dir = "results";
  std::string worker_binary;  // the sweep executable (must be reachable from the compute nodes)
  std::string partition;      // "" = the cluster's default
  std::string time;           // --time of each task, "" = the partition's default
  int gpus_per_rank = 0;
  int max_parallel = 0;       // array throttle (%K); 0 = no limit
  bool retry_failed = false;
  double poll_seconds = 2.0;
};

// Returns the exit code: 0 every run finished, 1 some failed, 130 cancelled by Ctrl-C.
int run_slurm(const SweepSpec& spec, Store& store, const SlurmOptions& options);

// The sbatch script of one array: task i runs the run directory on line i+1 of `runs_file`.
std::string sbatch_script(const std::string& job_name, const std::string& runs_file, size_t tasks, int64_t ranks,
                          int64_t threads, const std::string& slurm_dir, const SlurmOptions& options);

}  // namespace sweep
