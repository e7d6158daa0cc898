#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "config/load_sweep.h"
#include "helpers.h"
#include "util/fs.h"
#include "util/text.h"

using namespace sweep;

static const std::string k_sweep_dir = std::string(SWEEP_TEST_DATA) + "/sweep";

TEST_CASE("expansion: a tune axis trains every variant at every value, keys tuned together, beside a grid") {
  const SweepSpec s = load_sweep(k_sweep_dir + "/tune.yaml");
  REQUIRE(s.axes.size() == 2);
  CHECK(s.axes[0].kind == AxisKind::grid);
  CHECK(s.axes[1].kind == AxisKind::tune);
  CHECK(s.axes[1].keys == std::vector<std::string>{"train.lr", "train.muon_lr"});
  REQUIRE(s.variants.size() == 2 * 2 * 3);  // interventions × weight decays × tune positions
  std::set<std::string> names;
  for (const auto& v : s.variants) {
    names.insert(v.name);
  }
  CHECK(names.count("base"));  // base's values: its bare name
  CHECK(names.count("lr=5e-4"));  // AdamW's runs ignore muon_lr: not in their names or ids
  CHECK(names.count("muon"));
  CHECK(names.count("muon+weight_decay=0.0+lr=2e-3+muon_lr=0.04"));
  CHECK(s.runs.size() == 12 * 2);
  for (const auto& r : s.runs) {
    CHECK(r.config.train.muon_lr == doctest::Approx(20 * r.config.train.lr));  // one position sets both
  }
}

TEST_CASE("expansion: interventions, combine, grid, zip, seeds and repeats") {
  const SweepSpec s = load_sweep(k_sweep_dir + "/small.yaml");
  // 4 named variants (base first) × 2 grid values × 2 zip positions
  REQUIRE(s.variants.size() == 16);
  // Named by what they change: the baseline keeps its bare name at the point equal to base
  // (weight_decay 0.1, micro_batch 4, grad_accum 1) and leads; its family drops its name.
  CHECK(s.variants[0].name == "base");
  CHECK(s.variants[1].name == "weight_decay=0.0");
  CHECK(s.variants[2].name == "weight_decay=0.0+micro_batch=2+grad_accum=2");
  CHECK(s.variants[3].name == "micro_batch=2+grad_accum=2");
  CHECK(s.variants.back().name == "both+micro_batch=2+grad_accum=2");
  CHECK(s.variants[1].intervention == "base");
  CHECK(s.variants[1].axes.dump() == R"({"train.weight_decay":0.0,"train.micro_batch":4,"train.grad_accum":1})");
  CHECK(s.variants.back().parts == std::vector<std::string>{"clip", "nodrop"});
  REQUIRE(s.axes.size() == 2);
  CHECK(s.axes[0].kind == AxisKind::grid);
  CHECK(s.axes[0].keys == std::vector<std::string>{"train.weight_decay"});
  CHECK(s.axes[1].kind == AxisKind::zip);
  CHECK(s.axes[1].keys == std::vector<std::string>{"train.micro_batch", "train.grad_accum"});
  // × (2 init × 1 data) × 2 repeats
  CHECK(s.runs.size() == 16 * 4);
  std::set<std::string> ids;
  for (const auto& r : s.runs) {
    ids.insert(r.run_id);
    CHECK(r.config.seeds.data == 7);
    CHECK(r.config.train.micro_batch * r.config.train.grad_accum == 4);  // zip keeps the global batch
  }
  CHECK(ids.size() == s.runs.size());  // repeats are distinct runs
  const auto& both = *std::find_if(s.runs.begin(), s.runs.end(), [](const PlannedRun& r) {
    return r.variant.rfind("both+", 0) == 0;
  });
  CHECK(both.config.train.grad_clip == 1.0);
  CHECK(both.config.model.dropout == 0.0);
  CHECK(both.config.train.lr == doctest::Approx(2e-3));
}

// intervention -> the run ids of its variants
static std::map<std::string, std::set<std::string>> ids_by_intervention(const SweepSpec& s) {
  std::map<std::string, std::string> intervention;
  for (const auto& v : s.variants) {
    intervention[v.name] = v.intervention;
  }
  std::map<std::string, std::set<std::string>> out;
  for (const auto& r : s.runs) {
    out[intervention.at(r.variant)].insert(r.run_id);
  }
  return out;
}

TEST_CASE("run ids do not depend on key order or formatting") {
  const SweepSpec a = load_sweep(k_sweep_dir + "/small.yaml");
  const SweepSpec b = load_sweep(k_sweep_dir + "/small_reordered.yaml");
  CHECK(ids_by_intervention(a) == ids_by_intervention(b));
}

