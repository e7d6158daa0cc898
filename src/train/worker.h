// The built-in worker: one run of sweep's own trainer (`sweep train`, `sweep worker`), from its
// config to its end event — the dataset found, the device checked, the ranks started as torchrun
// would (resources.ranks > 1), the run directory claimed (its lock held while it trains), then the
// trainer. Its twin for a trainer of the user's is src/trainer_host.
#pragma once

#include <string>
#include <vector>

#include "config/run_config.h"
#include "util/error.h"

namespace sweep {

struct WorkerOptions {
  std::string config;             // the config file (its folder is where the dataset is looked for)
  std::vector<std::string> sets;  // its --set overrides, passed on to each rank
  std::string run_dir;            // "": results/train/<config stem>-<id>
  std::string data_dir;           // "": found from the config file's folder
  bool resume = false;            // a run already in run_dir is continued (else refused)
  bool events = false;            // events as JSON lines on stdout even on a terminal
  int64_t pause_at = 0;           // stop after this step, checkpointed, as preempted (0: train to the end)
};

// `cfg`: the config file read with its overrides (no `trainer:`). The exit code the run ends with.
Exit run_worker(RunConfig cfg, const WorkerOptions& o);

}  // namespace sweep
