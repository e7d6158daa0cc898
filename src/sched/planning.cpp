#include "sched/planning.h"

#include <algorithm>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "sched/seed_design.h"
#include "sched/slots.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace {

// "exp.yaml:4: resources.device: cuda"
std::string stated(const SweepSpec& spec) {
  const Origin& o = spec.device_origin;
  return o.file + ":" + std::to_string(o.line) + ": resources.device: " + *spec.device;
}

// "cuda:0,1,2" for n GPUs
std::string every_gpu(int n) {
  std::string slots = "cuda:";
  for (int i = 0; i < n; ++i) {
    slots += (i > 0 ? "," : "") + std::to_string(i);
  }
  return slots;
}

Placement place_here(const SweepSpec& spec, const DeviceRequest& request) {
  Placement p;
  if (!request.recorded.empty()) {  // what its runs trained on (ingest)
    p.kind = request.recorded;
    return p;
  }
  const std::optional<std::string> file_kind = spec.device ? std::optional(device_kind(*spec.device)) : std::nullopt;
  if (request.slurm) {
    if (!request.devices.empty()) {
      throw Error("--devices " + request.devices + " gives slots to the local executor; Slurm's tasks get GPUs by "
                  "--gpus-per-rank (and the file's resources.device) — drop --devices",
                  Exit::bad_input);
    }
    p.gpus_per_rank = request.gpus_per_rank;
    if (file_kind == "cuda" && p.gpus_per_rank == 0) {
      p.gpus_per_rank = 1;
      p.note = stated(spec) + ": one GPU per rank (--gpus-per-rank 1)";
    } else if (file_kind == "cpu" && p.gpus_per_rank > 0) {
      throw Error(stated(spec) + ", but --gpus-per-rank " + std::to_string(p.gpus_per_rank) +
                      " gives each rank GPUs — a file's device is never replaced: drop --gpus-per-rank to train on "
                      "CPUs, or say resources.device: cuda in the file",
                  Exit::bad_input);
    }
    p.kind = p.gpus_per_rank > 0 ? "cuda" : "cpu";
    return p;
  }
  std::optional<int> counted;
  const auto visible = [&] {
    if (!counted) {
      counted = request.count_gpus ? request.count_gpus(spec) : visible_gpu_count(driver_gpu_count());
    }
    return *counted;
  };
  if (!request.devices.empty()) {
    if (request.devices != "cuda") {  // the slots' syntax, as the executor reads them, for plan and run alike
      parse_devices(request.devices, 1, nullptr);
    }
    p.devices = request.devices == "cuda" ? every_gpu(std::max(visible(), 1)) : request.devices;  // cuda: every GPU
    p.kind = device_kind(request.devices);
    if (file_kind && *file_kind != p.kind) {
      throw Error(stated(spec) + ", but --devices " + request.devices + " gives " + (p.kind == "cuda" ? "GPU" : "CPU") +
                      " slots — a file's device is never replaced: give " +
                      (p.kind == "cuda" ? "--devices cpu (or cpu:NxT)" : "GPU slots (--devices cuda:0,1,…)") +
                      ", or change resources.device in the file",
                  Exit::bad_input);
    }
  } else if (file_kind == "cuda") {
    p.kind = "cuda";
    if (visible() == 0) {
      const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
      if (request.check_here) {
        throw Error(stated(spec) + ", but no GPU is visible here (no NVIDIA driver's GPU" +
                        (env != nullptr ? std::string(" within CUDA_VISIBLE_DEVICES=") + env : std::string()) +
                        ") — run it where there are GPUs (or --executor slurm), or say resources.device: cpu in the "
                        "file to train on the CPU",
                    Exit::bad_input);
      }
      p.note = stated(spec) + ": no GPU is visible here, so `sweep run` would refuse it here";
      return p;
    }
    p.devices = *spec.device == "cuda" ? every_gpu(visible()) : *spec.device;
    p.note = stated(spec) + ": " + (*spec.device == "cuda" ? "one slot per GPU visible here" : "its GPU") +
             " (--devices " + p.devices + ")";
  } else {
    p.kind = "cpu";
    p.devices = "cpu";
  }
  if (p.kind == "cuda" && request.check_here) {
    const std::string slots = request.devices.empty() ? stated(spec) : "--devices " + request.devices;
    const int n = visible();
    const std::string here = n == 0   ? "no CUDA device is visible here"
                             : n == 1 ? "there is 1 CUDA device here (cuda:0)"
                                      : "there are " + std::to_string(n) + " CUDA devices here (" + every_gpu(n) + ")";
    // (an index beyond CUDA_VISIBLE_DEVICES is refused there, said of where the slots came from)
    for (const Slot& slot : parse_devices(p.devices, 1, std::getenv("CUDA_VISIBLE_DEVICES"), slots)) {
      if (std::stoi(slot.label.substr(5)) >= n) {
        throw Error(slots + ": " + here + " — name one of them, check nvidia-smi and the driver, or train on cpu",
                    Exit::bad_input);
      }
    }
  }
  return p;
}

}  // namespace

