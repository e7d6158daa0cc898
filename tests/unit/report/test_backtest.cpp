// A ladder's backtest: each rung with 2 or more below it hidden and predicted from them — the
// trend read at the hidden rung against the single-scale rule — sign agreement, decision
// accuracy over pairs of arms and the interval's coverage, checked against hand-computed figures;
// and coverage on straight synthetic ladders.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "report/analysis.h"
#include "report/ladder/backtest.h"
#include "report/ladder/trend.h"
#include "report/render/backtest_render.h"

using namespace sweep;

namespace {

// A ladder of rungs at 10^12, 10^13, … training FLOPs (x = 12, 13, …).
LadderSummary ladder_of(size_t rungs) {
  LadderSummary l;
  for (size_t k = 0; k < rungs; ++k) {
    l.rungs.push_back({"r" + std::to_string(k), 1e6, 1e6, std::pow(10.0, 12.0 + static_cast<double>(k))});
  }
  return l;
}

// An intervention whose paired improvements at rung k are means[k] ± e (two seeds).
Trend intervention(const std::string& name, const std::vector<double>& means, double e = 0.001) {
  Trend t;
  t.intervention = name;
  for (const double m : means) {
    t.paired.push_back({m - e, m + e});
  }
  return t;
}

}  // namespace

TEST_CASE("backtest: predictions, sign agreement and decision accuracy, computed by hand") {
  LadderSummary l = ladder_of(3);
  // With 2 rungs below at x = 12, 13 the line reads 2·a1 − a0 at x = 14; the single-scale rule a1.
  // A: trend +0.01, single −0.005, measured +0.02. B: trend +0.005, single +0.003, measured −0.01.
  l.trends = {intervention("A", {-0.02, -0.005, 0.02}), intervention("B", {0.001, 0.003, -0.01})};
  const Backtest b = backtest_ladder(l, "ladder");
  REQUIRE(b.rows.size() == 1);
  const BacktestRow& r = b.rows.front();
  CHECK(r.hidden == "r2");
  CHECK(r.rungs_below == 2);
  CHECK(r.compute_ratio == doctest::Approx(0.1));
  REQUIRE(r.predictions.size() == 2);
  CHECK(r.predictions[0].trend == doctest::Approx(0.01));
  CHECK(r.predictions[0].single == doctest::Approx(-0.005));
  CHECK(r.predictions[0].measured == doctest::Approx(0.02));
  CHECK(r.predictions[1].trend == doctest::Approx(0.005));
  // signs: A agrees by the trend only; B by neither
  CHECK(r.trend_sign == doctest::Approx(0.5));
  CHECK(r.single_sign == doctest::Approx(0.0));
  // pairs (baseline, A), (baseline, B), (A, B): the trend orders 1st and 3rd as measured, the rule none
  CHECK(r.arm_pairs == 3);
  CHECK(r.trend_accuracy == doctest::Approx(2.0 / 3));
  CHECK(r.single_accuracy == doctest::Approx(0.0));
  CHECK(backtest_sentence(b.rows).find("the trend beats the single-scale rule") == 0);
  // no interval from 2 rungs below: a line through 2 points cannot show how far it bends
  CHECK(std::isnan(r.predictions[0].pi_low));
  CHECK(std::isnan(r.predictions[0].pi_high));
  CHECK(pool_backtest(b.rows).intervals == 0);
}

TEST_CASE("backtest: every rung with 2 below is hidden in turn, and too short a ladder says why") {
  LadderSummary l = ladder_of(4);
  l.trends = {intervention("A", {0.01, 0.01, 0.01, 0.01}), intervention("B", {-0.01, -0.005, 0.0, 0.005})};
  const Backtest b = backtest_ladder(l, "ladder");
  REQUIRE(b.rows.size() == 2);
  CHECK(b.rows[0].hidden == "r2");
  CHECK(b.rows[1].hidden == "r3");
  CHECK(b.rows[1].rungs_below == 3);
  CHECK(b.rows[1].coverage == doctest::Approx(1.0));  // straight lines: predicted exactly
  CHECK(b.rows[1].trend_accuracy == doctest::Approx(1.0));
  const BacktestPooled p = pool_backtest(b.rows);
  CHECK(p.predictions == 4);
  CHECK(p.arm_pairs == b.rows[0].arm_pairs + b.rows[1].arm_pairs);
  CHECK(backtest_table(b.rows).size() == 3);  // the rows and the pooled one
  // B crosses 0 at the hidden rung r2: a measured tie with the baseline is left out of the signs
  CHECK(b.rows[0].trend_sign == doctest::Approx(1.0));

  LadderSummary short_ladder = ladder_of(2);
  short_ladder.trends = {intervention("A", {0.01, 0.01})};
  const Backtest none = backtest_ladder(short_ladder, "short");
  CHECK(none.rows.empty());
  CHECK(none.why.find("the ladder has 2 rungs") != std::string::npos);
}

