// Pooling an intervention across settings (report/pool/meta.h, report/pool/pool.h): the random-
// effects figures against statsmodels 0.15's combine_effects(method_re="pm") and its
// Hartung–Knapp interval, the Q-profile and prediction intervals against scipy (brentq on the
// generalised Q, t and χ² quantiles), to 1e-10; the verdicts; and the calibration's smoke test.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "report/calibration/pool_calibration.h"
#include "report/pool/from_report.h"
#include "report/pool/meta.h"
#include "report/pool/pool.h"
#include "report/stats.h"

using namespace sweep;

namespace {

struct Expected {
  double mean, tau2, se, ci_low, ci_high, q, q_p, tau2_low, tau2_high, pi_low, pi_high, p;
};

void check(const MetaResult& m, const Expected& e) {
  CHECK(m.mean == doctest::Approx(e.mean).epsilon(1e-10));
  CHECK(m.tau2 == doctest::Approx(e.tau2).epsilon(1e-10).scale(1e-12));
  // statsmodels' Hartung–Knapp interval, before the floor of its factor at 1
  CHECK(m.hk_se == doctest::Approx(e.se).epsilon(1e-10));
  const double t = t_quantile(0.95, static_cast<double>(m.k - 1));
  CHECK(m.mean - t * m.hk_se == doctest::Approx(e.ci_low).epsilon(1e-10));
  CHECK(m.mean + t * m.hk_se == doctest::Approx(e.ci_high).epsilon(1e-10));
  // floored: never narrower than the fixed-weight one
  CHECK(m.se >= m.hk_se);
  CHECK(m.ci_low == doctest::Approx(m.mean - t * m.se).epsilon(1e-12));
  CHECK(m.q == doctest::Approx(e.q).epsilon(1e-10));
  CHECK(m.q_p == doctest::Approx(e.q_p).epsilon(1e-9));
  CHECK(m.tau2_low == doctest::Approx(e.tau2_low).epsilon(1e-10).scale(1e-12));
  CHECK(m.tau2_high == doctest::Approx(e.tau2_high).epsilon(1e-10));
  CHECK(m.hts_pi_low == doctest::Approx(e.pi_low).epsilon(1e-10));
  CHECK(m.hts_pi_high == doctest::Approx(e.pi_high).epsilon(1e-10));
  if (m.se == m.hk_se) {  // the factor above 1: statsmodels' p
    CHECK(m.p == doctest::Approx(e.p).epsilon(1e-9));
  } else {
    CHECK(m.p > e.p);
  }
}

}  // namespace

TEST_CASE("pool: random effects against statsmodels' Paule–Mandel and Hartung–Knapp, 6 settings with some spread") {
  const MetaResult m =
      random_effects({0.030, 0.028, 0.045, 0.035, 0.032, 0.043}, {0.004, 0.006, 0.008, 0.005, 0.007, 0.003});
  CHECK(m.k == 6);
  check(m, {0.03567505239598446, 2.0309810727584724e-05, 0.0027975208311190854, 0.028483796162695533,
            0.04286630862927339, 10.960844308272323, 0.05216187627776522, 0.0, 0.0002587719411485854,
            0.020947866939755685, 0.05040223785221323, 5.274141632156095e-05});
}

TEST_CASE("pool: random effects with no spread beyond the seeds' — τ² = 0 and its interval from 0") {
  const MetaResult m = random_effects({0.030, 0.028, 0.032}, {0.004, 0.006, 0.008});
  check(m, {0.029770491803278686, 0.0, 0.0008906936201446638, 0.025938146467192818, 0.03360283713936456,
            0.1680327868852487, 0.9194161835751264, 0.0, 0.00010847263931875844, 0.018453156308515975,
            0.0410878272980414, 0.0008939269275457409});
}

