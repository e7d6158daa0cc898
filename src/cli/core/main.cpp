// sweep-core: sweep's training core — its own trainer (`train`, `worker`), `bench`, `eval`,
// `export`, `sample` and `devices`, the commands that need LibTorch. The user runs `sweep`, which
// hands these commands to this executable beside it (cli/core_handoff.h); main only parses the
// command line, calls one subcommand and turns its outcome (or error) into the exit code.
#include "cli/core/commands.h"
#include "cli/core_handoff.h"
#include "cli/entry.h"

using namespace sweep;

int main(int argc, char** argv) {
  // named as the user calls it: `sweep bench --help` is the core's own
  CLI::App app{"sweep-core — sweep's training core (run through `sweep`)", "sweep"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sweep 0.1.0");

  TrainOptions train, worker;
  BenchOptions bench;
  ExportOptions exporter;
  SampleCliOptions sample;
  EvalCliOptions eval;
  CLI::App* train_cmd = setup_train(app, train, "train", core_description("train"));
  CLI::App* worker_cmd = setup_train(app, worker, "worker", core_description("worker"));
  CLI::App* bench_cmd = setup_bench(app, bench);
  CLI::App* export_cmd = setup_export(app, exporter);
  CLI::App* sample_cmd = setup_sample(app, sample);
  CLI::App* eval_cmd = setup_eval(app, eval);
  CLI::App* devices_cmd = setup_devices(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : static_cast<int>(Exit::bad_input);
  }
  return run_reporting_errors([&] {
    if (*train_cmd) {
      return run_train(train);
    }
    if (*worker_cmd) {
      return run_train(worker);
    }
    if (*bench_cmd) {
      return run_bench(bench);
    }
    if (*export_cmd) {
      return run_export(exporter);
    }
    if (*sample_cmd) {
      return run_sample(sample);
    }
    if (*eval_cmd) {
      return run_eval(eval);
    }
    if (*devices_cmd) {
      return run_devices();
    }
    throw Error("no command ran: " + app.get_subcommands().front()->get_name() + " is declared but not dispatched");
  });
}
