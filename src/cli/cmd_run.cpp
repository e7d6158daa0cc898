// `sweep run FILE`: every check before anything is written, the references scored, then the runner.
#include <algorithm>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/core_handoff.h"
#include "cli/run_eliminate.h"
#include "memory_plan/admission.h"
#include "cli/sweep_commands.h"
#include "report/load.h"
#include "sched/local.h"
#include "sched/references.h"
#include "sched/runner.h"
#include "store/results_folder.h"
#include "sched/slurm.h"
#include "util/hash.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep::commands {

namespace {

SlurmOptions slurm_options(const RunOptions& o) {
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
std::vector<std::string> slurm_folders(const RunOptions& o, const SweepSpec& spec) {
  std::vector<std::string> folders{fs::absolute(o.results).string()};
  for (const auto& run : spec.runs) {
    folders.push_back(run.config.data.dir);
  }
  return folders;
}

}  // namespace

Exit train_planned(const RunOptions& o, SweepPlan plan) {
  SweepSpec& spec = plan.spec;  // final: its runs and ids are the planning step's (sched/planning.h)
  const Placement& placement = plan.placement;
  const bool slurm = choice_of<ExecutorKind>(o.executor) == ExecutorKind::slurm;
  if (o.stall_timeout > 999999 || (o.stall_timeout > 0 && o.stall_timeout < 1)) {  // resources.stall_timeout's rules
    throw Error("--stall-timeout " + format_number("%g", o.stall_timeout) +
                    ": from 1 to 999999 seconds (0 turns the watchdog off)",
                Exit::bad_input);
  }
  const std::string other_file = name_taken(o.results, spec);  // a second file under the name: refused, or --replace
  if (!other_file.empty() && !o.replace) {
    throw Error("sweep " + spec.name + " in " + o.results + " is " + other_file + "'s, and " + spec.file +
                    " names its sweep " + spec.name + " too — it would take the name over (ls, report and reports/" +
                    spec.name + " would show only its variants; the other's runs left behind): give " + spec.file +
                    " another `sweep:` name, or pass --replace to make " + spec.name + " its sweep",
                Exit::bad_input);
  }
  refuse_over_memory(spec, finished_runs(spec, database_path(o.results)));  // before anything is written
  prepare_elimination(o, spec);  // its record and options checked, before anything is written
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
  if (!other_file.empty()) {
    std::printf("--replace: sweep %s was %s's; it is %s's from now on (the runs of %s stay in %s: run it under "
                "another name to see them again)\n",
                spec.name.c_str(), other_file.c_str(), spec.file.c_str(), other_file.c_str(), o.results.c_str());
  }
  const std::vector<ReferenceScore> references = score_references(spec, database_path(o.results), [] {
    if (const std::string why = core_missing("scoring a reference model"); !why.empty()) {
      throw Error(why, Exit::bad_input);
    }
    return core_path().string();
  });
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
  ro.looks = elimination_looks(o, spec, store);
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

namespace sweep {

CLI::App* setup_run(CLI::App& app, RunOptions& o) {
  CLI::App* run = app.add_subcommand("run", "Run a sweep: every variant × seed not already finished");
  run->add_option("file", o.file, "Sweep file (YAML)")->required()->check(CLI::ExistingFile);
  run->add_option("--results", o.results, "Output root: sweep.db and run directories")->capture_default_str();
  run->add_option("--devices", o.devices,
                  "Slots: cpu | cpu:NxT | cuda:0,1,... (default: the file's resources.device — cuda: every GPU here "
                  "— else cpu; slots of another kind than the file's are refused)");
  run->add_option("--retries", o.retries, "Retries of a crashed run (from its checkpoint)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  run->add_option("--max-preemptions", o.max_preemptions,
                  "Requeues of a run stopped by SIGTERM before it is marked failed (from its checkpoint)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  run->add_option("--max-variants", o.max_variants,
                  "Refuse a sweep that expands to more variants (interventions × grid/zip points)")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  run->add_flag("--retry-failed", o.retry_failed, "Run again the runs that ended failed or out of memory");
  run->add_option("--stall-timeout", o.stall_timeout,
                  "Seconds without an event after which a worker is killed as stuck and retried from its checkpoint "
                  "(0 = never; default: each run's resources.stall_timeout, 600)")
      ->check(at_least(0));
  run->add_flag("--until-decided", o.until_decided,
                "After the declared seeds, add seeds to the interventions still undecided (and the baseline) until "
                "each is better, worse or equivalent within the file's min_effect, or --max-seeds is reached");
  run->add_option("--max-seeds", o.max_seeds, "--until-decided: the most seeds per variant (default: 4 × the declared)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  CLI::Option* eliminate = run->add_flag("--eliminate", o.eliminate,
                "Stop an arm before the end of training once its paired validation curve shows it worse than the "
                "file's min_effect (δ) at a look, with the false-elimination probability held at 0.05; its runs "
                "keep their checkpoints (`sweep run` without it finishes them)");
  const auto [looks, kept] = commands::add_elimination_options(run, o.elimination);
  looks->needs(eliminate);
  kept->needs(eliminate);
  run->add_flag("--replace", o.replace,
                "Run the file under its sweep name where the results folder records that name as another file's "
                "sweep (whose runs stay in the folder)");
  run->add_option("--executor", o.executor, "local (device slots here) or slurm (sbatch array tasks)")
      ->check(CLI::IsMember(choice_names<ExecutorKind>()))
      ->capture_default_str();
  run->add_option("--partition", o.partition, "Slurm: the partition of the tasks");
  run->add_option("--time", o.time, "Slurm: each task's time limit (sbatch --time)");
  run->add_option("--gpus-per-rank", o.gpus_per_rank, "Slurm: GPUs per rank (runs then use CUDA)")
      ->check(CLI::Range(0, 64));
  run->add_option("--max-parallel", o.max_parallel, "Slurm: at most this many tasks at once (0: no limit)")
      ->check(CLI::Range(0, 100000));
  return run;
}

Exit run_run(const RunOptions& o) {
  // the whole sweep is validated before anything
  return commands::train_planned(o, commands::plan_from_file(o, commands::PlanFor::run, &o));
}

}  // namespace sweep
