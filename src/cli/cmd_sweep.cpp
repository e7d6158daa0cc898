// The sweep engine's commands: their options, the dispatch, and the helpers they share
// (sweep_commands.h); each command's work is in its own file.
#include <memory>
#include <set>

#include "build_options.h"
#include "cli/core_handoff.h"
#include "cli/sweep_commands.h"
#include "config/sweep_spec.h"
#include "data/dataset.h"
#include "sched/slots.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace commands {

int64_t usable_dataset_vocab(const std::string& /*dataset*/, const std::string& dir) {
  if (dir.empty()) {
    throw Error("not found in the sweep file's folder or any folder above it — prepare it with `sweep data "
                "prepare --out DIR ...`, or name it relative to the sweep file",
                Exit::bad_input);
  }
  const DatasetInfo info = read_dataset(dir);
  check_shards(info);
  return info.vocab_size;
}

}  // namespace commands

using namespace commands;

namespace {

// A sweep as it will run (sched/planning.h): every dataset checked, vocabulary sizes from their
// dataset.yaml, every run on the kind of device it will train on, with the seeds the folder's
// rounds added. With `missing` (sweep plan), a dataset not prepared yet is no error: it is listed
// there, and its runs get a stand-in vocabulary (their sizes relative to each other, a ladder's
// order, still hold; their ids and memory do not).
SweepPlan plan_from_file(const SweepOptions& o, const CLI::App* which, std::set<std::string>* missing = nullptr) {
  PlanRequest request;
  request.file = o.file;
  request.vocab = [missing](const std::string& dataset, const std::string& dir) -> int64_t {
    if (missing != nullptr && dir.empty()) {
      missing->insert(dataset);
      return 64;
    }
    return usable_dataset_vocab(dataset, dir);
  };
  request.max_variants = static_cast<size_t>(o.max_variants);
  request.devices.devices = o.devices;
  request.devices.slurm = which == o.run && choice_of<ExecutorKind>(o.executor) == ExecutorKind::slurm;
  request.devices.gpus_per_rank = o.gpus_per_rank;
  request.devices.check_here = which != o.plan;
  // sweep's own trainer: the GPUs its core sees (LibTorch's count: MIG, WSL); a trainer of your own:
  // the driver's, without loading CUDA (the front needs none)
  request.devices.count_gpus = [](const SweepSpec& spec) {
    return !spec.trainer && core_missing("").empty() ? core_gpu_count() : visible_gpu_count(driver_gpu_count());
  };
  if (which != o.check) {  // (an A/A check is a sweep of its own)
    request.devices.trained_on = [&o](const std::string& sweep) { return read_saved_device(o.results, sweep); };
  }
  // what the folder records (a read: nothing is written yet); an A/A check has a design of its own
  std::unique_ptr<Store> recorded;
  if (which != o.check && fs::exists(database_path(o.results)) && !empty_database(database_path(o.results))) {
    recorded = std::make_unique<Store>(database_path(o.results), Store::Access::read);
  }
  request.store = recorded.get();
  request.until_decided = which == o.run && o.until_decided;
  request.max_seeds = which == o.run ? o.max_seeds : 0;
  SweepPlan plan = plan_sweep(request);
  const SweepSpec& spec = plan.spec;
  if (which == o.plan) {
    return plan;
  }
  if (!spec.trainer) {  // sweep's own trainer: the core's
    if (const std::string why = core_missing("sweep " + std::string(which == o.run ? "run " : "check ") + o.file +
                                             k_own_trainer_note);
        !why.empty()) {
      throw Error(why, Exit::bad_input);
    }
#ifndef SWEEP_WITH_CUDA
    if (plan.placement.kind == "cuda") {
      throw Error(spec.file + ": its runs train on cuda, and this build's training core has no CUDA — rebuild it "
                              "against a CUDA PyTorch (scripts/setup.sh, or --torch cuda), or train on cpu",
                  Exit::bad_input);
    }
#endif
  }
  return plan;
}

}  // namespace

