// The front's subcommands (`sweep`, no LibTorch; the training core's are cli/core/commands.h): each
// has an options struct, setup_<cmd> (declares its CLI11 options) and run_<cmd> (does the work
// through the libraries). Only this module uses CLI11.
#pragma once

#include <CLI/CLI.hpp>

#include <set>
#include <string>
#include <vector>

#include "config/load_sweep.h"
#include "data/import.h"
#include "data/prepare.h"
#include "serve/server.h"
#include "cli/train_options.h"
#include "cli/validators.h"
#include "util/error.h"

namespace sweep {

struct DataOptions {
  PrepareOptions prepare;
  ImportOptions import;
  CLI::App* prepare_cmd = nullptr;
  CLI::App* import_cmd = nullptr;
};
CLI::App* setup_data(CLI::App& app, DataOptions& o);
Exit run_data(const DataOptions& o);

// What `sweep run`, `plan` and `check` read their sweep file with (the planning step, sched/planning.h).
struct SweepFileOptions {
  std::string file;
  std::string results = "results";
  std::string devices;  // --devices as given ("": the file's device)
  int64_t max_variants = static_cast<int64_t>(k_default_max_variants);
};

// --eliminate's --looks and --kept, as `sweep run`, `calibrate --eliminate` and `replay --eliminate`
// take them (cli/run_eliminate.h declares and reads them): "" where not given — the rule's defaults,
// or for `sweep run` the folder's record.
struct EliminationOptions {
  std::string looks, kept;
};

struct RunOptions : SweepFileOptions {
  int retries = 1;
  int max_preemptions = 10;
  double stall_timeout = -1;  // < 0: each run's resources.stall_timeout
  bool retry_failed = false;
  bool until_decided = false;
  int64_t max_seeds = 0;  // 0: 4 × the declared seeds
  bool eliminate = false;       // stop the arms shown worse than −δ at looks (cli/run_eliminate.h)
  EliminationOptions elimination;
  bool replace = false;         // --replace: the file takes its sweep name from another file's sweep
  std::string executor = "local";
  std::string partition, time;  // Slurm
  int gpus_per_rank = 0;
  int max_parallel = 0;
};
CLI::App* setup_run(CLI::App& app, RunOptions& o);
Exit run_run(const RunOptions& o);

struct PlanOptions : SweepFileOptions {
  bool memory = false;  // the activations of the largest run, tensor by tensor
};
CLI::App* setup_plan(CLI::App& app, PlanOptions& o);
Exit run_plan(const PlanOptions& o);

struct CheckOptions : SweepFileOptions {
  int64_t seeds = 3;          // each trained twice
  double stall_timeout = -1;  // as run's
  bool retry_failed = false;  // as run's
};
CLI::App* setup_check(CLI::App& app, CheckOptions& o);
Exit run_check(const CheckOptions& o);

struct StatusOptions {
  std::string sweep;  // "": the latest
  std::string results = "results";
};
CLI::App* setup_status(CLI::App& app, StatusOptions& o);
Exit run_status(const StatusOptions& o);

CLI::App* setup_ls(CLI::App& app, std::string& results);
Exit run_ls(const std::string& results);

struct IngestOptions {
  std::string dir;
  std::string results;  // "": DIR for a results folder, else results
};
CLI::App* setup_ingest(CLI::App& app, IngestOptions& o);
Exit run_ingest(const IngestOptions& o);

struct ReportOptions {
  std::string sweep;
  std::string results = "results";
  std::string metric = "test_loss";
  std::string out;
  std::string noise_from;
  std::string format = "text";
  std::string min_effect;         // as given (checked when given)
  bool min_effect_given = false;  // else the sweep file's
  std::string better_by;          // as given (checked when given)
  bool better_by_given = false;   // else the sweep file's
  double better_by_alpha = 0;     // 0: the sweep file's
};
CLI::App* setup_report(CLI::App& app, ReportOptions& o);
Exit run_report(const ReportOptions& o);

CLI::App* setup_serve(CLI::App& app, ServeOptions& o);
Exit run_serve(const ServeOptions& o);

struct CalibrateOptions {
  std::string sweep;  // "": σ, ρ and δ from the options
  std::string results = "results";
  double sigma = 0, rho = 2, min_effect = 0;  // not given: 0, 2 (ρ), 0
  double better_by = 0, better_by_alpha = 0;  // m in the metric's units; 0: the sweep's (else none, 0.05)
  int64_t seeds = 0, max_seeds = 0, interventions = 0, replicates = 1000;
  uint64_t seed = 1;
  std::string effects = "0,0.5,1,2";  // a list of numbers, read by run_calibrate (an empty one refused)
  std::string spending = "pocock";
  bool tune = false;  // --tune: the tuned verdicts (report/calibration/tuned_calibration.h)
  double curvature = 0.03, run_sigma = 0.004, asymmetry = 4;
  std::string tune_grid = "-1,0,1,2";  // log2 of the values tried ÷ the base value
  bool backtest = false;  // --backtest: the backtest on synthetic ladders (report/calibration/backtest_calibration.h)
  int64_t rungs = 4;
  double bend = 0.01;
  double top_noise = 2.5;
  bool pool = false;  // --pool: pooling on simulated meta-studies (report/calibration/pool_calibration.h)
  bool eliminate = false;  // --eliminate: the elimination rule on simulated studies (eliminate_calibration.h)
  EliminationOptions elimination;
  std::set<std::string> given;  // the options of one mode given (--rungs, --tune-grid, ...): checked against the mode
};
CLI::App* setup_calibrate(CLI::App& app, CalibrateOptions& o);
Exit run_calibrate(const CalibrateOptions& o);

struct BacktestOptions {
  std::vector<std::string> sweeps;  // empty: every sweep with a scale ladder
  std::string results = "results";
  std::string metric = "test_loss";
  std::string format = "text";
};
CLI::App* setup_backtest(CLI::App& app, BacktestOptions& o);
Exit run_backtest(const BacktestOptions& o);

struct PoolOptions {
  std::vector<std::string> sweeps;  // empty: every sweep in the results
  std::string results = "results";
  std::string metric = "test_loss";
  std::string format = "text";
  std::string out;  // "": print only; else pool.md, pool.json and pool.svg written there
};
CLI::App* setup_pool(CLI::App& app, PoolOptions& o);
Exit run_pool(const PoolOptions& o);

struct ReplayOptions {
  std::vector<std::string> sweeps;  // empty: every sweep in the results
  std::string results = "results";
  bool eliminate = false;
  EliminationOptions elimination;
  std::string format = "text";  // text (Markdown) or json
};
CLI::App* setup_replay(CLI::App& app, ReplayOptions& o);
Exit run_replay(const ReplayOptions& o);

}  // namespace sweep
