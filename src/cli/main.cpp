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

// The subcommand argv names: its first argument that is no option.
std::string subcommand_of(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] != '-') {
      return argv[i];
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

  TrainOptions train, worker;
  DataOptions data;
  SweepOptions sweep_options;
  ReportOptions report;
  CalibrateOptions calibrate;
  BacktestOptions backtest;
  ServeOptions serve;
  setup_sweep_commands(app, sweep_options);
  CLI::App* report_cmd = setup_report(app, report);
  CLI::App* calibrate_cmd = setup_calibrate(app, calibrate);
  CLI::App* backtest_cmd = setup_backtest(app, backtest);
  CLI::App* train_cmd = setup_train(app, train, "train", core_description("train"));
  CLI::App* worker_cmd = setup_train(app, worker, "worker", core_description("worker"));
  CLI::App* data_cmd = setup_data(app, data);
  CLI::App* serve_cmd = setup_serve(app, serve);
  for (const CoreCommand& c : k_core_commands) {  // listed by --help (handed over above)
    if (!c.hosts) {
      app.add_subcommand(c.name, c.description)->allow_extras();
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : static_cast<int>(Exit::bad_input);
  }
  return run_reporting_errors([&] {
    if (*train_cmd) {
      return train_or_hand_over(train, argv, "train");
    }
    if (*worker_cmd) {
      return train_or_hand_over(worker, argv, "worker");
    }
    if (*data_cmd) {
      return run_data(data);
    }
    if (*report_cmd) {
      return run_report(report);
    }
    if (*calibrate_cmd) {
      return run_calibrate(calibrate);
    }
    if (*backtest_cmd) {
      return run_backtest(backtest);
    }
    if (*serve_cmd) {
      return run_serve(serve);
    }
    for (const CLI::App* cmd : {sweep_options.run, sweep_options.plan, sweep_options.status, sweep_options.ls,
                                sweep_options.ingest, sweep_options.check}) {
      if (*cmd) {
        return run_sweep_command(sweep_options, cmd);
      }
    }
    throw Error("no command ran: " + app.get_subcommands().front()->get_name() + " is declared but not dispatched");
  });
}
