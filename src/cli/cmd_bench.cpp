// `sweep bench`: training-step throughput and MFU on the reference config (or a given one).
#include <torch/torch.h>

#include <iostream>

#include "cli/commands.h"
#include "config/run_config.h"
#include "data/dataset.h"
#include "bench/bench.h"
#include "util/fs.h"
#include "util/process.h"

namespace sweep {

CLI::App* setup_bench(CLI::App& app, BenchOptions& o) {
  CLI::App* cmd = app.add_subcommand("bench", "Measure training throughput (tokens/s, FLOP/s, MFU)");
  cmd->add_option("--config", o.config, "Run config to measure instead of the reference config")
      ->check(CLI::ExistingFile);
  cmd->add_option("--steps", o.steps, "Timed steps (the median is reported)")->capture_default_str()->check(
      CLI::PositiveNumber);
  cmd->add_option("--warmup", o.warmup, "Untimed warm-up steps")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--precision", o.precisions, "Precisions to measure")
      ->delimiter(',')
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--threads", o.threads, "Threads (default: the config's, else all cores)");
  cmd->add_option("--path", o.paths, "Which ops to time the step with: the reference LibTorch ops, the fused kernels")
      ->delimiter(',')
      ->check(CLI::IsMember({"reference", "fused"}))
      ->capture_default_str();
  cmd->add_option("--vocab", o.vocab, "Vocabulary size instead of the config's (e.g. 50304, GPT-2's padded)")
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_flag("--no-ops", o.no_ops, "Skip the per-op table (each fused op against its reference)");
  cmd->add_flag("--profile", o.profile, "Print each timed step's top ops by self time");
  cmd->add_option("--data-gib", o.data_gib,
                  "Also time the data loader alone on this many GiB of generated shards, against the training step")
      ->check(CLI::Range(0.001, 1024.0));
  cmd->add_option("--data-dir", o.data_dir, "Where --data-gib writes its shards (removed after; default: the temp dir)");
  return cmd;
}

Exit run_bench(const BenchOptions& o) {
  RunConfig cfg = bench_reference_config();
  if (!o.config.empty()) {
    cfg = load_run_config(o.config);
    const std::string dataset = find_dataset(cfg.data.dataset, o.config);
    if (cfg.model.vocab_size == 0 && fs::exists(fs::path(dataset) / "dataset.yaml")) {
      cfg.model.vocab_size = read_dataset(dataset).vocab_size;
    }
  }
  if (o.vocab > 0) {
    cfg.model.vocab_size = o.vocab;
  }
  at::set_num_threads(o.threads > 0 ? o.threads : cfg.threads());
  keep_freed_memory();
  BenchSettings settings;
  settings.precisions = o.precisions;
  settings.fused.clear();
  for (const auto& path : o.paths) {
    settings.fused.push_back(path == "fused");
  }
  settings.steps = o.steps;
  settings.warmup = o.warmup;
  settings.ops = !o.no_ops;
  settings.profile = o.profile;
  const std::vector<BenchResult> results = sweep::run_bench(cfg, settings, std::cout);
  if (o.data_gib > 0) {
    double fastest = 0;
    for (const auto& r : results) {
      fastest = std::max(fastest, r.tokens_per_s);
    }
    bench_loader(cfg, o.data_gib, o.data_dir.empty() ? fs::temp_directory_path().string() : o.data_dir, fastest,
                 std::cout);
  }
  return Exit::ok;
}

}  // namespace sweep
