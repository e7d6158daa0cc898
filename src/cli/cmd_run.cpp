// `sweep run FILE`: every check before anything is written, the references scored, then the runner.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "cli/memory_check.h"
#include "cli/sweep_commands.h"
#include "report/load.h"
#include "sched/local.h"
#include "sched/runner.h"
#include "sched/seed_design.h"
#include "sched/slots.h"
#include "sched/slurm.h"
#include "train/device.h"
#include "train/score_model.h"
#include "util/hash.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep::commands {

namespace {

SlurmOptions slurm_options(const SweepOptions& o) {
  SlurmOptions so;
  so.partition = o.partition;
  so.time = o.time;
  so.gpus_per_rank = o.gpus_per_rank;
  so.max_parallel = o.max_parallel;
  so.max_preemptions = o.max_preemptions;
  so.stall_timeout = o.stall_timeout;
  return so;
}

// The folders a Slurm task is given: the results folder and each run's dataset.
std::vector<std::string> slurm_folders(const SweepOptions& o, const SweepSpec& spec) {
  std::vector<std::string> folders{fs::absolute(o.results).string()};
  for (const auto& run : spec.runs) {
    folders.push_back(run.config.data.dir);
  }
  return folders;
}

// The sweep's reference models that need a score, each scored on the baseline's test split the way
// runs are (`sweep eval`), before anything is written: a state dict that does not fit fails the
// command before hours of training, with nothing written. A score is kept while the file's content
// and the dataset stay the same. Returns the new scores, for the caller to record.
std::vector<ReferenceScore> score_references(const SweepSpec& spec, const std::string& db) {
  std::vector<ReferenceScore> fresh;
  if (spec.references.empty()) {
    return fresh;
  }
  const RunConfig& base = spec.runs.front().config;  // the baseline's
  const std::string data = fs::absolute(base.data.location()).lexically_normal().string();
  const std::vector<ReferenceScore> scored =
      fs::exists(db) ? Store(db, Store::Access::read).references(spec.name) : std::vector<ReferenceScore>{};
  for (const auto& ref : spec.references) {
    std::string sha;
    try {
      sha = file_sha256(ref.model);
    } catch (const Error& e) {  // named where the sweep file names the reference
      throw Error(spec.file + ": references." + ref.name + ": " + e.what(), Exit::bad_input);
    }
    const auto was = std::find_if(scored.begin(), scored.end(), [&](const ReferenceScore& s) { return s.name == ref.name; });
    if (was != scored.end() && was->model_sha256 == sha && was->dataset == data) {
      continue;
    }
    std::printf("scoring reference '%s' (%s) on the test split of %s\n", ref.name.c_str(), ref.model.c_str(), data.c_str());
    std::fflush(stdout);
    ScoreOptions so;
    so.model = ref.model;
    so.data = data;
    so.config = ref.config;
    so.n_head = ref.n_head;
    so.ignore_extra = ref.ignore_extra;
    so.batch = base.train.micro_batch;
    Score s;
    try {
      s = score_model(so);
    } catch (const Error& e) {  // named where the sweep file names the reference
      throw Error(spec.file + ": references." + ref.name + ": " + e.what() +
                      (ref.config.empty() ? " (in a sweep file: n_head: or config: beside model:)" : ""),
                  e.code());
    }
    fresh.push_back({ref.name, ref.model, sha, data, s.loss, s.bpb >= 0 ? std::optional<double>(s.bpb) : std::nullopt,
                     s.tokens, s.parameters, s.model.block_size});
    std::printf("  %s: test loss %.4f%s over %lld tokens\n", ref.name.c_str(), s.loss,
                s.bpb >= 0 ? format_number(", %.4f bits/byte", s.bpb).c_str() : "", static_cast<long long>(s.tokens));
  }
  return fresh;
}

}  // namespace

