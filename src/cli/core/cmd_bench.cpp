// `sweep bench`: training-step throughput and MFU on the reference config (or a given one).
#include <torch/torch.h>

#include <sys/wait.h>

#include <csignal>

#include <algorithm>
#include <iostream>

#include "cli/core/commands.h"
#include "cli/core_handoff.h"
#include "config/run_config.h"
#include "data/dataset.h"
#include "bench/bench.h"
#include "bench/gpu_bench.h"
#include "bench/nanogpt.h"
#include "bench/ranks.h"
#include "build_options.h"
#include "train/device.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep {

CLI::App* setup_bench(CLI::App& app, BenchOptions& o) {
  CLI::App* cmd = app.add_subcommand("bench", core_description("bench"));
  cmd->add_option("--config", o.config, "Run config to measure instead of the reference config")
      ->check(CLI::ExistingFile);
  cmd->add_option("--steps", o.steps, "Timed steps (the median is reported)")->capture_default_str()->check(
      at_least(0, true));
  cmd->add_option("--warmup", o.warmup, "Untimed warm-up steps")->capture_default_str()->check(at_least(0));
  cmd->add_option("--precision", o.precisions, "Precisions to measure (default: fp32,bf16 on cpu; bf16,tf32 on cuda)")
      ->delimiter(',')
      ->check(CLI::IsMember(choice_names<Precision>()))
      ->each([&o](const std::string&) { o.precisions_given = true; });
  cmd->add_option("--device", o.device, "cpu, or a CUDA device (cuda, cuda:N)")->capture_default_str();
  cmd->add_option("--model", o.models,
                  "Models to measure: reference (4 × 4 × 256, block 256), gpt2-small (124M, block 1024); default: "
                  "reference on cpu, both on cuda")
      ->delimiter(',')
      ->check(CLI::IsMember({"reference", "gpt2-small"}));
  cmd->add_option("--nanogpt", o.nanogpt, "nanoGPT's model.py: time its step beside sweep's (torch.compile off and on)");
  cmd->add_option("--python", o.python,
                  "The Python that has torch, for --nanogpt (default: the one this build's LibTorch came from, "
                  SWEEP_BUILD_PYTHON ", else python3)");
  cmd->add_option("--threads", o.threads, "Threads (default: the config's, else all cores)");
  cmd->add_option("--path", o.paths, "Which ops to time the step with: the reference LibTorch ops, the fused kernels")
      ->delimiter(',')
      ->check(CLI::IsMember({"reference", "fused"}))
      ->capture_default_str();
  cmd->add_option("--vocab", o.vocab, "Vocabulary size instead of the config's (e.g. 50304, GPT-2's padded)")
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--nproc", o.nproc,
                  "Ranks (processes, Gloo on loopback): each ZeRO stage's tensor memory per rank and step time (cpu)")
      ->check(at_least(1));
  cmd->add_option("--zero", o.zero, "The ZeRO stages --nproc measures")->delimiter(',')->capture_default_str()->check(
      CLI::Range(0, 3));
  cmd->add_flag("--rank-child", o.rank_child)->group("");  // one rank of --nproc, started by it
  cmd->add_option("--optimizer", o.optimizers, "Optimizers to time each step with (default: the config's)")
      ->delimiter(',')
      ->check(CLI::IsMember(choice_names<Optimizer>()));
  cmd->add_flag("--no-ops", o.no_ops, "Skip the per-op table (each fused op against its reference)");
  cmd->add_flag("--profile", o.profile, "Print each timed step's top ops by self time");
  cmd->add_option("--data-gib", o.data_gib,
                  "Also time the data loader alone on this many GiB of generated shards, against the training step")
      ->check(between(0.001, 1024));
  cmd->add_option("--data-dir", o.data_dir, "Where --data-gib writes its shards (removed after; default: the temp dir)");
  cmd->add_option("--lever", o.levers,
                  "cuda: only these rows, one lever of the step each (a crash in one loses no other when each runs "
                  "in a process of its own): " + join(gpu_bench_levers(), ", "))
      ->delimiter(',')
      ->check(CLI::IsMember(gpu_bench_levers()));
  cmd->add_option("--rows", o.rows, "Also append each timed row to this file as a JSON line, as it is measured");
  return cmd;
}

