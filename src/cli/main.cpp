// sweep: ablation studies of language-model training. main only parses the command line,
// calls one subcommand and turns its outcome (or error) into the exit code.
#include <cstdio>
#include <exception>
#include <filesystem>

#include "cli/commands.h"
#include "util/text.h"

using namespace sweep;

int main(int argc, char** argv) {
  CLI::App app{"sweep — which interventions beat the baseline by more than seed noise?"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sweep 0.1.0");

  TrainOptions train, worker;
  BenchOptions bench;
  ExportOptions exporter;
  SampleCliOptions sample;
  EvalCliOptions eval;
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
  CLI::App* train_cmd = setup_train(app, train, "train", "Train one run from a config file");
  CLI::App* worker_cmd = setup_train(app, worker, "worker", "Train one run for the scheduler (same as train)");
  CLI::App* data_cmd = setup_data(app, data);
  CLI::App* bench_cmd = setup_bench(app, bench);
  CLI::App* export_cmd = setup_export(app, exporter);
  CLI::App* sample_cmd = setup_sample(app, sample);
  CLI::App* eval_cmd = setup_eval(app, eval);
  CLI::App* devices_cmd = setup_devices(app);
  CLI::App* serve_cmd = setup_serve(app, serve);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : static_cast<int>(Exit::bad_input);
  }

  Exit code = Exit::ok;
  try {
    if (*train_cmd) {
      code = run_train(train);
    } else if (*worker_cmd) {
      code = run_train(worker);
    } else if (*data_cmd) {
      code = run_data(data);
    } else if (*bench_cmd) {
      code = run_bench(bench);
    } else if (*export_cmd) {
      code = run_export(exporter);
    } else if (*sample_cmd) {
      code = run_sample(sample);
    } else if (*eval_cmd) {
      code = run_eval(eval);
    } else if (*devices_cmd) {
      code = run_devices();
    } else if (*report_cmd) {
      code = run_report(report);
    } else if (*calibrate_cmd) {
      code = run_calibrate(calibrate);
    } else if (*backtest_cmd) {
      code = run_backtest(backtest);
    } else if (*serve_cmd) {
      code = run_serve(serve);
    } else {
      for (const CLI::App* cmd : {sweep_options.run, sweep_options.plan, sweep_options.status, sweep_options.ls,
                                  sweep_options.ingest, sweep_options.check}) {
        if (*cmd) {
          code = run_sweep_command(sweep_options, cmd);
        }
      }
    }
  } catch (const InputErrors& e) {
    for (const auto& d : e.diagnostics()) {
      std::fprintf(stderr, "%s\n", d.str().c_str());
    }
    std::fprintf(stderr, "sweep: %zu error%s; nothing was written\n", e.diagnostics().size(),
                 e.diagnostics().size() == 1 ? "" : "s");
    code = e.code();
  } catch (const Error& e) {
    std::fprintf(stderr, "sweep: %s\n", printable(e.what()).c_str());
    code = e.code();
  } catch (const std::filesystem::filesystem_error& e) {  // a folder that cannot be made or read: names it
    std::fprintf(stderr, "sweep: %s\n", printable(e.what()).c_str());
    code = Exit::io_error;
  } catch (const std::exception& e) {
    // one line: LibTorch's errors carry a backtrace after it (out of memory among them)
    const std::string what = e.what();
    std::fprintf(stderr, "sweep: unexpected error: %s\n", printable(what.substr(0, what.find('\n'))).c_str());
    code = Exit::failed;
  }
  return static_cast<int>(code);
}
