// A scale ladder's report: trends of constructed per-seed results with a known constant, growing,
// shrinking and sign-flipping effect get the right verdict; the interaction test equals an
// ordinary least squares fit with an interaction term solved independently; the crossover's
// interval covers the truth; extrapolation to a target and the renderers.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>

#include "report/analysis.h"
#include "report/analyze.h"
#include "report/ladder/trend.h"
#include "report/render/render.h"

using namespace sweep;

namespace {

constexpr double k_rung_flops[] = {1e12, 1e13, 1e14};  // x = 12, 13, 14
const char* const k_rungs[] = {"s", "m", "l"};

// Seeds 1..n of a variant at a rung: value[seed] given.
VariantRuns at_rung(const std::string& intervention, size_t rung, const std::vector<double>& values) {
  VariantRuns v;
  v.intervention = intervention;
  v.name = intervention + "+" + k_rungs[rung];
  v.axes["scale"] = std::string("\"") + k_rungs[rung] + "\"";
  v.params = 1e6 * std::pow(10.0, static_cast<double>(rung) / 2);  // FLOPs grow as params^2
  v.train_tokens = 1000000;
  v.flops_per_token = k_rung_flops[rung] / 1e6;
  for (size_t i = 0; i < values.size(); ++i) {
    ReportRun r;
    r.run_id = v.name + std::to_string(i);
    r.init_seed = r.data_seed = static_cast<int64_t>(i + 1);
    r.status = RunState::done;
    r.value = r.test_loss = values[i];
    r.tokens = 1000000;
    v.runs.push_back(r);
  }
  return v;
}

// A ladder whose interventions improve on the baseline by effect(intervention, x) at x = 12, 13,
// 14, with seed noise: the baseline's per-seed noise shared by all (paired) plus each run's own.
ReportInput ladder(const std::vector<std::pair<std::string, std::function<double(double)>>>& effects, int seeds,
                   double noise, double min_effect, uint64_t seed = 7) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0, 1);
  ReportInput in;
  in.sweep = "lad";
  in.baseline = "baseline";
  in.metric = Metric{Metric::Kind::test_loss};
  in.design.min_effect = min_effect;
  in.min_effect_source = min_effect > 0 ? MinEffectSource::sweep_file : MinEffectSource::none;
  Ladder l;
  l.rungs = {"s", "m", "l"};
  l.target_unit = TargetUnit::flops;
  l.target = 1e16;
  in.ladder = l;
  for (size_t r = 0; r < 3; ++r) {
    std::vector<double> base;
    for (int s = 0; s < seeds; ++s) {
      base.push_back(4.0 - 0.3 * static_cast<double>(r) + 0.05 * normal(gen));
    }
    in.variants.push_back(at_rung("baseline", r, base));
  }
  for (const auto& [name, effect] : effects) {
    for (size_t r = 0; r < 3; ++r) {
      std::vector<double> values;
      for (int s = 0; s < seeds; ++s) {
        const double b = *in.variants[r].runs[static_cast<size_t>(s)].value;
        values.push_back(b - effect(12.0 + static_cast<double>(r)) + noise * normal(gen));
      }
      in.variants.push_back(at_rung(name, r, values));
    }
  }
  return in;
}

const Trend& trend(const Analysis& a, const std::string& name) {
  for (const auto& t : a.ladder->trends) {
    if (t.intervention == name) {
      return t;
    }
  }
  FAIL("no trend " << name);
  throw 0;
}

// Solves A x = b (A symmetric positive definite, small) by Gaussian elimination with pivoting.
std::vector<double> solve(std::vector<std::vector<double>> A, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < n; ++r) {
      p = std::abs(A[r][c]) > std::abs(A[p][c]) ? r : p;
    }
    std::swap(A[c], A[p]);
    std::swap(b[c], b[p]);
    for (size_t r = c + 1; r < n; ++r) {
      const double f = A[r][c] / A[c][c];
      for (size_t k = c; k < n; ++k) {
        A[r][k] -= f * A[c][k];
      }
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n);
  for (size_t c = n; c-- > 0;) {
    double v = b[c];
    for (size_t k = c + 1; k < n; ++k) {
      v -= A[c][k] * x[k];
    }
    x[c] = v / A[c][c];
  }
  return x;
}

}  // namespace