TEST_CASE("pool: random effects with a large spread — τ² where Q = k − 1 (scipy's brentq)") {
  // statsmodels 0.15's iterated Paule–Mandel stops at τ² = 0 here (a Newton step overshoots and its
  // loop reads the negative estimating equation as "τ² = 0"): the reference solves the equation itself
  const MetaResult m = random_effects({0.01, 0.05, 0.03, 0.07, 0.02}, {0.004, 0.005, 0.006, 0.004, 0.005});
  check(m, {0.036046870482844905, 0.0005619636217944377, 0.01082100640495154, 0.00600294021650323,
            0.06609080074918658, 133.30429594272078, 7.649296920709542e-28, 0.00019020813105059765,
            0.00477118631075681, -0.04688366247477952, 0.11897740344046934, 0.02907327737634605});
}

TEST_CASE("pool: verdicts — 2 settings never hold, a prediction interval off 0 holds, shown spread varies") {
  const auto judged = [](const std::vector<double>& y, const std::vector<double>& se) {
    PooledIntervention p;
    for (size_t i = 0; i < y.size(); ++i) {
      p.settings.push_back({"s" + std::to_string(i), "", "", y[i], se[i], 6});
    }
    p.meta = pool_effects(p.settings);
    judge_pooled(p, 0.05);
    return p;
  };
  const PooledIntervention two = judged({0.03, 0.031}, {0.001, 0.001});
  CHECK(std::isnan(two.meta.pi_low));
  CHECK(two.verdict == PoolVerdict::undecided);
  CHECK(two.why == "2 settings: no prediction interval for a new one (it needs 3)");
  const PooledIntervention holds = judged({0.030, 0.028, 0.032, 0.031}, {0.002, 0.002, 0.002, 0.002});
  CHECK(holds.verdict == PoolVerdict::holds);
  CHECK(holds.why.find("better in a new setting like these: [+0.0") == 0);
  const PooledIntervention varies = judged({0.01, 0.05, 0.03, 0.07, 0.02}, {0.004, 0.005, 0.006, 0.004, 0.005});
  CHECK(varies.meta.spread_p < 0.001);
  CHECK(varies.verdict == PoolVerdict::varies);
  CHECK(varies.why.find("Welch's test p") != std::string::npos);
  const PooledIntervention unsure = judged({0.01, -0.01, 0.005}, {0.01, 0.01, 0.01});
  CHECK(unsure.meta.spread_p > 0.05);
  CHECK(unsure.verdict == PoolVerdict::undecided);
}

TEST_CASE("pool: Welch's ANOVA against statsmodels' anova_oneway(use_var='unequal') on the raw seeds") {
  // groups {.031 .027 .036} {.020 .024 .019 .022} {.045 .030 .041} {.028 .033 .026 .031 .029}: their means,
  // standard errors (sd/√n) and sizes; statsmodels 0.15 on the raw values: F 9.975232359934765, p
  // 0.01745240604705269 on (3, 4.686328842123275) degrees of freedom
  const auto [f, p] =
      welch_anova({0.03133333333333333, 0.021249999999999998, 0.03866666666666666, 0.0294},
                  {0.0026034165586355505, 0.0011086778913041726, 0.00448454134902457, 0.0012083045973594576},
                  {3, 4, 3, 5});
  CHECK(f == doctest::Approx(9.975232359934765).epsilon(1e-10));
  CHECK(p == doctest::Approx(0.01745240604705269).epsilon(1e-9));
}

TEST_CASE("pool: settings that agree more closely than their errors allow — no narrower than fixed weights") {
  // three settings 0.0003 apart, each with a standard error of 0.02 (its 95% interval holds 0):
  // Hartung–Knapp's factor Σw(y − μ)²/(k − 1) is about 0.0002, and its interval alone would exclude 0;
  // floored at 1, the pooled standard error is 0.02/√3
  const MetaResult m = random_effects({0.0300, 0.0303, 0.0297}, {0.02, 0.02, 0.02});
  CHECK(m.tau2 == 0);
  CHECK(m.hk_se < 0.0003);
  CHECK(m.se == doctest::Approx(0.02 / std::sqrt(3.0)).epsilon(1e-12));
  CHECK(m.ci_low < 0);  // as each setting's own interval holds 0
}