TEST_CASE("changing one override changes only that variant's run ids") {
  test::TempDir dir;
  std::string text = read_file(k_sweep_dir + "/small.yaml");
  write_file_atomic(dir.path / "a.yaml", text);
  const size_t at = text.find("train.grad_clip: 1.0");
  REQUIRE(at != std::string::npos);
  text.replace(at, 20, "train.grad_clip: 0.5");
  write_file_atomic(dir.path / "b.yaml", text);
  const SweepSpec a = load_sweep(dir.str("a.yaml")), b = load_sweep(dir.str("b.yaml"));
  const auto ids_a = ids_by_intervention(a), ids_b = ids_by_intervention(b);
  REQUIRE(ids_a.size() == ids_b.size());
  for (const auto& [name, ids] : ids_a) {
    CAPTURE(name);
    CHECK((ids != ids_b.at(name)) == (name == "clip" || name == "both"));
  }
}

TEST_CASE("a run id ignores where a run executes (threads, which GPU), not what it computes (the kind of device)") {
  RunConfig c = test::tiny_config();
  const std::string id = run_id_of(c, 0);
  CHECK(!c.identity_json().contains("device"));  // a CPU run's identity is what it was before the device counted
  c.resources.threads = 7;
  CHECK(run_id_of(c, 0) == id);
  CHECK(run_id_of(c, 1) != id);
  c.resources.device = "cuda:1";  // a GPU's kernels and dropout stream: another run
  const std::string gpu = run_id_of(c, 0);
  CHECK(gpu != id);
  CHECK(c.identity_json()["device"] == "cuda");
  c.resources.device = "cuda";  // which GPU does not matter
  CHECK(run_id_of(c, 0) == gpu);
  c.resources.device = "cpu";
  c.seeds.data = 9;
  CHECK(run_id_of(c, 0) != id);
}

TEST_CASE("train.cuda_kernels is part of a run id only when on: every run before it keeps its id") {
  RunConfig c = test::tiny_config();
  c.resources.device = "cuda:0";
  const std::string id = run_id_of(c, 0);
  CHECK(!c.identity_json()["train"].contains("cuda_kernels"));
  c.train.cuda_kernels = true;
  CHECK(run_id_of(c, 0) != id);
  CHECK(c.identity_json()["train"]["cuda_kernels"] == true);
}

TEST_CASE("train.cuda_graph is part of a run id only when on, and what it cannot capture is said with why") {
  RunConfig c = test::tiny_config();
  c.resources.device = "cuda:0";
  const std::string id = run_id_of(c, 0);
  CHECK(!c.identity_json()["train"].contains("cuda_graph"));
  CHECK(cuda_graph_problem(c, false).empty());  // off: nothing to refuse anywhere
  c.train.cuda_graph = true;
  CHECK(run_id_of(c, 0) != id);
  CHECK(c.identity_json()["train"]["cuda_graph"] == true);
  CHECK(cuda_graph_problem(c, true).empty());
  CHECK(cuda_graph_problem(c, false).find("train.cuda_graph: a CUDA graph replays a GPU's step, and this run trains "
                                          "on the CPU") == 0);
  auto refused = [&](RunConfig other, const std::string& why) {
    CAPTURE(why);
    CHECK(cuda_graph_problem(other, true).find(why) != std::string::npos);
  };
  RunConfig muon = test::tiny_muon_config();
  muon.train.cuda_graph = true;
  refused(muon, "Muon's learning rate and momentum warmup are set from the host every step");
  RunConfig moe = test::tiny_deepseek_config();
  moe.train.cuda_graph = true;
  refused(moe, "a mixture of experts routes a number of tokens to each expert that changes every step");
  RunConfig recompute = c;
  recompute.train.activation_checkpointing = true;
  refused(recompute, "activation checkpointing sets dropout's generator state from the host in backward");
  RunConfig ranks = c;
  ranks.resources.ranks = 2;
  refused(ranks, "with 2 ranks the gradients' all-reduce and the ranks' agreed stop are not captured");
}

TEST_CASE("train_on: a sweep's runs on the kind of device of its slots, their ids with it") {
  SweepSpec s = load_sweep(k_sweep_dir + "/small.yaml");
  const SweepSpec cpu = s;
  train_on(s, "cpu");
  REQUIRE(s.runs.size() == cpu.runs.size());
  for (size_t i = 0; i < s.runs.size(); ++i) {
    CHECK(s.runs[i].run_id == cpu.runs[i].run_id);
  }
  train_on(s, "cuda");
  std::set<std::string> ids;
  for (size_t i = 0; i < s.runs.size(); ++i) {
    CHECK(s.runs[i].config.resources.device == "cuda");
    CHECK(s.runs[i].run_id != cpu.runs[i].run_id);
    ids.insert(s.runs[i].run_id);
  }
  CHECK(ids.size() == s.runs.size());
  const auto more = added_seed_runs(s, s.baseline, 10);  // more seeds, on the same kind of device
  REQUIRE(!more.empty());
  CHECK(more.front().config.resources.device == "cuda");
}

