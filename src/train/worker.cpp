// The built-in worker: one run of sweep's own trainer, from its config to its end event.
#include "train/worker.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include <torch/torch.h>

#include "parallel/launch.h"
#include "parallel/parallel.h"
#include "protocol/events.h"
#include "train/device.h"
#include "train/event_sink.h"
#include "train/trainer.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/process.h"
#include "util/signals.h"

namespace sweep {

namespace {

// How long a collective waits for a rank before the run fails (SWEEP_DIST_TIMEOUT seconds).
std::chrono::milliseconds dist_timeout() {
  const char* v = std::getenv("SWEEP_DIST_TIMEOUT");
  const long seconds = v != nullptr ? std::strtol(v, nullptr, 10) : 300;
  return std::chrono::milliseconds(1000 * (seconds > 0 ? seconds : 300));
}

// The same command for each rank.
std::vector<std::string> rank_argv(const WorkerOptions& o) {
  std::vector<std::string> argv{executable_path().string(), "worker", o.config};
  for (const auto& s : o.sets) {
    argv.insert(argv.end(), {"--set", s});
  }
  if (!o.run_dir.empty()) {
    argv.insert(argv.end(), {"--run-dir", o.run_dir});
  }
  if (!o.data_dir.empty()) {
    argv.insert(argv.end(), {"--data", o.data_dir});
  }
  if (o.resume) {
    argv.push_back("--resume");
  }
  if (o.events) {
    argv.push_back("--events");
  }
  if (o.pause_at > 0) {
    argv.insert(argv.end(), {"--pause-at-step", std::to_string(o.pause_at)});
  }
  return argv;
}

// Rank 0's claim on the run directory before training (the other ranks only read its checkpoint):
// a run already there is resumed only with --resume and only if it is this run (at any layout of
// the same global batch); the directory's lock, held while it trains (one process at a time);
// what a killed writer left half-done removed; config.yaml written. Throws Error (bad input).
std::unique_ptr<FileLock> claim_run_dir(const WorkerOptions& o, const RunConfig& cfg, const DistEnv& env,
                                        const std::string& run_dir) {
  const fs::path config_file = fs::path(run_dir) / "config.yaml";
  std::unique_ptr<FileLock> run_lock;
  if (env.rank == 0) {  // rank 0 owns the run directory; the others only read its checkpoint
    if (fs::exists(config_file)) {
      if (!o.resume) {
        throw Error("run directory " + run_dir + " already holds a run — pass --resume to continue it, or --run-dir "
                    "for a new one",
                    Exit::bad_input);
      }
      // At other ranks (train.grad_accum keeping the batch of a step) it is the same run, resharded.
      const nlohmann::json written = RunConfig::across_layouts(load_run_config(config_file.string()).identity_json());
      if (written != RunConfig::across_layouts(cfg.identity_json())) {
        if (const auto moved = RunConfig::other_device(written, RunConfig::across_layouts(cfg.identity_json()),
                                                       "the run in " + run_dir)) {
          throw Error(*moved, Exit::bad_input);
        }
        throw Error("run directory " + run_dir + " holds a run with another config — use --run-dir for this one",
                    Exit::bad_input);
      }
    }
    fs::create_directories(fs::path(run_dir) / "checkpoint");
    std::string holder;
    run_lock = FileLock::try_lock(fs::path(run_dir) / ".lock", &holder);
    if (!run_lock) {
      throw Error("run directory " + run_dir + " is being trained by another process" +
                      (holder.empty() ? "" : " (pid " + holder + ")") +
                      " — two processes never train one run: wait for it, or stop it first",
                  Exit::bad_input);
    }
    // What a killed writer left half-done here goes (nothing else writes here while the lock is held).
    remove_stale_temporaries(run_dir);
    remove_stale_temporaries(fs::path(run_dir) / "checkpoint");
    if (!fs::exists(config_file)) {
      write_file_atomic(config_file, cfg.to_yaml());
    }
  }
  return run_lock;
}

}  // namespace

Exit run_worker(RunConfig cfg, const WorkerOptions& o) {
  const DistEnv env = dist_env();
  // ---- validate everything before writing anything ----
  cfg.data.dir = !o.data_dir.empty() ? o.data_dir : find_dataset(cfg.data.dataset, o.config);
  if (cfg.data.dir.empty()) {
    throw Error("no dataset '" + cfg.data.dataset + "' in " + fs::absolute(o.config).parent_path().string() +
                    " or any folder above it — prepare it with `sweep data prepare --out DIR ...`, or name it "
                    "relative to " + o.config + " (or --data DIR)",
                Exit::bad_input);
  }
  // ---- the device: usable here, and a GPU for each rank (checked once, before ranks start) ----
  const Backend backend = cfg.resources.backend;
  check_device(cfg.resources.device, o.config + ": resources.device " + cfg.resources.device);
  if (cfg.resources.ranks > 1 && cfg.resources.device.rfind("cuda", 0) == 0) {
    DistEnv here = env;
    if (env.world == 1) {  // the launcher: the ranks it is about to start
      here.local_world = cfg.resources.ranks;
    }
    const torch::Device gpu = rank_device(here, cuda_device_count(), backend);
    if (env.world > 1) {
      cfg.resources.device = gpu.str();
    }
  }
  make_current(torch::Device(cfg.resources.device));  // before NCCL starts: its contexts on this rank's GPU
  if (cfg.resources.ranks > 1 && env.world == 1) {
    // Not a rank yet: start the ranks here, as torchrun would (bad input was reported once above).
    return static_cast<Exit>(launch_local(rank_argv(o), static_cast<int>(cfg.resources.ranks),
                                          std::chrono::seconds(30)));
  }
  if (env.world != cfg.resources.ranks) {
    throw Error("the " + env.source + " has " + std::to_string(env.world) + " ranks but the config asks for " +
                    "resources.ranks = " + std::to_string(cfg.resources.ranks) + " — set resources.ranks=" +
                    std::to_string(env.world) + " (it scales the global batch)",
                Exit::bad_input);
  }
  auto data = load_train_data(cfg);
  if (cfg.model.vocab_size == 0) {
    cfg.model.vocab_size = data->vocab_size;
  } else if (cfg.model.vocab_size < data->vocab_size) {  // before the run directory exists
    throw Error(o.config + ": 'model.vocab_size' (" + std::to_string(cfg.model.vocab_size) +
                    ") is smaller than the dataset's " + std::to_string(data->vocab_size) +
                    " — remove it to use the dataset's",
                Exit::bad_input);
  }
  const std::string run_dir = !o.run_dir.empty() ? o.run_dir
                                                 : "results/train/" + fs::path(o.config).stem().string() + "-" +
                                                       sha256_hex(cfg.identity_json().dump()).substr(0, 8);
  const std::unique_ptr<FileLock> run_lock = claim_run_dir(o, cfg, env, run_dir);  // held while it trains

  // ---- run ----
  install_stop_handlers();  // before the thread pools start: they inherit the blocked stop signals
  // threads: auto shares this machine's cores among its ranks (two 2-thread ranks on 2 cores ran
  // at 0.38× the speed of accumulation; torchrun gives each rank one thread for the same reason).
  at::set_num_threads(cfg.resources.threads > 0 ? cfg.threads()
                                                : std::max<int>(1, cfg.threads() / static_cast<int>(env.local_world)));
  keep_freed_memory();
  const bool json = o.events || !::isatty(STDOUT_FILENO);
  const bool writer = env.rank == 0;
  EventSink events(writer ? (fs::path(run_dir) / "events.jsonl").string() : "",
                   writer ? (fs::path(run_dir) / "train.log").string() : "", json && writer, !json && writer, writer);
  events.note("run directory " + run_dir);
  RunResult result;
  try {
    std::unique_ptr<Communicator> comm;
    if (env.world > 1) {
      comm = connect(env, cfg.resources.device, backend, dist_timeout());
      events.note(std::to_string(env.world) + " data-parallel ranks (" + env.source + "), rendezvous at " +
                  env.master_addr + ":" + std::to_string(env.port));
    }
    Trainer trainer(cfg, data, comm.get());
    result = trainer.run({run_dir, o.resume, &events, o.pause_at > 0 ? o.pause_at : -1});
  } catch (const std::exception& e) {
    namespace schema = sweep::events;  // `events` here is the sink
    // A file that could not be written (disk full) fails nothing: the run resumes from its checkpoint.
    const auto* error = dynamic_cast<const Error*>(&e);
    const RunState state = error != nullptr && error->code() == Exit::io_error ? RunState::interrupted : RunState::failed;
    try {
      events.emit(schema::end, {{schema::field::status, to_string(state)}, {schema::field::reason, e.what()}});
    } catch (const std::exception&) {  // the disk may be what failed: the first error is the one to tell
    }
    throw;
  }
  switch (result.status) {
    case RunState::done:
      return Exit::ok;
    case RunState::diverged:
      return Exit::diverged;
    case RunState::preempted:
      return Exit::preempted;
    default:
      return Exit::failed;
  }
}

}  // namespace sweep
