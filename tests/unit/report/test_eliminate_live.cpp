// --eliminate while a sweep trains (report/eliminate/live.h): where runs pause for a look, the look
// on runs paused there, and the report of the arms a look stopped.
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.h"
#include "report/eliminate/live.h"

using namespace sweep;

namespace {

// A run of `seed` whose validation loss is `loss(tokens)` at every 100 tokens up to `upto`.
ReportRun run_of(int64_t seed, int64_t upto, const std::function<double(int64_t)>& loss, bool done) {
  ReportRun r;
  r.run_id = "r" + std::to_string(seed);
  r.init_seed = r.data_seed = seed;
  r.status = done ? RunState::done : RunState::preempted;
  r.tokens = upto;
  for (int64_t t = 0; t <= upto; t += 100) {
    r.val_curve.emplace_back(t, loss(t));
  }
  if (done) {
    r.value = r.test_loss = loss(upto);
  }
  return r;
}

// A study of 1000 tokens a run, its runs trained to `upto`: a baseline, an arm 0.2 worse from 100
// tokens on, an arm as good; each seed's curve shifted by its own noise.
ReportInput study(int64_t upto, bool done = false) {
  ReportInput in;
  in.sweep = "s";
  in.baseline = "baseline";
  const std::vector<std::pair<std::string, double>> arms{{"baseline", 0}, {"worse", 0.2}, {"same", 0}};
  for (const auto& [name, deficit] : arms) {
    VariantRuns v;
    v.name = name;
    v.end_tokens = 1000;
    for (int64_t seed = 1; seed <= 3; ++seed) {
      const double own = name == "same" ? 0.002 * static_cast<double>(seed % 2) : 0;
      const double noise = 0.01 * static_cast<double>(seed) + own;
      const double d = deficit;
      const auto loss = [=](int64_t t) { return 5.0 - 0.001 * static_cast<double>(t) + noise + (t > 0 ? d : 0); };
      v.runs.push_back(run_of(seed, upto, loss, done));
      v.runs.back().run_id = name + "-" + std::to_string(seed);
    }
    in.variants.push_back(v);
  }
  return in;
}

// The study at 400 tokens, its record's first look having stopped `worse` (judged against the
// baseline's runs).
ReportInput stopped_study() {
  ReportInput in = study(400);
  in.design.min_effect = 0.01;
  EliminationDesign d;
  d.delta = 0.01;
  d.looks_taken = 1;
  d.baseline_runs = {"baseline-1", "baseline-2", "baseline-3"};
  d.stopped.push_back({true, 0, 0.3, -0.2, -0.17, -0.05, 3, {"worse-1", "worse-2", "worse-3"}, "worse"});
  in.design.eliminate = d;
  return in;
}

// The report's rows of `x` as the analysis leaves them (no result yet; the baseline's, the baseline),
// the record's stops applied.
std::vector<VariantStats> reported(const ReportInput& x, std::vector<std::string>& notes) {
  std::vector<VariantStats> stats(x.variants.size());
  for (size_t i = 0; i < stats.size(); ++i) {
    stats[i].name = x.variants[i].name;
    stats[i].runs = 3;
    stats[i].is_baseline = x.variants[i].name == x.baseline;
    stats[i].verdict = stats[i].is_baseline ? Verdict::baseline : Verdict::no_result;
  }
  apply_eliminations(x, stats, notes);
  return stats;
}

EliminationRule rule_of_delta(double delta) {
  EliminationRule r;
  r.delta = delta;
  return r;
}

}  // namespace

TEST_CASE("eliminate live: a run pauses for a look at its first validation point at or after it, never at its end") {
  RunConfig c = test::tiny_config();
  c.train.tokens = c.tokens_per_step() * 125;
  c.eval.every = 6;
  CHECK(planned_steps(c) == 125);
  CHECK(look_step(c, 0.3) == 42);   // 37.5 → 38 → the validation point at 42
  CHECK(look_step(c, 0.5) == 66);   // 62.5 → 63 → 66
  CHECK(look_step(c, 0.75) == 96);  // 93.75 → 94 → 96
  CHECK(look_step(c, 0.48) == 60);  // 60 exactly: a validation point
  CHECK_FALSE(look_step(c, 0.99));  // 124 → 126: past the end
  c.eval.every = 0;                 // only the end is evaluated
  CHECK_FALSE(look_step(c, 0.3));
  c.eval.every = 6;
  c.resources.ranks = 5;  // its steps as planned count its ranks: 25 of them
  CHECK(planned_steps(c) == 25);
  CHECK(look_step(c, 0.3) == 12);
}

