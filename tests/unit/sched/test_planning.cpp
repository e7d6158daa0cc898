// The one planning step (sched/planning.h): the device rule — a file's resources.device honoured,
// contradicting slots refused, GPUs derived from what is visible — and the runs it makes final:
// their ids carry the kind of device, and the seeds a folder's rounds added are among them.
#include <doctest/doctest.h>

#include <set>

#include "helpers.h"
#include "sched/planning.h"
#include "store/results_folder.h"
#include "sched/slots.h"
#include "util/error.h"
#include "util/fs.h"

using namespace sweep;

namespace {

// A sweep file of sweep's own trainer (no data needed: the vocabulary is given), with `resources`
// in base when given, and `extra` lines under interventions.
std::string sweep_file(const test::TempDir& dir, const std::string& resources, const std::string& extra = "") {
  const std::string path = dir.str("s.yaml");
  write_file_atomic(path, "sweep: s\nbaseline: base\nseeds: [1, 2]\nmin_effect: 0.01\nbase:\n"
                          "  data: {dataset: none}\n  model: {n_layer: 1, n_head: 1, n_embd: 8, block_size: 8}\n"
                          "  train: {micro_batch: 1, tokens: 64}\n" +
                              (resources.empty() ? "" : "  resources: " + resources + "\n") +
                              "interventions:\n  base: {}\n  lr: {train.lr: 1e-3}\n" + extra);
  return path;
}

PlanRequest request_for(const std::string& file, const std::string& devices, int visible_gpus) {
  PlanRequest r;
  r.file = file;
  r.vocab = [](const std::string&, const std::string&) { return int64_t{64}; };
  r.devices.devices = devices;
  r.devices.count_gpus = [visible_gpus](const SweepSpec&) { return visible_gpus; };
  return r;
}

std::set<std::string> ids_of(const SweepSpec& spec) {
  std::set<std::string> ids;
  for (const auto& r : spec.runs) {
    ids.insert(r.run_id);
  }
  return ids;
}

std::string refusal(const PlanRequest& r) {
  try {
    plan_sweep(r);
  } catch (const Error& e) {
    CHECK(e.code() == Exit::bad_input);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("planning: a file that states no device trains where its slots are") {
  test::TempDir dir;
  const std::string file = sweep_file(dir, "");
  const SweepPlan cpu = plan_sweep(request_for(file, "", 0));
  CHECK(cpu.placement.kind == "cpu");
  CHECK(cpu.placement.devices == "cpu");
  CHECK(cpu.placement.note.empty());
  const SweepPlan gpu = plan_sweep(request_for(file, "cuda:0,1", 2));
  CHECK(gpu.placement.kind == "cuda");
  CHECK(gpu.placement.devices == "cuda:0,1");
  CHECK(gpu.spec.runs.front().config.resources.device == "cuda");
  CHECK(ids_of(cpu.spec).size() == 4);
  for (const auto& id : ids_of(gpu.spec)) {
    CHECK(ids_of(cpu.spec).count(id) == 0);  // the kind of device is part of a run's id
  }
  CHECK(refusal(request_for(file, "cuda:1", 1)).find("--devices cuda:1: there is 1 CUDA device here (cuda:0) — name one of them") !=
        std::string::npos);
  PlanRequest plan = request_for(file, "cuda:1", 0);
  plan.devices.check_here = false;  // `sweep plan` names the kind; the GPUs need not be here
  CHECK(plan_sweep(plan).placement.kind == "cuda");
  // slots that are none: refused by `sweep plan` as by `sweep run`, by the one parser of --devices
  for (const char* bad : {"banana", "cpu:0x1", "cuda:-1", "cuda:0,cpu", "cpu:2"}) {
    CAPTURE(bad);
    PlanRequest r = request_for(file, bad, 0);
    r.devices.check_here = false;
    CHECK(refusal(r).find(std::string("--devices ") + bad + ": ") == 0);
  }
  // --devices cuda where there is none: said as given
  CHECK(refusal(request_for(file, "cuda", 0)).find("--devices cuda: no CUDA device is visible here") !=
        std::string::npos);
}

TEST_CASE("planning: a file's resources.device is honoured, never replaced") {
  test::TempDir dir;
  const std::string file = sweep_file(dir, "{device: cuda}");
  const SweepPlan every = plan_sweep(request_for(file, "", 3));
  CHECK(every.placement.kind == "cuda");
  CHECK(every.placement.devices == "cuda:0,1,2");
  CHECK(every.placement.note.find("s.yaml:9: resources.device: cuda: one slot per GPU visible here") != std::string::npos);
  CHECK(refusal(request_for(file, "", 0)).find("s.yaml:9: resources.device: cuda, but no GPU is visible here") !=
        std::string::npos);
  CHECK(refusal(request_for(file, "cpu:2x1", 0))
            .find("resources.device: cuda, but --devices cpu:2x1 gives CPU slots — a file's device is never replaced") !=
        std::string::npos);
  CHECK(plan_sweep(request_for(file, "cuda:1", 2)).placement.devices == "cuda:1");
  PlanRequest plan = request_for(file, "", 0);
  plan.devices.check_here = false;
  const SweepPlan planned = plan_sweep(plan);
  CHECK(planned.placement.kind == "cuda");
  CHECK(ids_of(planned.spec) == ids_of(every.spec));  // plan and run: the same ids
  SUBCASE("Slurm: one GPU a rank unless told; GPUs for a CPU file refused") {
    PlanRequest slurm = request_for(file, "", 0);
    slurm.devices.slurm = true;
    CHECK(plan_sweep(slurm).placement.gpus_per_rank == 1);
    slurm.devices.gpus_per_rank = 4;
    CHECK(plan_sweep(slurm).placement.gpus_per_rank == 4);
    PlanRequest cpu = request_for(sweep_file(dir, "{device: cpu}"), "", 0);
    cpu.devices.slurm = true;
    CHECK(plan_sweep(cpu).placement.kind == "cpu");
    cpu.devices.gpus_per_rank = 1;
    CHECK(refusal(cpu).find("resources.device: cpu, but --gpus-per-rank 1 gives each rank GPUs") != std::string::npos);
  }
  SUBCASE("one GPU named: that one") {
    const std::string one = sweep_file(dir, "{device: 'cuda:1'}");
    CHECK(plan_sweep(request_for(one, "", 2)).placement.devices == "cuda:1");
    CHECK(refusal(request_for(one, "", 1)).find("s.yaml:9: resources.device: cuda:1: there is 1 CUDA device here") !=
          std::string::npos);
  }
  SUBCASE("--devices with Slurm: refused, its GPUs are --gpus-per-rank's") {
    PlanRequest slurm = request_for(file, "cuda:0", 0);
    slurm.devices.slurm = true;
    CHECK(refusal(slurm).find("--devices cuda:0 gives slots to the local executor") != std::string::npos);
  }
  SUBCASE("the kind the folder recorded wins (ingest)") {
    PlanRequest ingest = request_for(sweep_file(dir, ""), "", 0);
    ingest.devices.recorded = "cuda";
    CHECK(ids_of(plan_sweep(ingest).spec) == ids_of(every.spec));
  }
}

TEST_CASE("planning: the runs a folder recorded on another kind are never left behind unsaid") {
  test::TempDir dir;
  const auto recorded = [](const std::string& kind) {
    return [kind](const std::string& sweep) { return sweep == "s" ? kind : std::string(); };
  };
  PlanRequest none = request_for(sweep_file(dir, ""), "", 2);
  none.devices.trained_on = recorded("cuda");
  CHECK(refusal(none).find("the results folder records that sweep s's runs trained on cuda, and") != std::string::npos);
  none.devices.devices = "cuda";  // every GPU: goes on with them
  CHECK(plan_sweep(none).placement.devices == "cuda:0,1");
  none.devices.devices = "cpu";  // asked for: CPU runs of their own beside them
  CHECK(plan_sweep(none).placement.kind == "cpu");
  PlanRequest gpu = request_for(sweep_file(dir, "{device: cuda}"), "", 2);
  gpu.devices.trained_on = recorded("cpu");
  CHECK(refusal(gpu).find("resources.device: cuda, and the results folder records that sweep s's runs trained on cpu") !=
        std::string::npos);
  gpu.devices.trained_on = recorded("cuda");
  CHECK(plan_sweep(gpu).placement.kind == "cuda");
}

TEST_CASE("planning: one kind of device per sweep") {
  test::TempDir dir;
  const std::string file = sweep_file(dir, "", "  gpu: {resources.device: cuda}\n");
  try {
    plan_sweep(request_for(file, "", 0));
    FAIL("a sweep with a variant on another kind of device was planned");
  } catch (const InputErrors& e) {
    CHECK(std::string(e.diagnostics().front().str()).find("a sweep trains on one device") != std::string::npos);
  }
}

TEST_CASE("planning: the seeds a folder's rounds added are planned from the start") {
  test::TempDir dir;
  PlanRequest r = request_for(sweep_file(dir, ""), "", 0);
  r.saved_rounds = RecordedRounds{8, Spending::pocock, {{"base", 4}, {"lr", 3}}, "s.rounds"};
  const SweepSpec spec = plan_sweep(r).spec;
  CHECK(spec.design.max_seeds == 8);
  CHECK(spec.runs.size() == 7);
  CHECK(spec.runs.back().config.seeds.init == 3);  // lr's added seed: after its declared 1 and 2
}

TEST_CASE("planning: train.cuda_kernels on a CPU sweep is refused before anything runs") {
  test::TempDir dir;
  const std::string file = sweep_file(dir, "", "  kernels: {train.cuda_kernels: true}\n");
  CHECK(refusal(request_for(file, "", 0)).find("variant 'kernels': train.cuda_kernels: sweep's CUDA kernels run on a GPU") !=
        std::string::npos);
  CHECK(plan_sweep(request_for(file, "cuda:0", 1)).placement.kind == "cuda");
}

TEST_CASE("planning: train.cuda_graph on a CPU sweep, or where it cannot capture, is refused before anything runs") {
  test::TempDir dir;
  const std::string file = sweep_file(dir, "", "  graph: {train.cuda_graph: true}\n");
  CHECK(refusal(request_for(file, "", 0))
            .find("variant 'graph': train.cuda_graph: a CUDA graph replays a GPU's step") != std::string::npos);
  CHECK(plan_sweep(request_for(file, "cuda:0", 1)).placement.kind == "cuda");
  const std::string recompute =
      sweep_file(dir, "", "  graph: {train.cuda_graph: true, train.activation_checkpointing: true}\n");
  CHECK(refusal(request_for(recompute, "cuda:0", 1))
            .find("variant 'graph': train.cuda_graph: activation checkpointing") != std::string::npos);
}

TEST_CASE("planning: the GPUs visible, counted as CUDA counts them") {
  CHECK(visible_gpu_count(4, nullptr) == 4);
  CHECK(visible_gpu_count(4, "2,3") == 2);
  CHECK(visible_gpu_count(4, "") == 0);
  CHECK(visible_gpu_count(4, "1,7,2") == 1);  // CUDA reads up to the first entry that names no GPU
  CHECK(visible_gpu_count(2, "GPU-5d1e,MIG-ab") == 2);
  CHECK(visible_gpu_count(0, "0") == 0);
  CHECK(visible_gpu_count(4, "-1") == 0);
}

TEST_CASE("planning: a folder's saved rounds read back with their spending, and one it does not know refused by name") {
  test::TempDir dir;
  fs::create_directories(dir.path / "sweeps");
  const fs::path rounds = dir.path / "sweeps" / "s.rounds";
  write_file_atomic(rounds, R"({"max_seeds": 8, "spending": "obrien-fleming", "seeds": {"base": 4}})");
  const std::optional<RecordedRounds> r = read_saved_rounds(dir.str(), "s");
  REQUIRE(r);
  CHECK(r->spending == Spending::obrien_fleming);
  CHECK(r->max_seeds == 8);
  write_file_atomic(rounds, R"({"max_seeds": 8, "spending": "haybittle", "seeds": {"base": 4}})");
  CHECK_THROWS_WITH_AS(
      read_saved_rounds(dir.str(), "s"),
      doctest::Contains("not a saved seed design (spending \"haybittle\": expected obrien-fleming or pocock)"),
      Error);
}