TEST_CASE("backtest: a rung at no more FLOPs than the one below is not hidden, and says so") {
  LadderSummary l = ladder_of(4);
  l.rungs[3].flops = l.rungs[2].flops;  // equal compute: ratio 1
  l.trends = {intervention("A", {0.01, 0.01, 0.01, 0.01})};
  const Backtest b = backtest_ladder(l, "ladder");
  REQUIRE(b.rows.size() == 1);
  CHECK(b.rows[0].hidden == "r2");
  REQUIRE(b.unscored.size() == 1);
  CHECK(b.unscored[0] == "rung r3: its training FLOPs are not above rung r2's (compute ratio 1 ≥ 1): not hidden — order "
                         "the rungs by compute");
  l.rungs[3].flops = l.rungs[2].flops / 10;  // falling
  CHECK(backtest_ladder(l, "ladder").unscored[0].find("(compute ratio 10 ≥ 1)") != std::string::npos);
}

TEST_CASE("backtest: the interval from 3 rungs below — each rung's seed noise, the bend and the hidden rung's noise — by hand") {
  // rungs at x = 12, 13, 14 below, r3 (x = 15) hidden; two seeds each at mean ± 0.01: every rung's
  // seed variance 2·0.01² = 2e-4 on 1 degree of freedom per intervention and rung
  LadderSummary l = ladder_of(4);
  l.trends = {intervention("A", {0.0, 0.01, 0.04, 0.05}, 0.01), intervention("B", {0.01, 0.01, 0.01, 0.0}, 0.01)};
  const Backtest b = backtest_ladder(l, "ladder");
  REQUIRE(b.rows.size() == 2);
  const BacktestRow& r = b.rows[1];
  REQUIRE(r.hidden == "r3");
  const BacktestPrediction& a = r.predictions[0];
  // the line through the 6 pairs, as weights on the rung means: −2/3, 1/3, 4/3
  const double w0 = -2.0 / 3, w1 = 1.0 / 3, w2 = 4.0 / 3;
  CHECK(a.trend == doctest::Approx(w0 * 0.0 + w1 * 0.01 + w2 * 0.04).epsilon(1e-12));
  const double seed_var = 2e-4, mean_var = seed_var / 2;
  const double var_line = (w0 * w0 + w1 * w1 + w2 * w2) * mean_var;
  // curvatures m0 − 2·m1 + m2: A 0.02, B 0, each with variance 6 · 1e-4; the upper 75% bound of
  // κ² solves 0.02²/(κ² + 6e-4) = χ²_2 quantile 0.25 = −2·ln 0.75
  const double kappa2 = 0.02 * 0.02 / (-2 * std::log(0.75)) - 6e-4;
  // a bend's effect at x = 15: q(15) − Σ w·q(x_r) with q = (x − 13)²/2
  const double g = 2.0 - (w0 * 0.5 + w2 * 0.5);
  // the hidden rung's measured mean: its pooled seed variance over its 2 seeds; t on 8 degrees of freedom
  const double half = 2.306004135204166 * std::sqrt(var_line + g * g * kappa2 + mean_var);
  CHECK(a.pi_low == doctest::Approx(a.trend - half).epsilon(1e-9));
  CHECK(a.pi_high == doctest::Approx(a.trend + half).epsilon(1e-9));
}

TEST_CASE("backtest: on straight noisy ladders the 95% interval holds the hidden rung's mean at least about 95% of the time") {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.01);
  int covered = 0, total = 0;
  for (int rep = 0; rep < 400; ++rep) {
    LadderSummary l = ladder_of(4);
    Trend t;
    t.intervention = "A";
    for (size_t k = 0; k < 4; ++k) {
      const double truth = 0.02 - 0.005 * static_cast<double>(k);
      t.paired.push_back({truth + noise(rng), truth + noise(rng), truth + noise(rng)});
    }
    l.trends = {t};
    for (const auto& r : backtest_ladder(l, "synthetic").rows) {
      for (const auto& p : r.predictions) {
        ++total;
        covered += p.pi_low <= p.measured && p.measured <= p.pi_high;
      }
    }
  }
  REQUIRE(total == 800);  // the top rung's 400 with an interval (3 below), r2's 400 without (2 below)
  const double coverage = static_cast<double>(covered) / 400;
  CHECK(coverage >= 0.92);
  CHECK(coverage <= 0.999);
}