TEST_CASE("pool: the prediction interval from τ²'s confidence distribution — its limits by hand") {
  // settings that agree exactly: Q(0) = 0 and every τ² drawn is 0; the pooled mean's error is its
  // floored Hartung–Knapp one, t₃·√(1/Σw) = t₃·0.002278 (unfloored it was 0: the collapse), so the
  // interval for what a new setting measures is the quantiles of the mean + 0.01·z + 0.002278·t₃,
  // ±0.020936 (2·10⁷ draws in numpy)
  const auto [low, high] =
      predictive_interval({0.03, 0.03, 0.03, 0.03}, {0.004, 0.005, 0.006, 0.004}, 0.95, 0.01 * 0.01);
  CHECK(0.03 - low == doctest::Approx(0.020936).epsilon(0.03));
  CHECK(high - 0.03 == doctest::Approx(0.020936).epsilon(0.03));
  // settings far apart with tiny errors: τ² is drawn as S / q, q ~ χ²_{k−1} (S the squared deviations
  // from ȳ), so a new setting's spread τ·z is s·z·√((k−1)/q) (s² = S / (k − 1)), and the mean's
  // Hartung–Knapp error, its factor q/(k − 1) floored at 1, s·t'·√max(1, (k−1)/q)/√k with t' on k − 1
  // degrees of freedom: the limits are the quantiles of ȳ + s·(z·√((k−1)/q) + t'·√max(1, (k−1)/q)/√k),
  // ±5.199 here (2·10⁷ draws in numpy; unfloored, as Nagashima et al., ±4.806); from 10⁴ draws, within 4%
  const std::vector<double> y{0.0, 1.0, 2.0, 3.0, 4.0};  // ȳ 2, s² 2.5
  const auto [lo2, hi2] = predictive_interval(y, std::vector<double>(5, 1e-6));
  CHECK(hi2 - 2 == doctest::Approx(5.199).epsilon(0.04));
  CHECK(2 - lo2 == doctest::Approx(5.199).epsilon(0.04));
  // the same settings give the same interval; fewer than 3 give none
  CHECK(predictive_interval(y, std::vector<double>(5, 1e-6)).first == lo2);
  CHECK(std::isnan(predictive_interval({0.1, 0.2}, {0.01, 0.01}).first));
}

TEST_CASE("pool: calibration smoke test — the pooled test near 5% with no effect, the prediction interval near 95%") {
  PoolCalibrationSetup s;
  s.ks = {5};
  s.taus = {0, 2};
  s.replicates = 250;  // (deterministic: seed 1)
  const auto rows = calibrate_pool(s);
  REQUIRE(rows.size() == 10);  // 5 precisions, 2 values of τ
  for (const auto& r : rows) {
    CAPTURE(r.tau);
    CAPTURE(r.precision);
    if (r.precision == "identical settings") {  // one setting, counted once: nothing pooled
      CHECK(r.false_positive == 0);
      CHECK(r.false_holds == 0);
      CHECK(std::isnan(r.pi_coverage));
      continue;
    }
    CHECK(r.false_positive < 0.10);
    CHECK(r.pi_coverage > 0.88);
    CHECK(r.false_holds < 0.05);
    if (r.tau == 0) {
      CHECK(r.varies < 0.10);
    }
  }
}

namespace {

// A report.json as `sweep report --out` writes it, cut to what pooling reads.
nlohmann::json variant_json(const std::string& name, const std::string& rung, bool baseline, double improvement,
                            double se, int seeds, const std::vector<std::string>& runs) {
  nlohmann::json detail = nlohmann::json::array();
  for (const auto& r : runs) {
    detail.push_back({{"run_id", r}, {"value", 3.0}});
  }
  nlohmann::json v{{"name", name},         {"baseline", baseline}, {"seeds", seeds},
                   {"improvement", improvement}, {"seed_se", se},  {"runs_detail", detail}};
  v["rung"] = rung.empty() ? nlohmann::json(nullptr) : nlohmann::json(rung);
  return v;
}

}  // namespace