TEST_CASE("eliminate live: the look on runs paused at it stops the arm shown worse, and only once there") {
  const EliminationRule rule = rule_of_delta(0.01);
  // every run paused at 40% of its 1000 tokens: the first look (30%) can be read
  ReportInput in = study(400);
  const LookJudgement first = judge_look(in, rule, 0);
  REQUIRE(first.stopped.size() == 1);
  const Elimination& how = first.stopped[0];
  CHECK(how.arm == "worse");
  CHECK(how.look == 0);
  CHECK(how.fraction == doctest::Approx(0.3));
  CHECK(how.mean == doctest::Approx(-0.2));
  CHECK(how.seeds == 3);
  CHECK(how.upper < how.threshold);
  CHECK(how.threshold == doctest::Approx(-0.01 / 0.2));
  CHECK(how.runs == std::vector<std::string>{"worse-1", "worse-2", "worse-3"});  // the runs it judged, for the record
  CHECK(first.unjudged.empty());
  // the second look (50%) cannot be read on runs at 40%: said, nothing stopped
  const LookJudgement early = judge_look(in, rule, 1);
  CHECK(early.stopped.empty());
  CHECK(early.unjudged ==
        std::vector<std::string>{"worse (no point with 2 seeds there)", "same (no point with 2 seeds there)"});
  // an arm stopped before is not judged again; the arm as good as the baseline is never stopped
  in.design.eliminate = EliminationDesign{};
  in.design.eliminate->stopped.push_back(how);
  CHECK(judge_look(study(600), rule, 1).stopped.size() == 1);
  ReportInput later = study(600);
  later.design = in.design;
  CHECK(judge_look(later, rule, 1).stopped.empty());
  // by its runs, whatever its name: renamed since, it is still the arm stopped before
  later.variants[1].name = "renamed";
  CHECK(judge_look(later, rule, 1).stopped.empty());
}

// nor is any arm judged against a baseline with a diverged run
TEST_CASE("eliminate live: an arm with a diverged run is not judged on its survivors") {
  const EliminationRule rule = rule_of_delta(0.01);
  ReportInput in = study(400);
  in.variants[1].runs[0].status = RunState::diverged;
  LookJudgement j = judge_look(in, rule, 0);
  CHECK(j.stopped.empty());
  CHECK(j.unjudged == std::vector<std::string>{"worse (it has a diverged run)"});
  in = study(400);
  in.variants[0].runs[2].status = RunState::diverged;
  j = judge_look(in, rule, 0);
  CHECK(j.stopped.empty());
  CHECK(j.unjudged.size() == 2);
  CHECK(j.unjudged[0] == "worse (the baseline has a diverged run)");
}

// worse at its look's interval; trained to the end later, its own results
TEST_CASE("eliminate live: the report of an arm a look stopped") {
  const ReportInput in = stopped_study();
  std::vector<std::string> notes;
  std::vector<VariantStats> stats = reported(in, notes);
  CHECK(stats[1].verdict == Verdict::worse);
  CHECK(stats[1].improvement == doctest::Approx(-0.2));
  CHECK(stats[1].ci_high == doctest::Approx(-0.17));
  CHECK(stats[1].ci_low == doctest::Approx(-0.23));
  CHECK(stats[1].seeds == 3);
  CHECK(stats[1].stopped == "stopped at 30% of training: Δ -0.2000, bound -0.1700 < -0.0500");
  CHECK(stats[2].verdict == Verdict::no_result);  // not stopped: as the analysis left it
  REQUIRE(notes.size() == 1);
  // 9 runs of 1000 tokens; the stopped arm's 3 runs at 400: 1800 tokens not trained
  CHECK(notes[0].find("1.8k of the sweep's 9.0k tokens (20.0%) not trained") != std::string::npos);
  // trained to the end since (`sweep run` without --eliminate): its finished runs' verdict stands
  ReportInput later = study(1000, true);
  later.design = in.design;
  stats[1] = VariantStats{};
  stats[1].name = "worse";
  stats[1].runs = stats[1].finished = 3;
  stats[1].verdict = Verdict::worse;
  stats[1].improvement = -0.2;
  notes.clear();
  apply_eliminations(later, stats, notes);
  CHECK(stats[1].stopped.empty());
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "--eliminate stopped `worse` (stopped at 30% of training), trained to the end since: judged on "
                    "its finished runs");
  // a stop of other runs than the arm has now (the sweep file changed): not applied, and said
  ReportInput changed = study(400);
  changed.design = in.design;
  changed.variants[1].runs[0].run_id = "other";
  stats[1] = VariantStats{};
  stats[1].name = "worse";
  stats[1].runs = 3;
  stats[1].verdict = Verdict::no_result;
  notes.clear();
  apply_eliminations(changed, stats, notes);
  CHECK(stats[1].verdict == Verdict::no_result);
  CHECK(stop_of(changed, changed.variants[1]) == nullptr);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "--eliminate's record stopped runs of `worse`, which the sweep file now gives other runs beside "
                    "them: not applied, judged on its results");
}

