// sweep: ablation studies of language-model training. This is the front, which links no LibTorch:
// it plans, runs sweeps (sweep's core as worker processes, or a trainer of your own, hosted),
// reports and serves. The training core's commands are handed to sweep-core beside it
// (cli/core_handoff.h). main only parses the command line, calls one subcommand and turns its
// outcome (or error) into the exit code.
#include <string>

#include "cli/commands.h"
#include "cli/core_handoff.h"
#include "cli/entry.h"

using namespace sweep;

namespace {

// The subcommand argv names: its first argument that is no option ("" after --help or --version,
// which are the front's own).
std::string subcommand_of(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h" || arg == "--version" || arg == "--") {
      return "";
    }
    if (arg[0] != '-') {
      return arg;
    }
  }
  return "";
}

// `sweep train` / `sweep worker`: a run of a trainer of the user's is hosted here; sweep's own
// trainer is the core's.
Exit train_or_hand_over(const TrainOptions& o, char** argv, const std::string& name) {
  const RunConfig cfg = load_train_config(o);
  if (cfg.trainer) {
    return host_own_trainer(o, cfg);
  }
  exec_core(argv, "sweep " + name + " " + o.config + k_own_trainer_note);
}

}  // namespace

int main(int argc, char** argv) {
  // The core's commands go to it before anything is parsed here (their --help is its own), but for
  // train and worker, whose config may name a trainer of your own
  const std::string sub = subcommand_of(argc, argv);
  for (const CoreCommand& c : k_core_commands) {
    if (sub == c.name && !c.hosts) {
      return run_reporting_errors([&]() -> Exit { exec_core(argv, "sweep " + sub); });
    }
  }

  CLI::App app{"sweep — which interventions beat the baseline by more than seed noise?"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sweep 0.1.0");

  RunOptions run;
  PlanOptions plan;
  StatusOptions status;
  std::string ls_results = "results";
  IngestOptions ingest;
  CheckOptions check;
  TrainOptions train, worker;
  DataOptions data;
  ReportOptions report;
  CalibrateOptions calibrate;
  BacktestOptions backtest;
  PoolOptions pool;
  ReplayOptions replay;
  ServeOptions serve;
  const Commands commands = {
      {setup_run(app, run), [&] { return run_run(run); }},
      {setup_plan(app, plan), [&] { return run_plan(plan); }},
      {setup_status(app, status), [&] { return run_status(status); }},
      {setup_ls(app, ls_results), [&] { return run_ls(ls_results); }},
      {setup_ingest(app, ingest), [&] { return run_ingest(ingest); }},
      {setup_check(app, check), [&] { return run_check(check); }},
      {setup_report(app, report), [&] { return run_report(report); }},
      {setup_calibrate(app, calibrate), [&] { return run_calibrate(calibrate); }},
      {setup_backtest(app, backtest), [&] { return run_backtest(backtest); }},
      {setup_pool(app, pool), [&] { return run_pool(pool); }},
      {setup_replay(app, replay), [&] { return run_replay(replay); }},
      {setup_train(app, train, "train", core_description("train")), [&] { return train_or_hand_over(train, argv, "train"); }},
      {setup_train(app, worker, "worker", core_description("worker")),
       [&] { return train_or_hand_over(worker, argv, "worker"); }},
      {setup_data(app, data), [&] { return run_data(data); }},
      {setup_serve(app, serve), [&] { return run_serve(serve); }},
  };
  const bool core = core_missing("").empty();
  for (const CoreCommand& c : k_core_commands) {  // listed by --help (handed over above)
    if (!c.hosts) {
      app.add_subcommand(c.name, std::string(c.description) + (core ? "" : " [the training core's: not in this build]"))
          ->allow_extras();
    }
  }
  return run_command_line(app, argc, argv, commands);
}