TEST_CASE("pool: a study read from its report.json — rungs as settings, old reports' names, what is left out") {
  nlohmann::json ladder{{"sweep", "ladder"}, {"metric", "test_loss"}, {"variants", nlohmann::json::array()}};
  auto& v = ladder["variants"];
  v.push_back(variant_json("baseline+s", "s", true, 0, 0, 3, {"b1", "b2", "b3"}));
  v.push_back(variant_json("dropout+s", "s", false, 0.03, 0.004, 3, {"d1", "d2", "d3"}));
  v.push_back(variant_json("clip+s", "s", false, 0.0, 0.0, 3, {"c1", "c2", "c3"}));
  v.push_back(variant_json("baseline+m", "m", true, 0, 0, 0, {}));
  v.push_back(variant_json("dropout+m", "m", false, 0.04, 0.004, 3, {"e1"}));
  const Measured m = measure_report(ladder, "reports/ladder/report.json", Metric{});
  REQUIRE(m.settings == std::vector<std::string>{"ladder/s"});  // rung m has no finished baseline run
  REQUIRE(m.measured.size() == 1);
  CHECK(m.measured[0].intervention == "dropout");  // an older report: "name+rung" read as the name
  CHECK(m.measured[0].setting == "ladder/s");
  CHECK(m.measured[0].effect == doctest::Approx(0.03));
  CHECK(m.measured[0].runs == std::set<std::string>{"d1", "d2", "d3"});
  CHECK(m.measured[0].baseline_runs == std::set<std::string>{"b1", "b2", "b3"});
  REQUIRE(m.notes.size() == 2);
  CHECK(m.notes[0].find("clip left out — its improvement is the same on every seed") != std::string::npos);
  CHECK(m.notes[1] == "ladder/m: no finished baseline run — left out");
  CHECK(report_runs(ladder).size() == 10);

  // a newer report names the intervention and the grid point: a point off the baseline's is not pooled
  nlohmann::json grid{{"sweep", "grid"}, {"metric", "test_loss"}, {"variants", nlohmann::json::array()}};
  auto& g = grid["variants"];
  g.push_back(variant_json("baseline", "", true, 0, 0, 3, {"b1"}));
  g.push_back(variant_json("wd@0.1", "", false, 0.01, 0.002, 3, {"w1"}));
  g.push_back(variant_json("wd@0.3", "", false, 0.02, 0.002, 3, {"w2"}));
  g[0]["axes"] = {{"lr", "0.001"}};
  g[1]["axes"] = {{"lr", "0.001"}};
  g[2]["axes"] = {{"lr", "0.003"}};
  g[1]["intervention"] = g[2]["intervention"] = "wd";
  const Measured gm = measure_report(grid, "grid.json", Metric{});
  REQUIRE(gm.measured.size() == 1);
  CHECK(gm.measured[0].intervention == "wd");
  CHECK(gm.measured[0].variant == "wd@0.1");

  // a variant without a name, a baseline flag that is no boolean, a standard error that is no number: left out, said
  nlohmann::json odd{{"sweep", "odd"}, {"metric", "test_loss"}, {"variants", nlohmann::json::array()}};
  odd["variants"].push_back(variant_json("baseline", "", true, 0, 0, 3, {"b1"}));
  odd["variants"].push_back(variant_json("", "", false, 0.01, 0.002, 3, {"x1"}));
  odd["variants"].push_back(variant_json("huge", "", false, 0.01, 1e300, 3, {"h1"}));
  odd["variants"].push_back(variant_json("flag", "", false, 0.01, 0.002, 3, {"f1"}));
  odd["variants"][3]["baseline"] = "yes";
  const Measured om = measure_report(odd, "odd.json", Metric{});
  REQUIRE(om.measured.size() == 1);
  CHECK(om.measured[0].variant == "flag");  // "yes" is no baseline: an arm
  REQUIRE(om.notes.size() == 2);
  CHECK(om.notes[0] == "odd: a variant without a name — left out");
  CHECK(om.notes[1] == "odd: huge left out — its standard error (1e+300) is no spread of seeds");
  const Measured none = measure_report({{"sweep", "e"}, {"metric", "test_loss"}, {"variants", nlohmann::json::array()}},
                                       "e.json", Metric{});
  REQUIRE(none.notes.size() == 1);
  CHECK(none.notes[0] == "e (e.json): no variant — nothing to pool");

  // bad input: another metric, not a report
  grid["metric"] = "val_loss";
  CHECK_THROWS_WITH(measure_report(grid, "grid.json", Metric{}),
                    doctest::Contains("on val_loss, not test_loss — pool with --metric val_loss"));
  CHECK_THROWS_WITH(measure_report(nlohmann::json::array(), "x.json", Metric{}),
                    doctest::Contains("x.json: not a sweep report"));
  CHECK_THROWS_WITH(measure_report(nlohmann::json{{"sweep", "s"}, {"variants", 3}}, "x.json", Metric{}),
                    doctest::Contains("not a sweep report"));
}

