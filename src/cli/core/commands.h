// The training core's subcommands (`sweep-core`, which the front hands them to: cli/core_handoff.h):
// each has an options struct, setup_<cmd> (declares its CLI11 options) and run_<cmd>.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli/train_options.h"
#include "cli/validators.h"
#include "train/score_model.h"
#include "util/error.h"

namespace sweep {

// `sweep train` / `sweep worker` in the core: sweep's own trainer (a trainer of your own is hosted).
Exit run_train(const TrainOptions& o);

struct BenchOptions {
  std::string config;
  int64_t steps = 20;
  int64_t warmup = 3;
  std::vector<std::string> precisions{"fp32", "bf16"};
  int threads = 0;
  std::vector<std::string> paths{"reference", "fused"};
  int64_t vocab = 0;
  bool no_ops = false;
  std::vector<std::string> optimizers;  // --optimizer: empty = the config's
  bool profile = false;
  double data_gib = 0;     // also measure the loader on this many GiB of generated shards
  std::string data_dir;  // where they are written (default: the temp dir)
  std::string device = "cpu";
  std::vector<std::string> models;  // reference | gpt2-small; default: reference (cpu), both (cuda)
  std::string nanogpt;              // nanoGPT's model.py, timed beside sweep
  std::string python;  // --python; default: the build's (SWEEP_BUILD_PYTHON), else python3
  bool precisions_given = false;
  int nproc = 1;                        // > 1: per-rank memory and step time of each ZeRO stage
  std::vector<int64_t> zero{0, 1, 2, 3};  // the stages --nproc measures
  bool rank_child = false;              // this process is one rank of --nproc (internal)
  std::vector<std::string> levers;      // --lever (cuda): the rows to time; empty: all (bench/gpu_bench.h)
  std::string rows;                     // --rows FILE: each row appended as a JSON line (bench/rows.h)
};
CLI::App* setup_bench(CLI::App& app, BenchOptions& o);
Exit run_bench(const BenchOptions& o);

struct ExportOptions {
  std::string run_dir;
  std::string out;
};
CLI::App* setup_export(CLI::App& app, ExportOptions& o);
Exit run_export(const ExportOptions& o);

struct SampleCliOptions {
  std::string run_dir;
  std::string prompt;
  int64_t tokens = 200;
  double temperature = 0.8;
  int64_t top_k = 200;
  uint64_t seed = 1;
  std::string data_dir;
};
CLI::App* setup_sample(CLI::App& app, SampleCliOptions& o);
Exit run_sample(const SampleCliOptions& o);

CLI::App* setup_devices(CLI::App& app);
Exit run_devices();

struct EvalCliOptions {
  ScoreOptions score;
  int threads = 0;
  bool json = false;
};
CLI::App* setup_eval(CLI::App& app, EvalCliOptions& o);
Exit run_eval(const EvalCliOptions& o);

}  // namespace sweep