CLI::App* setup_sweep_commands(CLI::App& app, SweepOptions& o) {
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
  run->add_option("--executor", o.executor, "local (device slots here) or slurm (sbatch array tasks)")
      ->check(CLI::IsMember(choice_names<ExecutorKind>()))
      ->capture_default_str();
  run->add_option("--partition", o.partition, "Slurm: the partition of the tasks");
  run->add_option("--time", o.time, "Slurm: each task's time limit (sbatch --time)");
  run->add_option("--gpus-per-rank", o.gpus_per_rank, "Slurm: GPUs per rank (runs then use CUDA)")
      ->check(CLI::Range(0, 64));
  run->add_option("--max-parallel", o.max_parallel, "Slurm: at most this many tasks at once (0: no limit)")
      ->check(CLI::Range(0, 100000));
  o.run = run;

  CLI::App* plan = app.add_subcommand("plan", "Show a sweep's runs and their state without running anything");
  plan->add_option("file", o.file, "Sweep file (YAML)")->required()->check(CLI::ExistingFile);
  plan->add_option("--devices", o.devices, "As for run: the kind of device is part of each run's id");
  plan->add_option("--results", o.results, "Output root")->capture_default_str();
  plan->add_option("--max-variants", o.max_variants, "As for run")->check(CLI::Range(1, 100000000))->capture_default_str();
  plan->add_flag("--memory", o.memory, "Also list what the activations of the run needing the most memory are made of");
  o.plan = plan;

  CLI::App* status = app.add_subcommand("status", "Runs of a sweep and their state (default: the latest sweep)");
  status->add_option("sweep", o.sweep, "Sweep name");
  status->add_option("--results", o.results, "Output root")->capture_default_str();
  o.status = status;

  CLI::App* ls = app.add_subcommand("ls", "Sweeps in the database with their runs per state");
  ls->add_option("--results", o.results, "Output root")->capture_default_str();
  o.ls = ls;

  CLI::App* ingest = app.add_subcommand("ingest", "Rebuild the database from run directories");
  ingest->add_option("dir", o.dir, "A run directory, or a results folder")->required()->check(CLI::ExistingDirectory);
  ingest->add_option("--results", o.ingest_results, "Output root whose sweep.db is updated (default: DIR for a "
                                                    "results folder, else results)");
  o.ingest = ingest;

  CLI::App* check = app.add_subcommand(
      "check", "An A/A check of a sweep's trainer: its baseline twice with each of a few seeds — is it deterministic "
               "given its seeds, and how does its run-to-run noise compare with its seed noise?");
  check->add_option("file", o.file, "Sweep file (YAML): its baseline is trained")->required()->check(CLI::ExistingFile);
  check->add_option("--results", o.results, "Output root")->capture_default_str();
  check->add_option("--devices", o.devices, "As for run");
  check->add_option("--seeds", o.check_seeds, "Seeds, each trained twice")->check(CLI::Range(2, 100))->capture_default_str();
  check->add_option("--stall-timeout", o.stall_timeout, "As for run")->check(at_least(0));
  o.check = check;
  return run;
}

Exit run_sweep_command(const SweepOptions& o, const CLI::App* which) {
  if (which == o.run || which == o.plan || which == o.check) {
    // the whole sweep is validated before anything; a plan needs the model's shapes, not the data
    std::set<std::string> missing;
    SweepPlan plan = plan_from_file(o, which, which == o.plan ? &missing : nullptr);
    return which == o.plan    ? run_plan(o, plan, missing)
           : which == o.check ? run_check(o, plan)
                              : run_run(o, std::move(plan));
  }
  if (which == o.ingest) {
    return run_ingest(o);
  }
  std::unique_ptr<Store> store;
  if (which == o.ls) {
    store = open_results(o.results);
    return run_ls(*store);
  }
  const std::string sweep = sweep_to_read(o.results, o.sweep, store);
  return run_status(*store, sweep);
}

}  // namespace sweep