namespace {

// A setting's measurement of intervention "x": per-seed improvements `d` over a baseline of 3.0 +
// 0.01·j on seeds j = 1..n (each seed's baseline its own, as trained runs' are), its runs named by
// `runs` (empty: none).
PoolSetting measured_as(const std::string& setting, const std::vector<double>& d, const std::string& runs = "") {
  PoolSetting s{setting, "x", "x", 0, 0, static_cast<int64_t>(d.size())};
  for (size_t j = 0; j < d.size(); ++j) {
    const double base = 3.0 + 0.01 * static_cast<double>(j + 1);
    s.values[{int64_t(j) + 1, int64_t(j) + 1}] = base - d[j];
    s.baseline_values[{int64_t(j) + 1, int64_t(j) + 1}] = base;
    if (!runs.empty()) {
      s.runs.insert(runs + std::to_string(j));
      s.baseline_runs.insert(runs + "-base" + std::to_string(j));
    }
  }
  const Summary sm = summarize(d);
  s.effect = sm.mean;
  s.se = sm.sd / std::sqrt(static_cast<double>(d.size()));
  s.runs_planned = static_cast<int64_t>(d.size());
  return s;
}

Pool pooled_from(const std::vector<PoolSetting>& settings) {
  Measured m;
  for (const auto& s : settings) {
    m.settings.push_back(s.setting);
    m.measured.push_back(s);
  }
  return pool_measured({m}, Metric{});
}

}  // namespace

TEST_CASE("pool: settings with the same per-seed results are one setting — a null arm never 'holds' by copies") {
  // three sweeps that differ only in a key that does not change training (eval.every): other run ids,
  // the same losses on every seed. Counted three times, their pooled interval was a third as wide and
  // every draw of the prediction interval sat on the mean ("holds across settings: [-0.0060, -0.0060]")
  const std::vector<double> d{-0.031, 0.012, 0.001};
  const Pool pool = pooled_from({measured_as("a", d, "a"), measured_as("b", d, "b"), measured_as("c", d, "c")});
  CHECK(pool.pooled.empty());
  REQUIRE(pool.notes.size() == 3);
  CHECK(pool.notes[0] == "x: b has the same per-seed results, to 9 digits, as a — one setting, counted once");
  CHECK(pool.notes[1] == "x: c has the same per-seed results, to 9 digits, as a — one setting, counted once");
  CHECK(pool.notes[2] == "x: measured in one setting (a) — not pooled");
  // the same runs in two settings: said as that
  const Pool runs = pooled_from({measured_as("a", d, "a"), measured_as("b", d, "a")});
  CHECK(runs.notes[0] == "x: b has the same runs as a — one setting, counted once");
  // one digit apart is another measurement
  const Pool other = pooled_from({measured_as("a", d), measured_as("b", {-0.031, 0.012, 0.0010001})});
  REQUIRE(other.pooled.size() == 1);
  CHECK(other.pooled[0].meta.k == 2);
}