namespace {

RunConfig bench_model(const std::string& name) { return name == "gpt2-small" ? bench_gpt2_small_config() : bench_reference_config(); }

// `--nproc N`: for each stage, N processes of this executable, each a rank (bench_rank).
Exit bench_ranks(const BenchOptions& o, const RunConfig& cfg) {
  if (o.config.empty()) {
    throw Error("--nproc measures a --config (e.g. experiments/train/gpt-46m.yaml): give one", Exit::bad_input);
  }
  if (cfg.parallel.expert > 1 && cfg.parallel.expert != o.nproc) {
    throw Error(o.config + ": parallel.expert " + std::to_string(cfg.parallel.expert) + " with --nproc " +
                    std::to_string(o.nproc) + ": the experts go over every rank — give --nproc " +
                    std::to_string(cfg.parallel.expert),
                Exit::bad_input);
  }
  if (o.precisions.size() != 1 || o.paths.size() != 1) {
    throw Error("--nproc measures one precision and one path: give --precision and --path once each", Exit::bad_input);
  }
  const int threads = std::max(1, (o.threads > 0 ? o.threads : available_cores()) / o.nproc);
  std::cout << "sweep bench --nproc " << o.nproc << ": " << o.config << ", " << o.precisions[0] << ", "
            << o.paths[0] << ", " << threads << " threads a rank, ranks over Gloo on loopback; tensor memory per "
            << "rank (each rank its own process)" << std::endl;
  for (const int64_t stage : o.zero) {
    const int port = free_port();
    std::vector<Child> children;
    for (int r = 0; r < o.nproc; ++r) {
      SpawnOptions s;
      s.argv = {executable_path().string(), "bench", "--rank-child", "--config", o.config,
                "--precision", o.precisions[0], "--path", o.paths[0], "--steps", std::to_string(o.steps),
                "--warmup", std::to_string(o.warmup), "--threads", std::to_string(threads), "--zero",
                std::to_string(stage)};
      if (o.vocab > 0) {
        s.argv.insert(s.argv.end(), {"--vocab", std::to_string(o.vocab)});
      }
      s.env = {{"RANK", std::to_string(r)}, {"WORLD_SIZE", std::to_string(o.nproc)},
               {"LOCAL_WORLD_SIZE", std::to_string(o.nproc)}, {"MASTER_ADDR", "127.0.0.1"},
               {"MASTER_PORT", std::to_string(port)}};
      s.own_process_group = false;
      s.pipe_stdout = false;
      children.push_back(spawn(s));
    }
    // The first rank to fail ends the others: they would wait for it until the collective timeout.
    int failed = 0;
    for (size_t left = children.size(); left > 0; --left) {
      int status = 0;
      const pid_t pid = waitpid(-1, &status, 0);
      if (pid > 0 && exit_code_of(status) != 0 && failed++ == 0) {
        for (const Child& child : children) {
          if (child.pid != pid) {
            kill(child.pid, SIGTERM);
          }
        }
      }
    }
    if (failed > 0) {
      throw Error("sweep bench --nproc: a rank of ZeRO-" + std::to_string(stage) +
                  " failed (its error above), and the others were stopped");
    }
  }
  return Exit::ok;
}

}  // namespace

Exit run_bench(const BenchOptions& o) {
  const bool cuda = o.device.rfind("cuda", 0) == 0;
  if (!cuda && o.device != "cpu") {
    throw Error("--device " + o.device + ": expected cpu, cuda or cuda:N", Exit::bad_input);
  }
  if (!o.config.empty() && !o.models.empty()) {
    throw Error("--config and --model both name what to measure: give one", Exit::bad_input);
  }
  if (!cuda && !o.levers.empty()) {
    throw Error("--lever chooses the rows of the CUDA step: on cpu, --path reference,fused chooses the ops",
                Exit::bad_input);
  }
  if (!cuda && std::find(o.precisions.begin(), o.precisions.end(), "tf32") != o.precisions.end()) {
    throw Error("--precision tf32 is a CUDA precision: use fp32 or bf16 on cpu (or --device cuda)", Exit::bad_input);
  }
  const std::string python = !o.python.empty()                ? o.python
                             : std::string(SWEEP_BUILD_PYTHON).empty() ? "python3"
                                                                       : SWEEP_BUILD_PYTHON;
  if (!o.nanogpt.empty()) {
    check_nanogpt(o.nanogpt, python);
  }
  RunConfig cfg = bench_model(o.models.empty() ? "reference" : o.models.front());
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
  if (!o.optimizers.empty() && (cuda || o.nproc > 1)) {
    throw Error("--optimizer times the step of one process on the cpu: leave out --device cuda and --nproc", Exit::bad_input);
  }
  if (cuda && o.nproc > 1) {
    throw Error("--nproc measures ranks on the cpu (Gloo on loopback); on GPUs run `sweep train --nproc N` and read "
                "its events",
                Exit::bad_input);
  }
  if (cuda) {
    check_device(o.device, "--device " + o.device);
    GpuBenchSettings gpu;
    gpu.device = o.device.find(':') == std::string::npos ? "cuda:0" : o.device;
    if (o.precisions_given) {
      gpu.precisions = choices_of<Precision>(o.precisions);
    }
    gpu.steps = o.steps;
    gpu.warmup = o.warmup;
    gpu.nanogpt = o.nanogpt;
    gpu.python = python;
    gpu.levers = o.levers;
    gpu.rows = o.rows;
    std::vector<std::pair<std::string, RunConfig>> models;
    if (!o.config.empty()) {
      models.emplace_back(o.config, cfg);
    } else {
      for (const std::string& name : o.models.empty() ? std::vector<std::string>{"reference", "gpt2-small"} : o.models) {
        RunConfig m = bench_model(name);
        if (o.vocab > 0) {
          m.model.vocab_size = o.vocab;
        }
        models.emplace_back(name, m);
      }
    }
    run_gpu_bench(models, gpu, std::cout);
    return Exit::ok;
  }
  if (o.models.size() > 1) {
    throw Error("--model: one model at a time on cpu", Exit::bad_input);
  }
  if (o.rank_child) {
    cfg.parallel.zero = o.zero.front();
    cfg.train.precision = choice_of<Precision>(o.precisions.front());
    cfg.train.fused = o.paths.front() == "fused";
    bench_rank(cfg, o.steps, o.warmup, std::cout);
    return Exit::ok;
  }
  if (o.nproc > 1) {
    return bench_ranks(o, cfg);
  }
  keep_freed_memory();
  BenchSettings settings;
  settings.precisions = choices_of<Precision>(o.precisions);
  settings.fused.clear();
  for (const auto& path : o.paths) {
    settings.fused.push_back(path == "fused");
  }
  settings.steps = o.steps;
  settings.warmup = o.warmup;
  settings.ops = !o.no_ops;
  settings.profile = o.profile;
  settings.nanogpt = o.nanogpt;
  settings.python = python;
  settings.optimizers = choices_of<Optimizer>(o.optimizers);
  settings.model = o.config.empty() ? (o.models.empty() ? "reference" : o.models.front()) : o.config;
  settings.rows = o.rows;
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
