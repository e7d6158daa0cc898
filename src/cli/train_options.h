// `sweep train` / `sweep worker`: their options, declared alike by the front and the training
// core, and the run whose `trainer:` is a program of the user's — hosted by whichever of the two
// is asked (src/trainer_host; no LibTorch). Internal to src/cli.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "config/run_config.h"
#include "util/error.h"

namespace sweep {

struct TrainOptions {
  std::string config;
  std::vector<std::string> sets;
  std::string run_dir;
  std::string data_dir;  // where the dataset is; "" = found from the config file's folder
  bool resume = false;
  bool events = false;
  int nproc = 0;  // 0: resources.ranks from the config
  int64_t pause_at = 0;  // --pause-at-step: stop there, checkpointed, as preempted (a look of --eliminate); 0: none
};
CLI::App* setup_train(CLI::App& app, TrainOptions& o, const std::string& name, const std::string& description);

// The --set overrides of `o`, --nproc N among them (= resources.ranks=N).
std::vector<std::string> sets_of(const TrainOptions& o);

// The run's config file read with its overrides.
RunConfig load_train_config(const TrainOptions& o);

// A run whose config names a trainer of the user's: hosted here (its events checked and written).
Exit host_own_trainer(const TrainOptions& o, const RunConfig& cfg);

}  // namespace sweep