TEST_CASE("pool: an intervention listed twice in one setting counts once") {
  PoolSetting second = measured_as("a", {0.02, 0.01, 0.03});
  second.variant = "x-again";
  const Pool pool = pooled_from({measured_as("a", {0.01, 0.02, 0.0}), second, measured_as("b", {0.0, 0.01, 0.02})});
  REQUIRE(pool.pooled.size() == 1);
  CHECK(pool.pooled[0].meta.k == 2);
  CHECK(pool.notes[0] == "x: listed twice in a (variants `x` and `x-again`) — the first counted, a setting is one "
                         "measurement");
}

TEST_CASE("pool: near-copies of one study — the prediction interval does not collapse onto the mean") {
  // report.json copies 1e-5 apart, each undecided on its own (±0.01): Hartung–Knapp's factor is ~1e-6, and
  // unfloored in the draws every draw sat on μ̂ ("holds across settings — worse: [-0.0060, -0.0060]")
  PooledIntervention p;
  for (int i = 0; i < 3; ++i) {
    p.settings.push_back({"s" + std::to_string(i), "x", "x", -0.0060 + 1e-5 * i, 0.01, 3});
  }
  p.meta = pool_effects(p.settings);
  judge_pooled(p, 0.05);
  CHECK(p.verdict == PoolVerdict::undecided);
  CHECK(p.meta.pi_low <= p.meta.ci_low);
  CHECK(p.meta.pi_high >= p.meta.ci_high);
  CHECK(p.meta.ci_high - p.meta.ci_low > 0.04);  // ±t₂·0.01/√3: the floored interval, never the copies' spread
  CHECK(p.meta.pi_high - p.meta.pi_low > 0.04);
}

TEST_CASE("pool: property — the prediction interval is never narrower than its own pooled interval") {
  // random settings: from copies 1e-9 apart to spreads 30× their errors, 2 to 10^6 seeds, k 3 to 8
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int k = 3 + static_cast<int>(u(rng) * 6);
    const double spread = std::pow(10.0, -9 + 10.5 * u(rng));
    std::vector<PoolSetting> settings;
    for (int i = 0; i < k; ++i) {
      const auto seeds = static_cast<int64_t>(std::pow(10.0, 0.3 + 5.7 * u(rng)));
      const double se = 0.01 * std::pow(10.0, -2 + 2 * u(rng)) / std::sqrt(static_cast<double>(seeds));
      settings.push_back({"s" + std::to_string(i), "x", "x", 0.001 + spread * se * (u(rng) - 0.5), se,
                          std::max<int64_t>(seeds, 2)});
    }
    const MetaResult m = pool_effects(settings);
    CAPTURE(trial);
    REQUIRE(std::isfinite(m.pi_low));
    CHECK(m.pi_low <= m.ci_low);
    CHECK(m.pi_high >= m.ci_high);
    ++checked;
  }
  CHECK(checked == 300);
}