TEST_CASE("a run that would go on on another kind of device is named, with how to go on") {
  RunConfig c = test::tiny_config();
  const auto cpu = RunConfig::across_layouts(c.identity_json());
  c.resources.device = "cuda:0";
  const auto gpu = RunConfig::across_layouts(c.identity_json());
  const auto moved = RunConfig::other_device(cpu, gpu, "the run in r");
  REQUIRE(moved);
  CHECK(*moved == "the run in r was trained on cpu and would go on on cuda — the kind of device is part of what a run "
                  "is (its kernels, its dropout stream): go on with --set resources.device=cpu, or train a new run on cuda");
  CHECK(RunConfig::other_device(gpu, cpu, "x")->find("was trained on cuda and would go on on cpu") != std::string::npos);
  CHECK_FALSE(RunConfig::other_device(cpu, cpu, "x"));
  c.train.lr *= 2;  // another config as well: not a question of the device
  CHECK_FALSE(RunConfig::other_device(cpu, RunConfig::across_layouts(c.identity_json()), "x"));
}

TEST_CASE("safe names") {
  CHECK(is_safe_name("weight-decay-0.01"));
  CHECK(is_safe_name("base+grad_accum=4"));
  CHECK_FALSE(is_safe_name("../x"));
  CHECK_FALSE(is_safe_name("a/b"));
  CHECK_FALSE(is_safe_name("x; touch PWNED"));
  CHECK_FALSE(is_safe_name("$(id)"));
  CHECK_FALSE(is_safe_name(".hidden"));
  CHECK_FALSE(is_safe_name("a..b"));
  CHECK_FALSE(is_safe_name("has space"));
}

TEST_CASE("bad sweep files give file:line:col errors, all in one pass") {
  CHECK(test::check_bad_files(k_sweep_dir + "/bad", [](const std::string& path) { load_sweep(path); }) >= 10);
}

TEST_CASE("a sweep file over 1 MiB is refused before it is parsed") {
  test::TempDir dir;
  const std::string path = (dir.path / "huge.yaml").string();
  std::string text = "sweep: s\nbaseline: base\ngrid:\n  train.lr: [";
  while (text.size() <= k_max_config_bytes) {
    text += "1e-3, ";
  }
  write_file_atomic(path, text + "1e-3]\n");
  try {
    load_sweep(path);
    FAIL("a huge sweep file was read");
  } catch (const InputErrors& e) {
    REQUIRE(e.diagnostics().size() == 1);
    CHECK(e.diagnostics()[0].str().find("a run or sweep file may have at most 1048576") != std::string::npos);
  }
}

TEST_CASE("every sweep file in experiments/ is valid") {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(std::string(SWEEP_TEST_DATA) + "/../../experiments")) {
    if (entry.path().extension() != ".yaml") {
      continue;
    }
    INFO(entry.path().string());
    const SweepSpec s = load_sweep(entry.path().string());
    CHECK(s.runs.size() >= 2);
    CHECK(s.variants.front().name == (s.ladder ? s.baseline + "+" + s.ladder->rungs[0] : s.baseline));
    ++files;
  }
  CHECK(files == 12);
}

TEST_CASE("a scale ladder: every intervention at every rung, named by its rung, tokens per parameter") {
  const SweepSpec s = load_sweep(k_sweep_dir + "/ladder.yaml");
  REQUIRE(s.ladder);
  CHECK(s.ladder->rungs == std::vector<std::string>{"s", "m", "l"});
  CHECK(s.ladder->target_unit == TargetUnit::params);
  CHECK(s.ladder->target == 1e6);
  REQUIRE(s.axes.size() == 1);
  CHECK(s.axes[0].kind == AxisKind::scale);
  CHECK(s.axes[0].keys == std::vector<std::string>{"model.n_layer", "model.n_embd", "train.tokens"});
  std::vector<std::string> names;
  for (const auto& v : s.variants) {
    names.push_back(v.name);
  }
  CHECK(names == std::vector<std::string>{"base+s", "base+m", "base+l", "clip+s", "clip+m", "clip+l"});
  CHECK(s.variants[4].axes.dump() == R"({"scale":"m"})");
  CHECK(s.variants[4].intervention == "clip");
  REQUIRE(s.runs.size() == 12);
  // tokens: 2 per parameter of the rung's baseline, the same for every variant at the rung
  for (const auto& r : s.runs) {
    const std::string rung = r.variant.substr(r.variant.find('+') + 1);
    const int64_t layers = rung == "s" ? 1 : rung == "m" ? 2 : 3;
    CHECK(r.config.model.n_layer == layers);
    CHECK(r.config.model.n_embd == 16 * layers);
    CHECK(r.config.train.tokens == 2 * model_size(r.config.model).total);
    CHECK(r.config.train.grad_clip == (r.variant.rfind("clip", 0) == 0 ? 1.0 : 0.0));
  }
  CHECK(Ladder::from_json(s.ladder->to_json()).to_json() == s.ladder->to_json());
}
