// Pooling an intervention across settings (report/pool/meta.h, report/pool/pool.h): the random-
// effects figures against statsmodels 0.15's combine_effects(method_re="pm") and its
// Hartung–Knapp interval, the Q-profile and prediction intervals against scipy (brentq on the
// generalised Q, t and χ² quantiles), to 1e-10; the verdicts; and the calibration's smoke test.
#include <doctest/doctest.h>

#include <cmath>

#include "report/calibration/pool_calibration.h"
#include "report/pool/meta.h"
#include "report/pool/pool.h"

using namespace sweep;

namespace {

struct Expected {
  double mean, tau2, se, ci_low, ci_high, q, q_p, tau2_low, tau2_high, pi_low, pi_high, p;
};

void check(const MetaResult& m, const Expected& e) {
  CHECK(m.mean == doctest::Approx(e.mean).epsilon(1e-10));
  CHECK(m.tau2 == doctest::Approx(e.tau2).epsilon(1e-10).scale(1e-12));
  CHECK(m.se == doctest::Approx(e.se).epsilon(1e-10));
  CHECK(m.ci_low == doctest::Approx(e.ci_low).epsilon(1e-10));
  CHECK(m.ci_high == doctest::Approx(e.ci_high).epsilon(1e-10));
  CHECK(m.q == doctest::Approx(e.q).epsilon(1e-10));
  CHECK(m.q_p == doctest::Approx(e.q_p).epsilon(1e-9));
  CHECK(m.tau2_low == doctest::Approx(e.tau2_low).epsilon(1e-10).scale(1e-12));
  CHECK(m.tau2_high == doctest::Approx(e.tau2_high).epsilon(1e-10));
  CHECK(m.pi_low == doctest::Approx(e.pi_low).epsilon(1e-10));
  CHECK(m.pi_high == doctest::Approx(e.pi_high).epsilon(1e-10));
  CHECK(m.p == doctest::Approx(e.p).epsilon(1e-9));
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
      p.settings.push_back({"s" + std::to_string(i), "", y[i], se[i], 6});
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

TEST_CASE("pool: calibration smoke test — the pooled test near 5% with no effect, the prediction interval near 95%") {
  PoolCalibrationSetup s;
  s.ks = {5};
  s.taus = {0, 2};
  s.replicates = 400;
  const auto rows = calibrate_pool(s);
  REQUIRE(rows.size() == 6);  // 3 precisions, 2 values of τ
  for (const auto& r : rows) {
    CAPTURE(r.tau);
    CAPTURE(r.precision);
    CHECK(r.false_positive < 0.10);
    CHECK(r.pi_coverage > 0.88);
    CHECK(r.false_holds < 0.05);
    if (r.tau == 0) {
      CHECK(r.varies < 0.10);
    }
  }
}