TEST_CASE("pool: what is left out and why — a diverged arm, one --eliminate stopped, an error next to nothing") {
  PoolSetting diverged = measured_as("a", {0.05, 0.06});
  diverged.runs_planned = 3;
  diverged.diverged = 1;
  CHECK(unpoolable(diverged) == "a: x left out — 1 of 3 runs diverged, and an arm is never judged on its survivors "
                                "(its report says `diverged`)");
  PoolSetting stopped = measured_as("a", {-0.05, -0.06});
  stopped.eliminated = "stopped at 30% of training: Δ -0.0550, bound -0.0400 < -0.0250";
  CHECK(unpoolable(stopped) == "a: x left out — --eliminate stopped at 30% of training: Δ -0.0550, bound -0.0400 < "
                               "-0.0250; its runs have no final result to pool (`sweep run` without --eliminate "
                               "trains them to the end)");
  PoolSetting unfinished{"a", "x", "x", k_nan, k_nan, 0};
  CHECK(unpoolable(unfinished) == "a: x left out — no finished run of it is paired with a finished baseline run yet");
  // a standard error of 1e-100 beside ones of 0.005: the same on every seed, left out as an error of 0 is
  // (weighed by it, Welch's test gave "varies (p 0)")
  PoolSetting tiny = measured_as("c", {0.01, 0.01, 0.01});
  tiny.se = 1e-100;
  const Pool pool = pooled_from({measured_as("a", {0.01, 0.02, 0.0}), measured_as("b", {0.0, 0.01, 0.02}), tiny,
                                 measured_as("d", {0.02, 0.0, 0.01})});
  REQUIRE(pool.pooled.size() == 1);
  CHECK(pool.pooled[0].meta.k == 3);
  CHECK(pool.pooled[0].verdict != PoolVerdict::varies);
  CHECK(pool.notes[0] == "c: x left out — its standard error (1e-100) is under a thousandth of its settings' "
                         "largest (0.00577): the same improvement on every seed up to rounding, as an error of 0 is");
}

TEST_CASE("pool: a report.json's diverged and stopped arms, and per-seed values, read as from its runs") {
  nlohmann::json r{{"sweep", "s"}, {"metric", "test_loss"}, {"variants", nlohmann::json::array()}};
  auto& v = r["variants"];
  v.push_back(variant_json("baseline", "", true, 0, 0, 2, {"b1", "b2"}));
  v.push_back(variant_json("blowup", "", false, 0.02, 0.004, 2, {"u1", "u2"}));
  v.push_back(variant_json("late", "", false, -0.05, k_nan, 2, {"l1", "l2"}));
  v.push_back(variant_json("tuned", "", false, 0.01, 0.004, 2, {"t1", "t2"}));
  v[0]["runs_detail"][0]["init_seed"] = v[0]["runs_detail"][0]["data_seed"] = 1;
  v[0]["runs_detail"][1]["init_seed"] = v[0]["runs_detail"][1]["data_seed"] = 2;
  v[1]["diverged"] = 1;
  v[1]["runs"] = 3;
  v[2]["stopped"] = "stopped at 30% of training: Δ -0.0500, bound -0.0400 < -0.0250";
  v[3]["stopped"] = "decided at 2 seeds";  // --until-decided's, beside its looks: pooled
  v[3]["looks"] = {2};
  const Measured m = measure_report(r, "s.json", Metric{});
  REQUIRE(m.measured.size() == 1);
  CHECK(m.measured[0].variant == "tuned");
  CHECK(m.measured[0].baseline_values == std::map<SeedKey, double>{{{1, 1}, 3.0}, {{2, 2}, 3.0}});
  REQUIRE(m.notes.size() == 2);
  CHECK(m.notes[0].find("s: blowup left out — 1 of 3 runs diverged") == 0);
  CHECK(m.notes[1].find("s: late left out — --eliminate stopped at 30% of training") == 0);
}

TEST_CASE("pool: copies under other labels are one setting — seeds renamed, values rounded, the same training") {
  const std::vector<double> d{0.031, -0.012, 0.001};
  // the same per-seed results under seeds 7, 8, 9, and 1e-12 apart (a report.json copied and edited)
  PoolSetting renamed = measured_as("b", d, "b");
  renamed.values.clear();
  renamed.baseline_values.clear();
  const PoolSetting a = measured_as("a", d, "a");
  int64_t seed = 7;
  for (const auto& [key, value] : a.values) {
    renamed.values[{seed, seed}] = value + 1e-12;
    renamed.baseline_values[{seed, seed}] = a.baseline_values.at(key);
    ++seed;
  }
  CHECK(same_measurement(a, renamed));
  // the same training read on another metric (val_last3 of runs that differ only in eval.every):
  // other values, the same test losses
  PoolSetting other_metric = measured_as("c", {0.02, -0.01, 0.0}, "c");
  PoolSetting first = a;
  first.test_values = {{{1, 1}, 2.9}, {{2, 2}, 3.1}, {{3, 3}, 3.0}};
  first.baseline_test_values = {{{1, 1}, 2.95}, {{2, 2}, 3.12}, {{3, 3}, 3.01}};
  other_metric.test_values = first.test_values;
  other_metric.baseline_test_values = first.baseline_test_values;
  CHECK(same_measurement(first, other_metric));
  other_metric.test_values[{2, 2}] = 3.1001;
  CHECK_FALSE(same_measurement(first, other_metric));
  const Pool pool = pooled_from({a, renamed, measured_as("c", d, "c")});
  CHECK(pool.pooled.empty());
}