TEST_CASE("ladder trends: constant holds, growing grows, shrinking shrinks, a sign flip flips with its crossover") {
  const ReportInput in = ladder(
      {
          {"constant", [](double) { return 0.03; }},
          {"growing", [](double x) { return 0.02 + 0.03 * (x - 12); }},
          {"shrinking", [](double x) { return 0.08 - 0.035 * (x - 12); }},
          {"flipping", [](double x) { return 0.06 - 0.06 * (x - 12); }},  // 0 at x = 13: 1e13 FLOPs
          {"null", [](double) { return 0.0; }},
      },
      8, 0.004, 0.01);
  const Analysis a = analyze(in);
  REQUIRE(a.ladder);
  REQUIRE(a.rungs.size() == 3);
  CHECK(a.variants.size() == 18);
  CHECK(a.rungs[1].baseline == "baseline+m");
  // each rung a study of its own
  CHECK(a.rungs[0].variants.size() == 6);
  CHECK(trend(a, "constant").verdict == TrendVerdict::holds);
  CHECK(trend(a, "null").verdict == TrendVerdict::holds);
  CHECK(trend(a, "growing").verdict == TrendVerdict::grows);
  CHECK(trend(a, "shrinking").verdict == TrendVerdict::shrinks);
  const Trend& flip = trend(a, "flipping");
  CHECK(flip.verdict == TrendVerdict::flips_sign);
  CHECK(flip.slope == doctest::Approx(-0.06).epsilon(0.05));
  REQUIRE(std::isfinite(flip.crossover_low));
  CHECK(flip.crossover_low < 1e13);
  CHECK(flip.crossover_high > 1e13);
  CHECK(flip.crossover == doctest::Approx(1e13).epsilon(0.2));
  // the growing effect at the target (x = 16: 0.02 + 0.03 × 4 = 0.14), inside its prediction interval
  const Trend& grow = trend(a, "growing");
  CHECK(grow.target_low < 0.14);
  CHECK(grow.target_high > 0.14);
  CHECK(a.ladder->target_factor == doctest::Approx(100));
  CHECK(a.ladder->far);
  // the renderers
  const std::string text = render_text(a);
  CHECK(text.find("flips sign") != std::string::npos);
  CHECK(text.find("rung m (") != std::string::npos);
  CHECK(text.find("FAR BEYOND THE LADDER") != std::string::npos);
  CHECK(render_json(in, a).find("\"crossover_flops\"") != std::string::npos);
  CHECK(render_markdown(in, a, {}).find("| flips sign |") != std::string::npos);
}

TEST_CASE("ladder trends: the crossover's interval covers the truth at about its level") {
  // 200 ladders with a sign flip at x = 13 and noisy seeds: Fieller's 95% interval, when bounded,
  // covers 1e13 in about 95% of them.
  int covered = 0, bounded = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const ReportInput in = ladder({{"flipping", [](double x) { return 0.03 - 0.03 * (x - 12); }}}, 4, 0.01, 0, seed);
    const Trend t = trend(analyze(in), "flipping");
    if (std::isfinite(t.crossover_low)) {
      ++bounded;
      covered += t.crossover_low <= 1e13 && 1e13 <= t.crossover_high;
    }
  }
  CHECK(bounded >= 150);
  const double share = static_cast<double>(covered) / bounded;
  CHECK(share >= 0.90);
  CHECK(share <= 0.99);
}

TEST_CASE("ladder trends: the slope test equals OLS with an interaction term, solved independently") {
  const ReportInput in = ladder({{"x", [](double x) { return 0.01 + 0.004 * (x - 12); }}}, 3, 0.01, 0);
  const Trend t = trend(analyze(in), "x");
  // The model: loss = a seed-and-rung block effect + v·(α + β·x), v = 1 for the intervention.
  // Columns: one per block (9), then v, then v·x. Normal equations, solved directly.
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (size_t r = 0; r < 3; ++r) {
    for (int variant = 0; variant < 2; ++variant) {
      const VariantRuns& v = in.variants[variant == 0 ? r : 3 + r];
      for (size_t s = 0; s < v.runs.size(); ++s) {
        std::vector<double> row(11, 0.0);
        row[r * 3 + s] = 1;
        row[9] = variant;
        row[10] = variant * (12.0 + static_cast<double>(r));
        X.push_back(row);
        y.push_back(-*v.runs[s].value);  // an improvement is a lower loss
      }
    }
  }
  std::vector<std::vector<double>> XtX(11, std::vector<double>(11, 0.0));
  std::vector<double> Xty(11, 0.0);
  for (size_t i = 0; i < X.size(); ++i) {
    for (size_t a = 0; a < 11; ++a) {
      Xty[a] += X[i][a] * y[i];
      for (size_t b = 0; b < 11; ++b) {
        XtX[a][b] += X[i][a] * X[i][b];
      }
    }
  }
  const std::vector<double> beta = solve(XtX, Xty);
  double ss = 0;
  for (size_t i = 0; i < X.size(); ++i) {
    double fit = 0;
    for (size_t a = 0; a < 11; ++a) {
      fit += X[i][a] * beta[a];
    }
    ss += (y[i] - fit) * (y[i] - fit);
  }
  const double df = static_cast<double>(X.size()) - 11, sigma2 = ss / df;
  // Var(β_vx) = σ² [(X'X)^-1]_{10,10}: the last column of the inverse
  std::vector<double> unit(11, 0.0);
  unit[10] = 1;
  const double var = sigma2 * solve(XtX, unit)[10];
  CHECK(df == t.df);
  CHECK(t.slope == doctest::Approx(beta[10]).epsilon(1e-9));
  CHECK((t.slope_high - t.slope) / t_quantile(0.95, df) == doctest::Approx(std::sqrt(var)).epsilon(1e-9));
}

