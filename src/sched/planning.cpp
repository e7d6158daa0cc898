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
    const std::string slots = request.devices.empty() ? stated(spec) : "--devices " + p.devices;
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
  return plan;
}

// ---- the results folder's record of a sweep, beside its saved file ----

namespace {
fs::path saved_file(const std::string& results, const std::string& sweep, const std::string& extension) {
  return fs::path(results) / "sweeps" / (sweep + extension);
}
}  // namespace

std::string saved_device_file(const std::string& results, const std::string& sweep) {
  return saved_file(results, sweep, ".device").string();
}

void save_device(const std::string& results, const std::string& sweep, const std::string& kind) {
  write_file_atomic(saved_device_file(results, sweep), kind + "\n");
}

std::string read_saved_device(const std::string& results, const std::string& sweep) {
  const std::string file = saved_device_file(results, sweep);
  if (!fs::exists(file)) {
    return "";
  }
  const std::string kind = trim(read_file(file));
  if (kind != "cpu" && kind != "cuda") {
    throw Error(file + " says '" + kind.substr(0, 40) + "', not cpu or cuda");
  }
  return kind;
}

void save_rounds(const std::string& results, const SweepSpec& spec, const std::vector<PlannedRun>& added) {
  const fs::path file = saved_file(results, spec.name, ".rounds");
  if (!spec.design.sequential()) {
    fs::remove(file);
    return;
  }
  std::map<std::string, int64_t> seeds;
  for (const auto* runs : {&spec.runs, &added}) {
    for (const auto& r : *runs) {
      seeds[r.variant]++;
    }
  }
  const nlohmann::json j{{"max_seeds", spec.design.max_seeds}, {"spending", spec.design.spending}, {"seeds", seeds}};
  write_file_atomic(file, j.dump() + "\n");
}

std::optional<RecordedRounds> read_saved_rounds(const std::string& results, const std::string& sweep) {
  const fs::path file = saved_file(results, sweep, ".rounds");
  if (!fs::exists(file)) {
    return std::nullopt;
  }
  RecordedRounds r;
  r.file = file.string();
  try {
    const nlohmann::json j = nlohmann::json::parse(read_file(file));
    r.max_seeds = j.at("max_seeds").get<int64_t>();
    const std::string spending = j.at("spending").get<std::string>();
    const std::optional<Spending> known = parse_choice<Spending>(spending);
    if (!known) {
      throw Error(file.string() + ": not a saved seed design (spending \"" + spending + "\": expected " +
                  join(choice_names<Spending>(), " or ") + ")");
    }
    r.spending = *known;
    r.seeds = j.at("seeds").get<std::map<std::string, int64_t>>();
  } catch (const nlohmann::json::exception& e) {
    const std::string what = e.what();
    throw Error(file.string() + ": not a saved seed design (" + what.substr(0, what.find('\n')) + ")");
  }
  return r;
}

void save_trainer(const std::string& results, const SweepSpec& spec) {
  if (!spec.trainer) {
    return;
  }
  const OwnTrainer& t = spec.trainer->trainer;
  const fs::path root = fs::absolute(results).lexically_normal();
  const nlohmann::json j{{"name", t.name}, {"dir", fs::path(t.dir).lexically_relative(root).string()}, {"files", t.files}};
  write_file_atomic(saved_file(results, spec.name, ".trainer"), j.dump() + "\n");
  fs::remove(saved_file(results, spec.name, ".trainer-dir"));  // an older sweep's record of it
}

std::optional<TrainerRecord> read_saved_trainer(const std::string& results, const std::string& sweep) {
  const fs::path file = saved_file(results, sweep, ".trainer"), older = saved_file(results, sweep, ".trainer-dir");
  TrainerRecord r;
  if (fs::exists(file)) {
    try {
      const nlohmann::json j = nlohmann::json::parse(read_file(file));
      r.dir = (fs::absolute(results) / j.at("dir").get<std::string>()).lexically_normal().string();
      r.files = j.at("files").get<std::map<std::string, std::string>>();
      r.name = j.value("name", "");
    } catch (const nlohmann::json::exception& e) {
      const std::string what = e.what();
      throw Error(file.string() + ": not a saved trainer record (" + what.substr(0, what.find('\n')) + ")");
    }
    return r;
  }
  if (fs::exists(older)) {
    r.dir = trim(read_file(older));
    return r;
  }
  return std::nullopt;
}

void save_file_name(const std::string& results, const SweepSpec& spec) {
  write_file_atomic(saved_file(results, spec.name, ".file"), spec.file + "\n");
}

std::string read_saved_file_name(const std::string& results, const std::string& sweep) {
  const fs::path file = saved_file(results, sweep, ".file");
  return fs::exists(file) ? trim(read_file(file)) : "";
}

}  // namespace sweep
