// What the sweep engine's commands share (sweep_commands.h): a sweep file planned for one of them.
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

namespace sweep::commands {

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

SweepPlan plan_from_file(const SweepFileOptions& o, PlanFor purpose, const RunOptions* run, std::set<std::string>* missing) {
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
  request.devices.slurm = run != nullptr && choice_of<ExecutorKind>(run->executor) == ExecutorKind::slurm;
  request.devices.gpus_per_rank = run != nullptr ? run->gpus_per_rank : 0;
  request.devices.check_here = purpose != PlanFor::plan;
  // sweep's own trainer: the GPUs its core sees (LibTorch's count: MIG, WSL); a trainer of your own:
  // the driver's, without loading CUDA (the front needs none)
  request.devices.count_gpus = [](const SweepSpec& spec) {
    return !spec.trainer && core_missing("").empty() ? core_gpu_count() : visible_gpu_count(driver_gpu_count());
  };
  if (purpose != PlanFor::check) {  // (an A/A check is a sweep of its own)
    request.devices.trained_on = [&o](const std::string& sweep) { return read_saved_device(o.results, sweep); };
    request.results = o.results;
  }
  // what the folder records (a read: nothing is written yet); an A/A check has a design of its own
  std::unique_ptr<Store> recorded;
  if (purpose != PlanFor::check && fs::exists(database_path(o.results)) && !empty_database(database_path(o.results))) {
    recorded = std::make_unique<Store>(database_path(o.results), Store::Access::read);
  }
  request.store = recorded.get();
  request.until_decided = run != nullptr && run->until_decided;
  request.max_seeds = run != nullptr ? run->max_seeds : 0;
  SweepPlan plan = plan_sweep(request);
  const SweepSpec& spec = plan.spec;
  if (purpose == PlanFor::plan) {
    return plan;
  }
  if (!spec.trainer) {  // sweep's own trainer: the core's
    if (const std::string why = core_missing("sweep " + std::string(purpose == PlanFor::run ? "run " : "check ") + o.file +
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

}  // namespace sweep::commands
