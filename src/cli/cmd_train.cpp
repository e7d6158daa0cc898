// `sweep train` / `sweep worker`: one run from a config file, in a run directory.
#include <unistd.h>

#include <torch/torch.h>

#include "cli/commands.h"
#include "config/run_config.h"
#include "train/trainer.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/signals.h"

namespace sweep {

CLI::App* setup_train(CLI::App& app, TrainOptions& o, const std::string& name, const std::string& description) {
  CLI::App* cmd = app.add_subcommand(name, description);
  cmd->add_option("config", o.config, "Run config (YAML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--set", o.sets, "Override a key: --set train.lr=1e-3 (repeatable)");
  cmd->add_option("--run-dir", o.run_dir, "Run directory (default results/train/<config>-<hash>)");
  cmd->add_flag("--resume", o.resume, "Continue from the run directory's checkpoint");
  cmd->add_flag("--events", o.events, "JSON-lines events on stdout (default when stdout is not a terminal)");
  return cmd;
}

Exit run_train(const TrainOptions& o) {
  // ---- validate everything before writing anything ----
  std::vector<Override> overrides;
  for (const auto& s : o.sets) {
    overrides.push_back(parse_set_option(s));
  }
  RunConfig cfg = load_run_config(o.config, overrides);
  auto data = load_train_data(cfg);
  if (cfg.model.vocab_size == 0) {
    cfg.model.vocab_size = data->vocab_size;
  }
  const std::string run_dir = !o.run_dir.empty() ? o.run_dir
                                                 : "results/train/" + fs::path(o.config).stem().string() + "-" +
                                                       sha256_hex(cfg.identity_json().dump()).substr(0, 8);
  const fs::path config_file = fs::path(run_dir) / "config.yaml";
  if (fs::exists(config_file)) {
    if (!o.resume) {
      throw Error("run directory " + run_dir + " already holds a run — pass --resume to continue it, or --run-dir "
                  "for a new one",
                  Exit::bad_input);
    }
    if (load_run_config(config_file.string()).identity_json() != cfg.identity_json()) {
      throw Error("run directory " + run_dir + " holds a run with another config — use --run-dir for this one",
                  Exit::bad_input);
    }
  } else {
    fs::create_directories(fs::path(run_dir) / "checkpoint");
    write_file_atomic(config_file, cfg.to_yaml());
  }

  // ---- run ----
  at::set_num_threads(cfg.threads());
  install_stop_handlers();
  const bool json = o.events || !::isatty(STDOUT_FILENO);
  EventSink events((fs::path(run_dir) / "events.jsonl").string(), (fs::path(run_dir) / "train.log").string(), json,
                   !json);
  events.note("run directory " + run_dir);
  RunResult result;
  try {
    Trainer trainer(cfg, data);
    result = trainer.run({run_dir, o.resume, &events});
  } catch (const std::exception& e) {
    events.emit("end", {{"status", "failed"}, {"reason", e.what()}});
    throw;
  }
  switch (result.status) {
    case RunStatus::done:
      return Exit::ok;
    case RunStatus::diverged:
      return Exit::diverged;
    case RunStatus::preempted:
      return Exit::preempted;
    case RunStatus::failed:
      break;
  }
  return Exit::failed;
}

}  // namespace sweep
