// sweep run --until-decided, end to end on the real runner and database with an executor whose
// workers "train" instantly: each run's test loss is drawn from a known distribution (a shared
// per-seed noise, the variant's true effect, its own noise). The loop must add seeds only to the
// interventions still undecided (and the baseline), stop each at its deciding look, cap the rest,
// and replay to the same state without training anything again. And the calibration simulation:
// the verdicts' error rates on synthetic studies, within binomial tolerances.
#include <doctest/doctest.h>

#include <unistd.h>

#include <map>
#include <random>

#include "config/load_sweep.h"
#include "helpers.h"
#include "report/analysis.h"
#include "report/analyze.h"
#include "report/calibration/calibration.h"
#include "report/load.h"
#include "report/until_decided.h"
#include "sched/runner.h"
#include "store/store.h"

using namespace sweep;

namespace {

std::string fmt_loss(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Runs finish at the next poll with a loss drawn for their variant and seed.
class DrawnExecutor : public Executor {
 public:
  explicit DrawnExecutor(std::vector<std::vector<std::string>>& rounds) : rounds(rounds) { rounds = {{}}; }
  std::map<std::string, std::pair<double, double>> truth;  // variant -> (effect, own noise sd)
  std::vector<std::vector<std::string>>& rounds;           // variants started, per poll that ended some
  std::string describe() const override { return "drawn"; }
  std::optional<std::string> adopt(const RunRow&, const PlannedRun*) override { return std::nullopt; }
  bool can_start(const PlannedRun&) const override { return true; }
  std::optional<int64_t> start(const PlannedRun& run, const RunRow&, std::optional<int64_t>,
                               std::string& where) override {
    where = "nowhere";
    m_running.push_back(&run);
    return ::getpid();
  }
  Observed poll() override {
    Observed seen;
    for (const PlannedRun* run : m_running) {
      const int64_t seed = run->config.seeds.init;
      std::mt19937_64 shared(static_cast<uint64_t>(seed)), own(static_cast<uint64_t>(seed) * 7919 + std::hash<std::string>()(run->variant));
      std::normal_distribution<double> shared_noise, own_noise;  // one each: a distribution caches its second draw
      const auto [effect, sd] = truth.at(run->variant);
      const double loss = 3.0 + 0.02 * shared_noise(shared) - effect + sd * own_noise(own);
      seen.events.push_back({run->run_id,
                             {R"({"event":"start","step":0,"total_steps":1,"numerics":2})",
                              R"({"event":"end","status":"done","step":1,"test_loss":)" + fmt_loss(loss) + "}"}});
      seen.ended.push_back(WorkerEnd{run->run_id, 0, false, "", "", ""});
      rounds.back().push_back(run->variant);
    }
    if (!m_running.empty()) {
      rounds.emplace_back();
    }
    m_running.clear();
    return seen;
  }
  void kill(const std::string&) override {}  // its workers end within a poll: never stalled
  std::string stop(int) override { return "stopping"; }

 private:
  std::vector<const PlannedRun*> m_running;
};

using Truth = std::map<std::string, std::pair<double, double>>;  // variant -> (effect, own noise sd)

struct Study {
  test::TempDir dir;
  SweepSpec spec;
  Truth truth{{"base", {0, 0.0005}}, {"big", {0.1, 0.0005}}, {"none", {0, 0.0005}}, {"noisy", {0.01, 0.05}}};
  Study() : Study("min_effect: 0.01\n", "  big: {train.lr: 1e-3}\n  none: {train.lr: 2e-3}\n  noisy: {train.lr: 3e-3}\n") {}
  Study(const std::string& design, const std::string& interventions) {
    write_file_atomic(dir.path / "s.yaml",
               "sweep: s\nbaseline: base\nseeds: [1, 2, 3]\n" + design +
               "base: {data: {dataset: data}, train: {tokens: 8192}}\n"
               "interventions:\n  base: {}\n" + interventions);
    spec = load_sweep(dir.str("s.yaml"));
    spec.design.max_seeds = 9;
  }
  // One `sweep run --until-decided`: the executor's start log by round.
  std::vector<std::vector<std::string>> run() {
    std::vector<std::vector<std::string>> rounds;  // outlives the executor, which the runner owns
    auto executor = std::make_unique<DrawnExecutor>(rounds);
    executor->truth = truth;
    Store store(dir.str("sweep.db"));
    RunnerOptions o;
    o.next_round = [&store](const SweepSpec& current, std::string& why) { return next_seed_round(store, current, why); };
    CHECK(SweepRunner(spec, store, std::make_unique<ResultsLock>(dir.str()), std::move(executor), o).run() == Exit::ok);
    rounds.pop_back();  // the empty one after the last
    return rounds;
  }
};

int count(const std::vector<std::string>& v, const std::string& name) {
  return static_cast<int>(std::count(v.begin(), v.end(), name));
}

}  // namespace

TEST_CASE("until decided: seeds go only where undecided, each stops at its deciding look, the rest at the cap") {
  Study study;
  const auto rounds = study.run();
  REQUIRE(rounds.size() >= 2);
  CHECK(rounds[0].size() == 12);  // the declared 3 seeds of 4 variants
  Store store(study.dir.str("sweep.db"));
  ReportInput in = load_report_input(store, "s", Metric{}, "");
  const Analysis a = analyze(in);
  std::map<std::string, const VariantStats*> by;
  for (const auto& v : a.variants) {
    by[v.name] = &v;
  }
  CHECK(by["big"]->verdict == Verdict::better);
  CHECK(by["none"]->verdict == Verdict::equivalent);
  CHECK(by["noisy"]->verdict == Verdict::undecided);
  CHECK(by["noisy"]->seeds == 9);  // capped
  CHECK(by["noisy"]->stopped == "undecided at the cap (9 seeds)");
  CHECK(by["base"]->seeds == 9);
  for (const char* name : {"big", "none"}) {
    // decided at a look, and never given a seed after it
    const VariantStats& v = *by[name];
    CAPTURE(name);
    REQUIRE(v.stopped.rfind("decided at look ", 0) == 0);
    CHECK(v.stopped == "decided at look " + std::to_string(v.looks.size()) + " (" + std::to_string(v.seeds) + " seeds)");
    CHECK(v.seeds < 9);
  }
  // Each later round: 3 more seeds for every variant still undecided, and the baseline's with them.
  for (size_t r = 1; r < rounds.size(); ++r) {
    CAPTURE(r);
    CHECK(count(rounds[r], "base") == 3);
    CHECK(count(rounds[r], "noisy") == 3);
    for (const char* name : {"big", "none"}) {
      const int64_t seeds_before = 3 * static_cast<int64_t>(r);
      CHECK(count(rounds[r], name) == (seeds_before < by[name]->seeds ? 3 : 0));
    }
  }
  // The design is recorded with the sweep; a second run replays the rounds and trains nothing.
  CHECK(store.sweep_info("s")->design.max_seeds == 9);
  CHECK(study.run().empty());
  CHECK(static_cast<int64_t>(store.sweep_runs("s").size()) == by["base"]->seeds + by["big"]->seeds +
                                                                   by["none"]->seeds + by["noisy"]->seeds);
}

TEST_CASE("until decided with a margin: a better intervention gets seeds until its margin is shown or out of reach") {
  Study study("min_effect: 0.01\nbetter_by: 0.025\n", "  edge: {train.lr: 1e-3}\n  small: {train.lr: 2e-3}\n");
  // edge: 0.024, about the margin, better at once and its margin open at 3 seeds;
  // small: 0.012, better at once, and its margin's bound already below 0.025
  study.truth = {{"base", {0, 0.0005}}, {"edge", {0.024, 0.006}}, {"small", {0.012, 0.0005}}};
  const auto rounds = study.run();
  Store store(study.dir.str("sweep.db"));
  const Analysis a = analyze(load_report_input(store, "s", Metric{}, ""));
  REQUIRE(rounds.size() >= 2);
  CHECK(count(rounds[1], "edge") == 3);
  CHECK(count(rounds[1], "base") == 3);
  CHECK(count(rounds[1], "small") == 0);
  std::map<std::string, const VariantStats*> by;
  for (const auto& v : a.variants) {
    by[v.name] = &v;
  }
  CHECK(by["small"]->verdict == Verdict::better);
  CHECK_FALSE(by["small"]->better_by);
  CHECK(by["small"]->seeds == 3);
  CHECK(by["small"]->stopped.rfind("decided at look 1 (3 seeds); not better by > 0.025 (at most 0.01", 0) == 0);
  const VariantStats& edge = *by["edge"];
  CHECK(edge.verdict == Verdict::better);
  CHECK(edge.seeds > 3);
  CHECK_FALSE(edge.margin_open);
  CAPTURE(edge.stopped);
  CHECK(edge.stopped.rfind("decided at look 1 (3 seeds); ", 0) == 0);
  // shown at the look it stopped at, out of reach there, or still open at the cap
  const std::string at = " at look " + std::to_string(edge.looks.size());
  CHECK((edge.better_by ? edge.stopped.find("better by > 0.025" + at)
                        : std::min(edge.stopped.find("its margin open at the cap (9 seeds)"),
                                   edge.stopped.find("not better by > 0.025 (at most"))) != std::string::npos);
  // the verdict's estimate and interval are its deciding look's: the first 3 seeds'
  CHECK(edge.ci_low > 0);
  // the runner gave seeds only while the margin was open: nothing more now
  CHECK(next_round(a).empty());
}

TEST_CASE("added seeds continue the declared ones, with ids of their own") {
  Study study;
  const std::vector<PlannedRun> more = added_seed_runs(study.spec, "big", 5);
  REQUIRE(more.size() == 2);
  CHECK(more[0].config.seeds.init == 4);
  CHECK(more[1].config.seeds.data == 5);
  CHECK(more[0].variant == "big");
  CHECK(more[0].run_id == run_id_of(more[0].config, 0));
  CHECK(more[0].run_id != study.spec.runs[0].run_id);
  CHECK(added_seed_runs(study.spec, "big", 3).empty());
  CHECK(study.spec.design.looks(7) == std::vector<int64_t>{3, 6, 7});
}

TEST_CASE("calibration: false better/worse and false equivalence stay within alpha per study, and until-decided decides") {
  CalibrationSetup s;
  s.sigma = 0.0066;
  s.rho = 0.95;
  s.min_effect = 0.005;
  s.seeds = 3;
  s.max_seeds = 9;
  s.interventions = 3;
  s.effects = {0, 1};  // no effect, and exactly δ: where a claim of equivalence is false
  s.replicates = 600;
  const std::vector<CalibrationRow> rows = calibrate(s);
  REQUIRE(rows.size() == 9);  // 3 designs × (0, δ, mixed)
  // The family-wise bound, alpha, plus 3 binomial standard errors of a rate alpha over the studies.
  const double bound = 0.05 + 3 * std::sqrt(0.05 * 0.95 / 600.0);
  for (const auto& r : rows) {
    CAPTURE(r.design);
    CAPTURE(r.effect);
    CHECK(r.judged == 1800);
    CHECK(r.better + r.worse + r.equivalent + r.undecided == doctest::Approx(1.0));
    CHECK(r.seeds >= 3);
    CHECK(r.seeds <= 9);
    CHECK(r.any_false <= bound);
    if (!r.mixed && r.effect == s.min_effect) {
      CHECK(r.any_false_equivalent <= bound);
    }
  }
  const CalibrationRow& null_until = rows[2];
  CHECK(null_until.design == "until decided (pocock), 3 to 9 seeds");
  CHECK(null_until.equivalent > 0.8);
  const CalibrationRow &fixed3 = rows[3], &until = rows[5];
  CHECK(until.better > fixed3.better);
  CHECK(until.fixed_same >= 2);
  CHECK(calibration_markdown(s, rows).find("| mixed: 0δ, 1δ | until decided (pocock), 3 to 9 seeds |") != std::string::npos);
}

TEST_CASE("calibration: `better (by > m)` at a true improvement of exactly m stays within its level per study") {
  CalibrationSetup s;
  s.sigma = 0.0066;
  s.rho = 0.95;
  s.min_effect = 0.005;
  s.better_by = 0.005;  // the margin at the truth of the 1δ rows: every claim there is false
  s.better_by_alpha = 0.05;
  s.seeds = 3;
  s.max_seeds = 9;
  s.interventions = 3;
  s.effects = {1, 4};
  s.replicates = 600;
  const std::vector<CalibrationRow> rows = calibrate(s);
  REQUIRE(rows.size() == 9);  // 3 designs × (δ, 4δ, mixed)
  const double bound = 0.05 + 3 * std::sqrt(0.05 * 0.95 / 600.0);
  for (size_t k = 0; k < 3; ++k) {
    CAPTURE(rows[k].design);
    CHECK(rows[k].any_better_by <= bound);   // fixed: Holm; until decided: repeated bounds
    CHECK(rows[k + 3].better_by > 0.3);       // 4δ: shown by more than δ, often
    CHECK(rows[k + 3].better_by <= rows[k + 3].better);  // claimed of better variants only
  }
  CHECK(calibration_markdown(s, rows).find("Called better by more than m = 0.005") != std::string::npos);
}