TEST_CASE("pool: settings that share runs of the arm are one experiment — the one with more seeds counted") {
  // a sweep and its copies with a fourth seed each: 3 of their 4 runs the same
  PoolSetting three = measured_as("s3", {0.02, 0.01, 0.03}, "r");
  PoolSetting four = measured_as("s4", {0.02, 0.01, 0.03, 0.025}, "r");
  PoolSetting other = measured_as("s5", {0.0, 0.01, -0.01}, "q");
  const Pool pool = pooled_from({three, four, other});
  REQUIRE(pool.pooled.size() == 1);
  CHECK(pool.pooled[0].meta.k == 2);
  CHECK(pool.pooled[0].settings[0].setting == "s4");
  CHECK(pool.notes[0] == "x: s4 and s3 share runs of the arm — one experiment, counted once (s4, with more seeds)");
}

TEST_CASE("pool: errors next to nothing in most settings are still left out — by the largest, and by rounding") {
  // two of three settings with standard errors of 6e-9 (an arm that changes a loss's rounding), one of
  // 0.0058: by the median nothing was left out, and Welch's test said "varies" (p 0.00015)
  const Pool pool = pooled_from({measured_as("t1", {1e-7, 1.1e-7, 0.9e-7}), measured_as("t2", {3e-7, 3.1e-7, 2.9e-7}),
                                 measured_as("t3", {0.0, 0.02, 0.01})});
  CHECK(pool.pooled.empty());
  REQUIRE(pool.notes.size() == 3);
  CHECK(pool.notes[0].find("t1: x left out — its standard error (5.77e-09) is under a thousandth of its settings' "
                           "largest (0.00577)") == 0);
  // every setting that small: the floor by the baseline's loss (3.02 here, a millionth: 3e-6)
  const Pool tiny = pooled_from({measured_as("t1", {1e-7, 1.1e-7, 0.9e-7}), measured_as("t2", {3e-7, 3.1e-7, 2.9e-7}),
                                 measured_as("t4", {2e-7, 2.2e-7, 1.9e-7})});
  CHECK(tiny.pooled.empty());
  CHECK(tiny.notes[0].find("under a millionth of its baseline's loss (3.02)") != std::string::npos);
}

TEST_CASE("pool: a setting whose baseline has a diverged run is left out whole, from runs and from report.json") {
  nlohmann::json r{{"sweep", "s"}, {"metric", "test_loss"}, {"variants", nlohmann::json::array()}};
  r["variants"].push_back(variant_json("baseline", "", true, 0, 0, 2, {"b1", "b2"}));
  r["variants"].push_back(variant_json("arm", "", false, 0.02, 0.004, 2, {"a1", "a2"}));
  r["variants"][0]["diverged"] = 1;
  r["variants"][0]["runs"] = 3;
  const Measured m = measure_report(r, "s.json", Metric{});
  CHECK(m.measured.empty());
  CHECK(m.settings.empty());
  REQUIRE(m.notes.size() == 1);
  CHECK(m.notes[0] == "s: left out — 1 of 3 runs of its baseline diverged, and its survivors are no baseline to "
                      "judge an arm by");
}