Exit run_run(const SweepOptions& o, SweepSpec spec) {
  const bool slurm = o.executor == "slurm";
  if (o.stall_timeout > 999999 || (o.stall_timeout > 0 && o.stall_timeout < 1)) {  // resources.stall_timeout's rules
    throw Error("--stall-timeout " + format_number("%g", o.stall_timeout) +
                    ": from 1 to 999999 seconds (0 turns the watchdog off)",
                Exit::bad_input);
  }
  check_until_decided(spec, o.until_decided, o.max_seeds);
  refuse_over_memory(spec, db_path(o.results));  // before anything is written
  if (!slurm) {
    check_fits(spec, o.devices);  // before anything is written
    for (const Slot& slot : parse_devices(o.devices, 1)) {
      check_device(slot.label, "--devices " + o.devices);  // a GPU this machine has, with a CUDA build
    }
  } else if (const std::string bad = slurm_options_problem(slurm_options(o), slurm_folders(o, spec)); !bad.empty()) {
    throw Error(bad, Exit::bad_input);
  } else if (!find_program("sbatch")) {
    throw Error("--executor slurm: sbatch not found — run on a Slurm login node (Debian: slurm-client)",
                Exit::bad_input);
  }
  const std::vector<ReferenceScore> references = score_references(spec, db_path(o.results));
  fs::create_directories(fs::path(o.results) / "sweeps");
  // The folder's lock before anything is written in it: a second `sweep run` changes nothing.
  auto lock = std::make_unique<ResultsLock>(o.results);
  Store store(db_path(o.results));
  const std::optional<SweepInfo> recorded = store.sweep_info(spec.name);
  spec.design = seed_design(spec, o.until_decided, o.max_seeds, recorded);
  if (recorded && recorded->design.sequential() && !o.until_decided) {
    std::printf("sweep %s was run --until-decided (--max-seeds %lld): it goes on so\n", spec.name.c_str(),
                static_cast<long long>(spec.design.max_seeds));
  }
  if (spec.design.sequential()) {
    // The seeds earlier rounds added stay in the sweep from the start (its report, recovery).
    std::map<std::string, int64_t> seeds_recorded;
    for (const auto& row : store.sweep_runs(spec.name)) {
      seeds_recorded[row.variant]++;
    }
    const SweepSpec declared = spec;
    for (const auto& v : declared.variants) {
      for (auto& run : added_seed_runs(declared, v.name, seeds_recorded[v.name])) {
        spec.runs.push_back(std::move(run));
      }
    }
  }
  for (const auto& r : references) {
    store.record_reference(spec.name, r);
  }
  write_file_atomic(fs::path(o.results) / "sweeps" / (spec.name + ".yaml"), spec.text);
  if (const auto device = slot_device(o)) {
    write_file_atomic(saved_device_file(o.results, spec.name), *device + "\n");
  } else {
    fs::remove(saved_device_file(o.results, spec.name));
  }
  save_rounds(o.results, spec);
  if (spec.trainer) {  // the saved copy's trainer paths are relative to the original's folder: `sweep ingest` needs it
    write_file_atomic(fs::path(o.results) / "sweeps" / (spec.name + ".trainer-dir"), spec.trainer->trainer.dir + "\n");
  }
  const std::string worker = executable_path().string();
  std::unique_ptr<Executor> executor;
  if (slurm) {
    SlurmOptions so = slurm_options(o);
    so.worker_binary = worker;
    executor = std::make_unique<SlurmExecutor>(so, fs::absolute(fs::path(o.results) / spec.name / "slurm").string(),
                                               "sweep-" + spec.name);
  } else {
    executor = std::make_unique<LocalExecutor>(o.devices, worker, o.stall_timeout);
  }
  RunnerOptions ro;
  ro.retries = o.retries;
  ro.max_preemptions = o.max_preemptions;
  ro.retry_failed = o.retry_failed;
  ro.stall_timeout = o.stall_timeout;
  if (spec.design.sequential()) {
    ro.next_round = [&store, &o](const SweepSpec& current, std::string& why) {
      std::vector<PlannedRun> added = next_seed_round(store, current, why);
      save_rounds(o.results, current, added);
      return added;
    };
  }
  return SweepRunner(spec, store, std::move(lock), std::move(executor), ro).run();
}

}  // namespace sweep::commands
