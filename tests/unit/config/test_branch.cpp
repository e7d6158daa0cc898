// Branched interventions in a sweep file (config/branch.h): which runs branch from which, at which
// step, under which ids; and what a branch may not change.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <tuple>

#include "config/branch.h"
#include "config/load_sweep.h"
#include "helpers.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

using namespace sweep;

namespace {

const std::string k_small = std::string(SWEEP_TEST_DATA) + "/sweep/small.yaml";

// small.yaml with `edit` applied (`from` replaced by `to`) and `extra` appended, loaded.
SweepSpec load_edited(const test::TempDir& dir, const std::string& extra, const std::string& from = "",
                      const std::string& to = "") {
  std::string text = read_file(k_small);
  if (!from.empty()) {
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  }
  write_file_atomic(dir.path / "s.yaml", text + extra);
  return load_sweep(dir.str("s.yaml"));
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string errors_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputErrors& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("branch: each intervention's run starts from the baseline's at its grid point with its seeds and repeat") {
  test::TempDir dir;
  const SweepSpec plain = load_sweep(k_small);
  const SweepSpec s = load_edited(dir, "branch: {at: 0.5}\n");
  REQUIRE(s.runs.size() == plain.runs.size());
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t>, std::string> baseline;  // point, seeds -> run id
  std::map<std::string, std::string> point;
  for (const Variant& v : s.variants) {
    point[v.name] = v.axes.dump();
    CHECK(v.branch_at == (v.intervention == "base" ? 0.0 : 0.5));
  }
  for (const PlannedRun& r : s.runs) {
    if (s.variants[0].name == r.variant || r.config.branch.step == 0) {
      baseline[{point[r.variant], r.config.seeds.init, r.config.seeds.data, r.repeat}] = r.run_id;
    }
  }
  int branched = 0;
  for (size_t i = 0; i < s.runs.size(); ++i) {
    const PlannedRun& r = s.runs[i];
    CAPTURE(r.variant);
    const bool is_base = r.variant.rfind("both", 0) != 0 && r.variant.rfind("clip", 0) != 0 &&
                         r.variant.rfind("nodrop", 0) != 0;
    if (is_base) {
      CHECK_FALSE(r.config.branch.on());
      CHECK(r.run_id == plain.runs[i].run_id);  // the parents keep their ids
      continue;
    }
    ++branched;
    CHECK(r.config.branch.step == 600);  // 50% of 1000 steps, at the next validation point (eval.every 200)
    CHECK(r.config.branch.from == baseline.at({point[r.variant], r.config.seeds.init, r.config.seeds.data, r.repeat}));
    CHECK(r.run_id != plain.runs[i].run_id);  // its id includes the parent's and the step
    CHECK(r.run_id == run_id_of(r.config, r.repeat));
  }
  CHECK(branched == 3 * 4 * 4);  // clip, nodrop, both × 4 grid/zip points × 2 seeds × 2 repeats
  // the config a worker reads says it, and reads back the same
  const RunConfig& last = s.runs.back().config;
  CHECK(parse_run_config(YAML::Load(last.to_yaml()), "c.yaml").identity_json() == last.identity_json());
  // trained on a GPU, the parents' ids change: the branches follow them
  SweepSpec gpu = s;
  train_on(gpu, "cuda");
  for (size_t i = 0; i < gpu.runs.size(); ++i) {
    if (gpu.runs[i].config.branch.on()) {
      CHECK(gpu.runs[i].config.branch.from != s.runs[i].config.branch.from);
      bool found = false;
      for (const PlannedRun& p : gpu.runs) {
        found = found || p.run_id == gpu.runs[i].config.branch.from;
      }
      CHECK(found);
    }
  }
}

TEST_CASE("branch: an intervention's own point or `none` overrides the sweep's and a combination's parts must agree") {
  test::TempDir dir;
  const SweepSpec s = load_edited(dir, "branch: {at: 0.5}\n", "clip: {train.grad_clip: 1.0}",
                                  "clip: {train.grad_clip: 1.0}\n  late: {train.lr: 2e-4, branch: {at: 0.25}}\n"
                                  "  scratch: {train.lr: 3e-4, branch: none}");
  std::map<std::string, double> at;
  for (const Variant& v : s.variants) {
    at[v.intervention] = v.branch_at;
  }
  CHECK(at["base"] == 0);
  CHECK(at["clip"] == 0.5);
  CHECK(at["both"] == 0.5);
  CHECK(at["late"] == 0.25);
  CHECK(at["scratch"] == 0);
  for (const PlannedRun& r : s.runs) {
    if (r.variant.rfind("late", 0) == 0) {
      CHECK(r.config.branch.step == 400);  // 25% of 1000: the first validation point at or after it
    }
    if (r.variant.rfind("scratch", 0) == 0) {
      CHECK_FALSE(r.config.branch.on());
    }
  }
  // both = clip (at 0.25) + nodrop (at 0.5): refused
  const std::string e = errors_of([&] {
    load_edited(dir, "branch: {at: 0.5}\n", "clip: {train.grad_clip: 1.0}",
                "clip: {train.grad_clip: 1.0, branch.at: 0.25}");
  });
  CHECK(has(e, "combination 'both': 'nodrop' branches at 0.5, its other parts at 0.25"));
}

TEST_CASE("branch: what a branch may not change, a point outside (0, 1), a branched baseline: refused with the fix") {
  test::TempDir dir;
  std::string e =
      errors_of([&] { load_edited(dir, "branch: {at: 0.5}\n", "nodrop: {", "nodrop: {model.n_layer: 3, "); });
  CHECK(has(e, "'nodrop' branches from the baseline at 50% of training, and sets model.n_layer: a branch starts "
                    "from the baseline's checkpoint"));
  CHECK(has(e, "train it from scratch (`branch: none` on it)"));
  e = errors_of([&] { load_edited(dir, "branch: {at: 0.5}\n", "nodrop: {", "nodrop: {train.tokens: 128K, "); });
  CHECK(has(e, "sets train.tokens"));
  e = errors_of([&] { load_edited(dir, "branch: {at: 1.5}\n"); });
  CHECK(has(e, "strictly between 0 and 1, not '1.5' (at 1 or past the end nothing is left to train)"));
  e = errors_of([&] { load_edited(dir, "branch: {at: 0.5, from: 3}\n"); });
  CHECK(has(e, "branch takes one key, at"));
  e = errors_of([&] { load_edited(dir, "", "base: {}", "base: {branch.at: 0.5}"); });
  CHECK(has(e, "the baseline 'base' is what the interventions branch from"));
  e = errors_of([&] { load_edited(dir, "", "clip: {", "clip: {branch.step: 3, "); });
  CHECK(has(e, "'branch.step' — a branch takes one key, at"));
  e = errors_of([&] { load_edited(dir, "branch: {at: 0.9}\n"); });
  CHECK(has(e, "where the baseline has no validation point before its end (eval.every 200 of its 1000 steps)"));
}

TEST_CASE("branch: the keys a branch may change are the ones across_branch leaves out") {
  RunConfig parent = test::tiny_config();
  RunConfig child = parent;
  child.train.lr *= 0.5;
  child.train.schedule = Schedule::wsd;
  child.model.dropout = 0.2;
  child.train.grad_clip = 0.5;
  child.branch = {"abc", 3};
  CHECK(keys_a_branch_cannot_change(parent, child).empty());
  CHECK(across_branch(parent.identity_json()) == across_branch(child.identity_json()));
  child.seeds.data = 9;
  child.model.n_embd *= 2;
  CHECK(keys_a_branch_cannot_change(parent, child) == std::vector<std::string>{"model.n_embd", "seeds.data"});
  CHECK(branch_problem(test::tiny_muon_config()) == "train.optimizer muon: a branch resumes AdamW's state only");
}

TEST_CASE("branch: an intervention's other keys keep their values wherever its branch key stands") {
  // (the branch key taken out of the list without shifting YAML::Nodes by assignment, which writes
  // the next key's value into the parsed file's node)
  test::TempDir dir;
  const SweepSpec s = load_edited(dir, "branch: {at: 0.5}\n", "clip: {train.grad_clip: 1.0}",
                                  "clip: {branch: {at: 0.5}, train.grad_clip: 0.7, train.beta2: 0.99, "
                                  "train.eps: 1e-6}\n"
                                  "  late:\n    branch.at: 0.5\n    train.min_lr: 1e-5\n    train.decay: 0.3");
  for (const PlannedRun& r : s.runs) {
    if (r.variant.rfind("clip", 0) == 0) {
      CHECK(r.config.train.grad_clip == 0.7);
      CHECK(r.config.train.beta2 == 0.99);
      CHECK(r.config.train.eps == 1e-6);
      CHECK(r.config.branch.on());
    }
    if (r.variant.rfind("late", 0) == 0) {
      CHECK(r.config.train.min_lr == 1e-5);
      CHECK(r.config.train.decay == 0.3);
    }
  }
}
