#include "cli/train_options.h"

#include <unistd.h>

#include "trainer_host/host.h"

namespace sweep {

CLI::App* setup_train(CLI::App& app, TrainOptions& o, const std::string& name, const std::string& description) {
  CLI::App* cmd = app.add_subcommand(name, description);
  cmd->add_option("config", o.config, "Run config (YAML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--set", o.sets, "Override a key: --set train.lr=1e-3 (repeatable)");
  cmd->add_option("--run-dir", o.run_dir, "Run directory (default results/train/<config>-<hash>)");
  cmd->add_option("--data", o.data_dir,
                  "The dataset's folder (default: data.dataset looked up from the config file's folder upwards)");
  cmd->add_flag("--resume", o.resume, "Continue from the run directory's checkpoint");
  cmd->add_flag("--events", o.events, "JSON-lines events on stdout (default when stdout is not a terminal)");
  cmd->add_option("--nproc", o.nproc,
                  "Data-parallel ranks on this machine (Gloo on CPU, NCCL on GPUs); = --set resources.ranks=N")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--pause-at-step", o.pause_at,
                  "Stop after this step, checkpointed, as preempted (`sweep run --eliminate` pauses its runs at "
                  "their looks so); 0: train to the end")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  return cmd;
}

std::vector<std::string> sets_of(const TrainOptions& o) {
  std::vector<std::string> sets = o.sets;
  if (o.nproc > 0) {
    sets.push_back("resources.ranks=" + std::to_string(o.nproc));
  }
  return sets;
}

RunConfig load_train_config(const TrainOptions& o) {
  std::vector<Override> overrides;
  for (const auto& s : sets_of(o)) {
    overrides.push_back(parse_set_option(s));
  }
  return load_run_config(o.config, overrides);
}

Exit host_own_trainer(const TrainOptions& o, const RunConfig& cfg) {
  if (o.run_dir.empty()) {
    throw Error(o.config + " names a trainer of your own: run it with `sweep run` on its sweep file (or pass --run-dir)",
                Exit::bad_input);
  }
  if (o.pause_at > 0) {
    throw Error("--pause-at-step: " + o.config + " names a trainer of your own, which cannot be paused at a step — "
                "train it without --pause-at-step (a sweep of it without --eliminate)",
                Exit::bad_input);
  }
  return host_trainer(cfg, {o.run_dir, o.resume, o.events || !::isatty(STDOUT_FILENO)});
}

}  // namespace sweep
