// `sweep run FILE`: every check before anything is written, the references scored, then the runner.
#include <algorithm>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/core_handoff.h"
#include "memory_plan/admission.h"
#include "cli/sweep_commands.h"
#include "report/load.h"
#include "sched/local.h"
#include "sched/runner.h"
#include "store/results_folder.h"
#include "sched/slurm.h"
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

// A reference model scored by the training core (`sweep eval --json`, a process of its own: the
// front links no LibTorch) on the test split of `data`, as runs are.
ReferenceScore score_with_core(const ReferenceModel& ref, const std::string& data, int64_t batch) {
  if (const std::string why = core_missing("scoring a reference model"); !why.empty()) {
    throw Error(why, Exit::bad_input);
  }
  // (eval's largest batch: a micro-batch beyond it scores the same windows, fewer at a time)
  std::vector<std::string> argv{core_path().string(), "eval", ref.model, "--data", data, "--batch",
                                std::to_string(std::min<int64_t>(batch, 4096)), "--json"};
  if (!ref.config.empty()) {
    argv.insert(argv.end(), {"--config", ref.config});
  }
  if (ref.n_head > 0) {
    argv.insert(argv.end(), {"--n-head", std::to_string(ref.n_head)});
  }
  if (ref.ignore_extra) {
    argv.push_back("--ignore-extra");
  }
  const Captured out = run_capture(argv);
  std::string json, said;  // its score (the last JSON line); what else it said (its errors)
  for (const std::string& line : split(out.output, '\n')) {
    if (line.rfind('{', 0) == 0) {
      json = line;
    } else if (!trim(line).empty() && line.find("nothing was written") == std::string::npos) {
      said += (said.empty() ? "" : "; ") + (line.rfind("sweep: ", 0) == 0 ? line.substr(7) : line);
    }
  }
  if (out.code != 0 || json.empty()) {
    throw Error(said.empty() ? "sweep eval exited with " + std::to_string(out.code) : said,
                out.code == static_cast<int>(Exit::bad_input) ? Exit::bad_input : Exit::failed);
  }
  ReferenceScore score;
  try {
    const nlohmann::json j = nlohmann::json::parse(json);
    score.loss = j.at("loss").get<double>();
    if (!j.at("bpb").is_null()) {
      score.bpb = j.at("bpb").get<double>();
    }
    score.tokens = j.at("tokens").get<int64_t>();
    score.parameters = j.at("parameters").get<int64_t>();
    score.block_size = j.at("block_size").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error("sweep eval printed no score it could be read from (" + first_line(e.what()) + "): " + json.substr(0, 200));
  }
  return score;
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
    ReferenceScore score;
    try {
      score = score_with_core(ref, data, base.train.micro_batch);
    } catch (const Error& e) {  // named where the sweep file names the reference
      throw Error(spec.file + ": references." + ref.name + ": " + e.what() +
                      (ref.config.empty() ? " (in a sweep file: n_head: or config: beside model:)" : ""),
                  e.code());
    }
    score.name = ref.name;
    score.model = ref.model;
    score.model_sha256 = sha;
    score.dataset = data;
    fresh.push_back(score);
    const ReferenceScore& s = fresh.back();
    std::printf("  %s: test loss %.4f%s over %lld tokens\n", ref.name.c_str(), s.loss,
                s.bpb ? format_number(", %.4f bits/byte", *s.bpb).c_str() : "", static_cast<long long>(s.tokens));
  }
  return fresh;
}

}  // namespace

Exit run_run(const SweepOptions& o, SweepPlan plan) {
  SweepSpec& spec = plan.spec;  // final: its runs and ids are the planning step's (sched/planning.h)
  const Placement& placement = plan.placement;
  const bool slurm = o.executor == "slurm";
  if (o.stall_timeout > 999999 || (o.stall_timeout > 0 && o.stall_timeout < 1)) {  // resources.stall_timeout's rules
    throw Error("--stall-timeout " + format_number("%g", o.stall_timeout) +
                    ": from 1 to 999999 seconds (0 turns the watchdog off)",
                Exit::bad_input);
  }
  refuse_over_memory(spec, finished_runs(spec, database_path(o.results)));  // before anything is written
  SlurmOptions so = slurm_options(o);
  so.gpus_per_rank = placement.gpus_per_rank;
  if (!slurm) {
    check_fits(spec, placement.devices);  // before anything is written
  } else if (const std::string bad = slurm_options_problem(so, slurm_folders(o, spec)); !bad.empty()) {
    throw Error(bad, Exit::bad_input);
  } else if (!find_program("sbatch")) {
    throw Error("--executor slurm: sbatch not found — run on a Slurm login node (Debian: slurm-client)",
                Exit::bad_input);
  }
  if (!placement.note.empty()) {
    std::printf("%s\n", placement.note.c_str());
  }
  const std::vector<ReferenceScore> references = score_references(spec, database_path(o.results));
  fs::create_directories(sweeps_folder(o.results));
  // The folder's lock before anything is written in it: a second `sweep run` changes nothing.
  auto lock = std::make_unique<ResultsLock>(o.results);
  Store store(database_path(o.results));
  if (spec.design.sequential() && !o.until_decided) {
    std::printf("sweep %s was run --until-decided (--max-seeds %lld): it goes on so\n", spec.name.c_str(),
                static_cast<long long>(spec.design.max_seeds));
  }
  for (const auto& r : references) {
    store.record_reference(spec.name, r);
  }
  write_file_atomic(saved_file(o.results, spec.name, ".yaml"), spec.text);
  save_device(o.results, spec.name, placement.kind);
  save_rounds(o.results, spec);
  save_trainer(o.results, spec);  // the ids its runs train under: `sweep ingest` plans the saved copy with them
  save_file_name(o.results, spec);
  const std::string worker = executable_path().string();
  std::unique_ptr<Executor> executor;
  if (slurm) {
    so.worker_binary = worker;
    executor = std::make_unique<SlurmExecutor>(so, fs::absolute(fs::path(o.results) / spec.name / "slurm").string(),
                                               "sweep-" + spec.name);
  } else {
    executor = std::make_unique<LocalExecutor>(placement.devices, worker, o.stall_timeout);
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