// The sweep file edited between looks: two arms' names swapped, or the stopped arm renamed. The set of
// run ids is the same, so --eliminate goes on — and the stop stays with the runs it judged, never with
// the name (which would stop the arm never judged and train the stopped one again).
TEST_CASE("eliminate live: a stop follows its runs — two arms' names swapped, the stopped arm renamed") {
  const ReportInput in = stopped_study();
  const EliminationDesign& d = *in.design.eliminate;
  ReportInput swapped = in;
  std::swap(swapped.variants[1].name, swapped.variants[2].name);  // "same" now holds the stopped runs
  std::vector<std::string> notes;
  std::vector<VariantStats> stats = reported(swapped, notes);
  CHECK(stats[1].name == "same");
  CHECK(stats[1].verdict == Verdict::worse);      // the runs the look stopped
  CHECK(stats[2].verdict == Verdict::no_result);  // never judged: not stopped
  CHECK(stop_of(swapped, swapped.variants[2]) == nullptr);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("--eliminate stopped `same` (stopped as `worse`) before the end of training") == 0);
  CHECK(d.stop_of("worse-2") == &d.stopped[0]);
  CHECK(d.stop_of("same-2") == nullptr);
  ReportInput renamed = in;
  renamed.variants[1].name = "worse-renamed";
  notes.clear();
  stats = reported(renamed, notes);
  CHECK(stats[1].verdict == Verdict::worse);
  CHECK(notes[0].find("--eliminate stopped `worse-renamed` (stopped as `worse`)") == 0);
}

// Every Δ was judged against the baseline's runs: with another baseline (the file's baseline: now an
// arm's name) no stop applies — and a stop never applies to the baseline itself.
TEST_CASE("eliminate live: stops judged against another baseline than the file's now are not applied") {
  const ReportInput in = stopped_study();
  std::vector<std::string> notes;
  CHECK(reported(in, notes)[1].verdict == Verdict::worse);  // the baseline it was judged against
  ReportInput other = in;
  other.baseline = "same";  // the file's baseline is now an arm
  notes.clear();
  std::vector<VariantStats> stats = reported(other, notes);
  CHECK(stats[1].verdict == Verdict::no_result);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "--eliminate's record stopped runs of `worse`, judged against another baseline than the sweep "
                    "file's now: not applied, judged on its results");
  ReportInput stopped_base = in;
  stopped_base.baseline = "worse";  // the stopped arm made the baseline
  notes.clear();
  stats = reported(stopped_base, notes);
  CHECK(stats[1].verdict == Verdict::baseline);
  CHECK(stop_of(stopped_base, stopped_base.variants[1]) == nullptr);
}

TEST_CASE("eliminate live: a sweep's record of the looks goes to JSON and back") {
  EliminationDesign d;
  d.settings.looks = {0.25, 0.6};
  d.settings.kept = {0.3, 0.5};
  d.looks_taken = 1;
  d.delta = 0.005;
  d.runs = {"a", "b"};
  d.stopped.push_back({true, 0, 0.25, -0.12, -0.06, -0.0167, 3, {"b"}, "weight-tying"});
  const EliminationDesign back = EliminationDesign::from_json(nlohmann::json::parse(d.to_json().dump()));
  CHECK(back.settings.looks == d.settings.looks);
  CHECK(back.settings.kept == d.settings.kept);
  CHECK(back.settings.span == d.settings.span);
  CHECK(back.looks_taken == 1);
  REQUIRE(back.stopped.size() == 1);
  CHECK(back.stopped[0].arm == "weight-tying");
  CHECK(back.stopped[0].upper == -0.06);
  CHECK(back.stopped[0].seeds == 3);
  CHECK(back.stopped[0].runs == std::vector<std::string>{"b"});
  CHECK(back.stop_of("b") == &back.stopped[0]);
  CHECK(back.stop_of("a") == nullptr);
  CHECK(back.delta == 0.005);
  CHECK(back.runs == d.runs);
  CHECK_THROWS(EliminationDesign::from_json(nlohmann::json::parse(R"({"looks": [0.3]})")));
  // an older record: the stops keyed by the arm's name, its runs unsorted
  const EliminationDesign old = EliminationDesign::from_json(nlohmann::json::parse(
      R"({"looks": [0.3], "kept": [0.2], "span": 0.05, "alpha": 0.05, "min_effect": 0.01, "runs": ["a", "b", "c"],
          "looks_taken": 1, "stopped": {"clip": {"look": 0, "fraction": 0.3, "delta": -0.1, "upper": -0.08,
          "threshold": -0.05, "seeds": 2, "runs": ["c", "b"]}}})"));
  REQUIRE(old.stopped.size() == 1);
  CHECK(old.stopped[0].arm == "clip");
  CHECK(old.stop_of("b") == &old.stopped[0]);
  CHECK(old.stop_of("c") == &old.stopped[0]);
  CHECK(old.stop_of("a") == nullptr);
}