TEST_CASE("ladder trends: undecided without a margin, no result below 3 rungs with pairs") {
  const ReportInput in = ladder({{"constant", [](double) { return 0.03; }}}, 3, 0.004, 0);
  const Analysis a = analyze(in);
  CHECK(trend(a, "constant").verdict == TrendVerdict::undecided);
  CHECK(trend(a, "constant").why.find("declare min_effect") != std::string::npos);
  const Trend none = fit_trend({12, 13, 14}, {{0.1, 0.2}, {}, {0.1}}, 0.01);
  CHECK(none.verdict == TrendVerdict::no_result);
  CHECK(std::isnan(none.p));
}

TEST_CASE("ladder speed-ups: FLOPs to the baseline's final loss at each rung, their trend, never reached said so") {
  ReportInput in = ladder({{"faster", [](double) { return 0.05; }}, {"slower", [](double) { return -0.05; }}}, 4, 0.004, 0.01);
  // validation curves: the baseline falls from 5 by 1 over its 1M tokens; an intervention with a
  // speed-up s falls s times as fast (reaching the baseline's final loss at 1M / s tokens): 1.5×,
  // 1.3×, 1.1× at the three rungs for `faster` (×0.856 per 10× FLOPs), 0.8× for `slower` (never there)
  std::mt19937_64 gen(11);
  std::normal_distribution<double> normal(0, 1);
  for (auto& v : in.variants) {
    const size_t rung = v.name.back() == 's' ? 0 : v.name.back() == 'm' ? 1 : 2;
    for (auto& r : v.runs) {
      const double s = v.intervention == "baseline" ? 1
                       : v.intervention == "slower" ? 0.8
                                                    : (1.5 - 0.2 * static_cast<double>(rung)) * std::exp(0.01 * normal(gen));
      for (int64_t t = 0; t <= 1000000; t += 50000) {
        r.val_curve.emplace_back(t, 5 - s * static_cast<double>(t) / 1e6);
      }
    }
  }
  const Analysis a = analyze(in);
  REQUIRE(a.ladder);
  REQUIRE(a.ladder->speedups.size() == 2);
  const SpeedupTrend& fast = a.ladder->speedups[0];
  CHECK(fast.intervention == "faster");
  CHECK(fast.reached == std::vector<int64_t>{4, 4, 4});
  CHECK(fast.at_rung[0] == doctest::Approx(1.5).epsilon(0.02));
  CHECK(fast.at_rung[1] == doctest::Approx(1.3).epsilon(0.02));
  CHECK(fast.at_rung[2] == doctest::Approx(1.1).epsilon(0.02));
  CHECK(std::exp(fast.line.slope) == doctest::Approx(std::sqrt(1.1 / 1.5)).epsilon(0.02));
  CHECK(fast.line.verdict == TrendVerdict::shrinks);
  CAPTURE(fast.line.why);
  CHECK(fast.line.why.rfind("from 1.5", 0) == 0);  // from 1.5…× at the smallest rung to 1.1…× at the largest
  CHECK(fast.line.why.find("× at the largest, ×0.8") != std::string::npos);
  const SpeedupTrend& slow = a.ladder->speedups[1];
  CHECK(slow.reached == std::vector<int64_t>{0, 0, 0});
  CHECK(slow.line.verdict == TrendVerdict::no_result);
  const std::string text = render_text(a);
  CHECK(text.find("Speed-up: the training FLOPs") != std::string::npos);
  CHECK(text.find("never (0/4)") != std::string::npos);
  CHECK(text.find("faster: shrinks — from 1.5") != std::string::npos);
  CHECK(render_json(in, a).find("\"speedups\"") != std::string::npos);
  CHECK(render_markdown(in, a, {}).find("| never (0/4) |") != std::string::npos);
}
