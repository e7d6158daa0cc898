// sweep-core: sweep's training core — its own trainer (`train`, `worker`), `bench`, `eval`,
// `export`, `sample` and `devices`, the commands that need LibTorch. The user runs `sweep`, which
// hands these commands to this executable beside it (cli/core_handoff.h); main only parses the
// command line, calls one subcommand and turns its outcome (or error) into the exit code.
#include <cstdlib>

#include "cli/core/commands.h"
#include "cli/core_handoff.h"
#include "cli/entry.h"

using namespace sweep;

int main(int argc, char** argv) {
  ::unsetenv(k_handed_to_core);  // reached: what this core starts is started afresh
  // named as the user calls it: `sweep bench --help` is the core's own
  CLI::App app{"sweep-core — sweep's training core (run through `sweep`)", "sweep"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sweep 0.1.0");

  TrainOptions train, worker;
  BenchOptions bench;
  ExportOptions exporter;
  SampleCliOptions sample;
  EvalCliOptions eval;
  return run_command_line(app, argc, argv,
                          {{setup_train(app, train, "train", core_description("train")), [&] { return run_train(train); }},
                           {setup_train(app, worker, "worker", core_description("worker")), [&] { return run_train(worker); }},
                           {setup_bench(app, bench), [&] { return run_bench(bench); }},
                           {setup_export(app, exporter), [&] { return run_export(exporter); }},
                           {setup_sample(app, sample), [&] { return run_sample(sample); }},
                           {setup_eval(app, eval), [&] { return run_eval(eval); }},
                           {setup_devices(app), [] { return run_devices(); }}});
}