Placement place_runs(const SweepSpec& spec, const DeviceRequest& request) {
  Placement p = place_here(spec, request);
  const std::string was = request.recorded.empty() && request.trained_on ? request.trained_on(spec.name) : "";
  if (was.empty() || was == p.kind) {
    return p;
  }
  const std::string record = "the results folder records that sweep " + spec.name + "'s runs trained on " + was;
  if (spec.device) {  // (before a file's device was honoured)
    throw Error(stated(spec) + ", and " + record + " — its runs on " + p.kind + " would be other runs, those left "
                    "behind: say resources.device: " + was + " to go on with them, or give the " + p.kind +
                    " runs a sweep of their own (another sweep: name)",
                Exit::bad_input);
  }
  if (request.devices.empty() && request.gpus_per_rank == 0) {
    throw Error(record + ", and " + spec.file + " states no resources.device: without " +
                    (request.slurm ? "--gpus-per-rank" : "--devices") + " they would be trained again, on the CPU — " +
                    (request.slurm ? "give --gpus-per-rank N to go on with them"
                                   : "give --devices cuda (or cuda:0,1,…) to go on with them (--devices cpu: CPU "
                                     "runs beside them)") +
                    ", or say resources.device: " + was + " in the file",
                Exit::bad_input);
  }
  return p;  // slots of another kind, asked for: runs of their own beside those
}

namespace {

// The seeds a sequential design's rounds added, as recorded, taken into `spec` from the start.
void add_recorded_seeds(SweepSpec& spec, const std::map<std::string, int64_t>& seeds) {
  const SweepSpec declared = spec;
  for (const auto& v : declared.variants) {
    const auto n = seeds.find(v.name);
    for (auto& run : n != seeds.end() ? added_seed_runs(declared, v.name, std::min(n->second, spec.design.max_seeds))
                                      : std::vector<PlannedRun>{}) {
      spec.runs.push_back(std::move(run));
    }
  }
}

// The folder's --eliminate record of the sweep (sweeps/NAME.eliminated; where the folder has none, the
// one its database keeps), into its design (lenient: one that cannot be read said).
void read_elimination(const PlanRequest& request, SweepPlan& plan) {
  if (request.results.empty()) {
    return;
  }
  try {
    plan.spec.design.eliminate = read_saved_elimination(request.results, plan.spec.name);
    if (!plan.spec.design.eliminate && request.store) {  // a folder rebuilt by ingest into another: its database's
      const std::optional<SweepInfo> info = request.store->sweep_info(plan.spec.name);
      plan.spec.design.eliminate = info ? info->design.eliminate : std::nullopt;
    }
  } catch (const Error& e) {
    if (!request.lenient_records) {
      throw;
    }
    plan.problems.push_back("its --eliminate record not read: " + first_line(e.what()));
  }
}

}  // namespace

SweepPlan plan_sweep(const PlanRequest& request) {
  SweepPlan plan;
  SweepSpec& spec = plan.spec;
  spec = load_sweep(request.file, request.vocab, request.max_variants, request.trainer ? &*request.trainer : nullptr);
  plan.placement = place_runs(spec, request.devices);
  train_on(spec, plan.placement.kind);  // the kind of device is part of every id
  for (const PlannedRun& run : spec.runs) {  // what only a GPU runs, said before anything is written
    if (run.config.train.cuda_kernels && plan.placement.kind != "cuda") {
      throw Error(spec.file + ": variant '" + run.variant + "': train.cuda_kernels: sweep's CUDA kernels run on a GPU, "
                      "and this sweep trains on the CPU — remove train.cuda_kernels (on a CPU, train.fused chooses "
                      "the fused kernels), or train on GPUs (resources.device: cuda)",
                  Exit::bad_input);
    }
    if (const std::string problem = cuda_graph_problem(run.config, plan.placement.kind == "cuda"); !problem.empty()) {
      throw Error(spec.file + ": variant '" + run.variant + "': " + problem, Exit::bad_input);
    }
  }
  if (request.saved_rounds) {  // the folder's own record (ingest): the design its looks were judged by
    const RecordedRounds& saved = *request.saved_rounds;
    if (saved.max_seeds < spec.design.first) {
      throw Error(saved.file + ": max_seeds " + std::to_string(saved.max_seeds) +
                  " is below the sweep's " + std::to_string(spec.design.first) + " declared seeds");
    }
    spec.design.max_seeds = saved.max_seeds;
    spec.design.spending = saved.spending;
    add_recorded_seeds(spec, saved.seeds);
    read_elimination(request, plan);
    return plan;
  }
  check_until_decided(spec, request.until_decided, request.max_seeds);
  spec.design = seed_design(spec, request.until_decided, request.max_seeds,
                            request.store ? request.store->sweep_info(spec.name) : std::nullopt);
  if (spec.design.sequential() && request.store) {
    std::map<std::string, int64_t> seeds;
    for (const auto& row : request.store->sweep_runs(spec.name)) {
      seeds[row.variant]++;
    }
    add_recorded_seeds(spec, seeds);
  }
  read_elimination(request, plan);
  return plan;
}

}  // namespace sweep
