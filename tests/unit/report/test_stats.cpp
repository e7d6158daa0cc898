// TOST reference values: statsmodels 0.13.5 (Debian bookworm's python3-statsmodels:
// stats.weightstats.ttost_paired, and ttost_ind with usevar='unequal'). Group-sequential
// boundaries: DeMets & Lan (1994), Statistics in Medicine 13, Table 1 (O'Brien–Fleming- and
// Pocock-type spending, five equally spaced looks, two-sided 0.05) in the many-pairs limit, and
// the error rate of fresh simulated null studies at few pairs.
// Reference values: scipy 1.10.1 (Debian bookworm's python3-scipy: stats.ttest_ind with
// equal_var=False, stats.ttest_rel, stats.t.ppf), computed once; the sample sizes for power 0.8
// are the textbook ones (Cohen 1988: d = 0.5 → 64 per group; d = 1 → 17; paired d = 1 → 10).
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "report/calibration/aa_check.h"
#include "report/stats.h"

using namespace sweep;

TEST_CASE("Student-t quantiles") {
  CHECK(t_quantile(0.95, 4) == doctest::Approx(2.7764451051977987).epsilon(1e-9));
  CHECK(t_quantile(0.95, 1e6) == doctest::Approx(1.959966).epsilon(1e-5));
}

TEST_CASE("summaries: mean, sd and the 95% t interval, with n = 1 and zero variance") {
  const Summary s = summarize({5.5478, 5.5374});
  CHECK(s.n == 2);
  CHECK(s.mean == doctest::Approx(5.5426).epsilon(1e-12));
  CHECK(s.sd == doctest::Approx(0.007353910524339913).epsilon(1e-9));
  CHECK(s.ci_low == doctest::Approx(5.476527735370555).epsilon(1e-9));
  CHECK(s.ci_high == doctest::Approx(5.608672264629446).epsilon(1e-9));
  const Summary one = summarize({3.0});
  CHECK(one.mean == 3.0);
  CHECK(std::isnan(one.sd));
  CHECK(std::isnan(one.ci_low));
  const Summary flat = summarize({2.0, 2.0, 2.0});
  CHECK(flat.sd == 0.0);
  CHECK(flat.ci_low == 2.0);
  CHECK(flat.ci_high == 2.0);
}

TEST_CASE("Welch's t-test against scipy") {
  const Comparison c = compare_welch({3.70, 3.72, 3.69, 3.71}, {3.65, 3.66, 3.68});
  CHECK_FALSE(c.paired);
  CHECK(c.improvement == doctest::Approx(0.04166666666666652).epsilon(1e-9));
  CHECK(c.df == doctest::Approx(3.9593147751605944).epsilon(1e-9));
  CHECK(c.se == doctest::Approx(0.010929064207170073).epsilon(1e-9));
  CHECK(c.p == doctest::Approx(0.01925921541495982).epsilon(1e-7));
  CHECK(c.ci_low == doctest::Approx(0.04166666666666652 - 2.7877331499010185 * 0.010929064207170073).epsilon(1e-7));
  // a variant with a higher loss is a negative improvement, with the same p
  const Comparison worse = compare_welch({3.65, 3.66, 3.68}, {3.70, 3.72, 3.69, 3.71});
  CHECK(worse.improvement == doctest::Approx(-0.04166666666666652).epsilon(1e-9));
  CHECK(worse.p == doctest::Approx(c.p).epsilon(1e-9));
}

TEST_CASE("the paired t-test against scipy") {
  const Comparison c = compare_paired({3.70, 3.72, 3.69, 3.71}, {3.68, 3.71, 3.66, 3.70});
  CHECK(c.paired);
  CHECK(c.df == 3);
  CHECK(c.improvement == doctest::Approx(0.0175).epsilon(1e-9));
  CHECK(c.p == doctest::Approx(0.035352847002516744).epsilon(1e-7));
  CHECK(c.ci_low == doctest::Approx(0.00226519819170932).epsilon(1e-7));
  CHECK(c.ci_high == doctest::Approx(0.0327348018082906).epsilon(1e-7));
}

TEST_CASE("edge cases: one seed, zero variance") {
  const Comparison one = compare_welch({3.7}, {3.6, 3.61});
  CHECK(one.improvement == doctest::Approx(0.095));
  CHECK(std::isnan(one.p));
  CHECK(std::isnan(compare_paired({3.7}, {3.6}).p));
  const Comparison same = compare_welch({2.0, 2.0}, {2.0, 2.0});
  CHECK(same.p == 1.0);
  const Comparison exact = compare_paired({2.0, 3.0}, {1.5, 2.5});  // every pair differs by 0.5
  CHECK(exact.p == 0.0);
  CHECK(exact.ci_low == 0.5);
  CHECK(exact.ci_high == 0.5);
}

TEST_CASE("Holm's step-down adjustment") {
  // sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 → monotone 0.02, 0.03, 0.06, 0.06
  const auto adj = holm_adjust({0.01, 0.04, 0.03, 0.005});
  REQUIRE(adj.size() == 4);
  CHECK(adj[0] == doctest::Approx(0.03));
  CHECK(adj[1] == doctest::Approx(0.06));
  CHECK(adj[2] == doctest::Approx(0.06));
  CHECK(adj[3] == doctest::Approx(0.02));
  CHECK(holm_adjust({0.5, 0.9})[1] == 1.0);  // capped at 1
  CHECK(holm_adjust({}).empty());
}

TEST_CASE("probability of improvement") {
  CHECK(probability_of_improvement({3.0, 3.0, 3.0}, {2.9, 3.1, 3.0}, true) == doctest::Approx(0.5));
  CHECK(probability_of_improvement({3.0, 3.2}, {3.1}, false) == doctest::Approx(0.5));
  CHECK(probability_of_improvement({3.0, 3.2}, {2.0}, false) == 1.0);
}

TEST_CASE("seeds needed for power 0.8 at alpha 0.05") {
  CHECK(seeds_needed(0.5, 1.0, false) == 64);
  CHECK(seeds_needed(1.0, 1.0, false) == 17);
  CHECK(seeds_needed(1.0, 1.0, true) == 10);
  CHECK(seeds_needed(0.5, 1.0, true) == 34);
  CHECK(seeds_needed(-0.05, 0.1, false) == 64);  // the sign of the effect does not matter
  CHECK(seeds_needed(0.0, 1.0, false) == -1);
  CHECK(seeds_needed(0.1, 0.0, false) == -1);
}

TEST_CASE("the smallest effect detectable with power 0.8 at alpha 0.05") {
  // scipy: brentq on stats.nct's two-sided power, sd 1.
  CHECK(detectable_effect(3, 1.0, false) == doctest::Approx(3.070892266).epsilon(1e-6));
  CHECK(detectable_effect(3, 1.0, true) == doctest::Approx(3.264043550).epsilon(1e-6));
  CHECK(detectable_effect(10, 1.0, false) == doctest::Approx(1.324947393).epsilon(1e-6));
  CHECK(detectable_effect(64, 0.1, false) == doctest::Approx(0.04990691780).epsilon(1e-6));
  CHECK(seeds_needed(detectable_effect(10, 1.0, false) * 1.0001, 1.0, false) == 10);
  CHECK(std::isnan(detectable_effect(1, 1.0, false)));
  CHECK(std::isnan(detectable_effect(5, 0.0, false)));
}

TEST_CASE("variance components: init, data and repeat noise separated") {
  // value = 3 + a[init] + b[data] exactly, repeated twice with identical results:
  // σ_init = sd(a) = 0.1, σ_data = sd(b) = 0.05/√2, no residual, no repeat noise.
  const double a[3] = {0.0, 0.1, 0.2}, b[2] = {0.0, 0.05};
  std::vector<SeedRun> runs;
  for (int i = 0; i < 3; ++i) {
    for (int d = 0; d < 2; ++d) {
      for (int r = 0; r < 2; ++r) {
        runs.push_back({i + 1, d + 1, r, 3.0 + a[i] + b[d]});
      }
    }
  }
  VarianceComponents vc = variance_components(runs);
  CHECK(vc.n_init == 3);
  CHECK(vc.n_data == 2);
  CHECK(vc.repeats == 2);
  CHECK(vc.sigma_init == doctest::Approx(0.1).epsilon(1e-9));
  CHECK(vc.sigma_data == doctest::Approx(0.05 / std::sqrt(2.0)).epsilon(1e-9));
  CHECK(vc.sigma_resid == doctest::Approx(0.0).epsilon(1e-9));
  CHECK(vc.sigma_repeat == 0.0);

  // nondeterminism: one cell's repeats differ by 0.2 → within variance 0.02 over 6 degrees of freedom
  runs[0].value += 0.2;
  vc = variance_components(runs);
  CHECK(vc.sigma_repeat == doctest::Approx(std::sqrt(0.02 / 6.0)).epsilon(1e-9));

  // an unbalanced design cannot separate init from data
  runs.pop_back();
  runs.pop_back();
  vc = variance_components(runs);
  CHECK(std::isnan(vc.sigma_init));
  CHECK(std::isnan(vc.sigma_data));
}

TEST_CASE("a contrast of independent groups: Welch–Satterthwaite (numpy/scipy reference)") {
  // (1 − 2)·baseline − combined + part1 + part2: the additivity contrast of a two-part combination
  const Comparison c = contrast({{3.00, 3.02, 2.98, 3.01}, {2.80, 2.83, 2.78}, {2.90, 2.92, 2.89, 2.91, 2.88},
                                 {2.95, 2.96, 2.93}},
                                {-1.0, -1.0, 1.0, 1.0});
  CHECK(c.improvement == doctest::Approx(0.0408333333333335).epsilon(1e-12));
  CHECK(c.se == doctest::Approx(0.020292992769809903).epsilon(1e-9));
  CHECK(c.df == doctest::Approx(6.120850811996258).epsilon(1e-9));
  CHECK(c.p == doctest::Approx(0.08994084351567445).epsilon(1e-7));
  CHECK(c.ci_low == doctest::Approx(-0.008585145680415698).epsilon(1e-7));
  CHECK(c.ci_high == doctest::Approx(0.0902518123470827).epsilon(1e-7));
  // Welch is the contrast baseline − variant
  const Comparison w = compare_welch({3.00, 3.02, 2.98}, {2.90, 2.95});
  const Comparison k = contrast({{3.00, 3.02, 2.98}, {2.90, 2.95}}, {1.0, -1.0});
  CHECK(w.p == k.p);
  CHECK(w.df == k.df);
}

TEST_CASE("Pearson correlation, percentiles") {
  CHECK(pearson({1, 2, 3, 4, 5}, {2.1, 3.9, 6.2, 7.8, 10.1}) == doctest::Approx(0.9986517555689656).epsilon(1e-12));
  CHECK(pearson({1, 2, 3}, {3, 2, 1}) == doctest::Approx(-1.0));
  CHECK(std::isnan(pearson({1, 2}, {1, 2})));        // fewer than 3 pairs
  CHECK(std::isnan(pearson({1, 1, 1}, {1, 2, 3})));  // no variance
  CHECK(percentile({1, 2, 3, 4, 10}, 0.025) == doctest::Approx(1.1));  // numpy.percentile's default rule
  CHECK(percentile({1, 2, 3, 4, 10}, 0.975) == doctest::Approx(9.4));
  CHECK(std::isnan(percentile({}, 0.5)));
}

TEST_CASE("least-squares quadratic and its lowest point on an interval") {
  // exact: y = 2(x − 3)² + 1 = 2x² − 12x + 19
  const auto q = fit_quadratic({0, 1, 2, 4, 5, 6}, {19, 9, 3, 3, 9, 19});
  REQUIRE(q);
  CHECK(q->a == doctest::Approx(2.0).epsilon(1e-9));
  CHECK(q->b == doctest::Approx(-12.0).epsilon(1e-9));
  CHECK(q->c == doctest::Approx(19.0).epsilon(1e-9));
  CHECK(argmin_on(*q, 0, 6) == doctest::Approx(3.0));
  CHECK(argmin_on(*q, 4, 6) == 4.0);  // the vertex left of the interval: its lower end
  CHECK(argmin_on(*q, 0, 2) == 2.0);
  // opening downwards: the lower end point
  CHECK(argmin_on(Quadratic{-1, 0, 0}, -1, 3) == 3.0);
  // fewer than 3 distinct x: no fit
  CHECK_FALSE(fit_quadratic({1, 1, 2, 2}, {1, 2, 3, 4}));
  // noisy points: the least-squares solution of numpy.polyfit(x, y, 2)
  const auto n = fit_quadratic({1.386, 2.079, 2.773, 3.466, 4.159, 4.852}, {4.974, 4.954, 5.034, 5.229, 5.500, 5.880});
  REQUIRE(n);
  CHECK(n->a == doctest::Approx(0.1027551469192546).epsilon(1e-9));
  CHECK(n->b == doctest::Approx(-0.3787383705502579).epsilon(1e-9));
  CHECK(n->c == doctest::Approx(5.299429187174156).epsilon(1e-9));
}

TEST_CASE("TOST equivalence p against statsmodels, paired and Welch") {
  const Comparison paired = compare_paired({3.70, 3.72, 3.69, 3.71}, {3.68, 3.71, 3.66, 3.70});
  CHECK(tost_p(paired, 0.03) == doctest::Approx(0.03980249040895203).epsilon(1e-7));
  CHECK(tost_p(paired, 0.01) == doctest::Approx(0.8924150287152257).epsilon(1e-7));
  const Comparison welch = compare_welch({3.70, 3.72, 3.69, 3.71}, {3.65, 3.66, 3.68});
  CHECK(tost_p(welch, 0.06) == doctest::Approx(0.08474281293939957).epsilon(1e-7));
  CHECK(tost_p(welch, 0.03) == doctest::Approx(0.8267663359906156).epsilon(1e-7));
  // p < 0.05 exactly when the 90% interval lies inside the margin
  const Comparison ci90 = compare_paired({3.70, 3.72, 3.69, 3.71}, {3.68, 3.71, 3.66, 3.70}, 0.90);
  CHECK(ci90.ci_high < 0.03);
  CHECK(ci90.ci_high > 0.01);
  // no test, and zero variance
  CHECK(std::isnan(tost_p(compare_paired({3.7}, {3.6}), 0.1)));
  const Comparison exact = compare_paired({2.0, 3.0}, {1.5, 2.5});
  CHECK(tost_p(exact, 0.6) == 0.0);
  CHECK(tost_p(exact, 0.4) == 1.0);
}

TEST_CASE("group-sequential t boundaries: DeMets and Lan's at many degrees of freedom, the nominal rate at few") {
  // With 100 or more pairs a look's t is nearly normal: the published normal-theory boundaries
  // (five equally spaced looks, two-sided 0.05), within the simulation's error at 40,000 studies.
  const std::vector<int64_t> many{100, 200, 300, 400, 500};
  const std::vector<double> obf = t_boundaries(many, 500, 0.05, Spending::obrien_fleming, true, 40000);
  const std::vector<double> pocock = t_boundaries(many, 500, 0.05, Spending::pocock, true, 40000);
  const double published_obf[] = {4.877, 3.357, 2.680, 2.290, 2.031};
  const double published_pocock[] = {2.438, 2.427, 2.410, 2.397, 2.386};
  CHECK(std::isinf(obf[0]));  // O'Brien–Fleming spends 1e-6 at the first look: nothing of 40,000
  for (int k = 1; k < 5; ++k) {
    CHECK(obf[k] == doctest::Approx(published_obf[k]).epsilon(0.03));
  }
  for (int k = 0; k < 5; ++k) {
    CHECK(pocock[k] == doctest::Approx(published_pocock[k]).epsilon(0.03));
  }
  // One look at the end of 12 pairs is the fixed t-test: t(11) at 0.975 (and 0.95 one-sided).
  CHECK(t_boundaries({12}, 12, 0.05, Spending::pocock, true)[0] == doctest::Approx(t_quantile(0.95, 11)).epsilon(0.01));
  CHECK(t_boundaries({12}, 12, 0.05, Spending::pocock, false)[0] == doctest::Approx(t_quantile(0.90, 11)).epsilon(0.01));
  // With 2 to 11 degrees of freedom, fresh null studies (another generator) decide "differs" at
  // the rate alpha: two-sided and one-sided, Pocock-type, looks at 3, 6, 9 and 12 pairs. 100,000
  // studies; the tolerance is 4 binomial standard errors and the boundaries' own simulation error.
  const std::vector<int64_t> looks{3, 6, 9, 12};
  for (bool two_sided : {true, false}) {
    CAPTURE(two_sided);
    const std::vector<double> c = t_boundaries(looks, 12, 0.05, Spending::pocock, two_sided);
    std::mt19937_64 rng(99);
    std::normal_distribution<double> normal;
    const int studies = 100000;
    int rejected = 0;
    for (int p = 0; p < studies; ++p) {
      double sum = 0, squares = 0;
      for (int n = 1, k = 0; k < 4; ++n) {
        const double x = normal(rng);
        sum += x;
        squares += x * x;
        if (n == looks[static_cast<size_t>(k)]) {
          const double mean = sum / n, sd = std::sqrt((squares - n * mean * mean) / (n - 1));
          const double t = mean / (sd / std::sqrt(static_cast<double>(n)));
          if ((two_sided ? std::abs(t) : t) >= c[static_cast<size_t>(k)]) {
            ++rejected;
            break;
          }
          ++k;
        }
      }
    }
    const double rate = static_cast<double>(rejected) / studies;
    CHECK(std::abs(rate - 0.05) < 4 * std::sqrt(0.05 * 0.95 / studies) + 0.0015);
  }
  // A look's boundary does not move once later looks exist: the runner deciding at look 1 and a
  // report made after look 2 set the same c_1, to the last bit (every simulated study draws its
  // n_max pairs whatever the looks).
  for (bool two_sided : {true, false}) {
    const std::vector<double> one = t_boundaries({3}, 8, 0.05, Spending::pocock, two_sided, 20000);
    const std::vector<double> two = t_boundaries({3, 6}, 8, 0.05, Spending::pocock, two_sided, 20000);
    const std::vector<double> three = t_boundaries({3, 6, 8}, 8, 0.05, Spending::pocock, two_sided, 20000);
    CHECK(one[0] == two[0]);
    CHECK(two[0] == three[0]);
    CHECK(two[1] == three[1]);
  }
  // The spending functions: all of alpha at t = 1, Pocock's ln(1 + (e − 1)t) shape.
  CHECK(spent(Spending::pocock, 0.05, 1.0) == doctest::Approx(0.05));
  CHECK(spent(Spending::obrien_fleming, 0.05, 1.0) == doctest::Approx(0.05));
  CHECK(spent(Spending::pocock, 0.05, 0.5) == doctest::Approx(0.05 * std::log(1 + (std::exp(1.0) - 1) / 2)));
}

TEST_CASE("power figures for a nearly exact difference: certain, not an exception") {
  CHECK(seeds_needed(0.003, 1e-16, true) == 2);
  CHECK(detectable_effect(5, 1e-16, true) < 1e-14);
}

TEST_CASE("test-set standard error from per-block losses: one run, a paired difference, seeds, misaligned blocks") {
  // Block means 3.0, 3.2, 2.8, 3.0 over equal blocks: the SE is their sd over √4.
  const LossBlocks run{{100, 300}, {100, 320}, {100, 280}, {100, 300}};
  const double sd = std::sqrt((0.0 + 0.04 + 0.04 + 0.0) / 3);
  CHECK(test_set_se({run}) == doctest::Approx(sd / 2));
  // Unequal blocks: the ratio estimator, by hand: L = 1000/310, r_i = nats_i − L·tokens_i.
  const LossBlocks uneven{{100, 300}, {200, 620}, {10, 80}};
  const double L = 1000.0 / 310.0;
  const double r[] = {300 - 100 * L, 620 - 200 * L, 80 - 10 * L};
  CHECK(test_set_se({uneven}) == doctest::Approx(std::sqrt(1.5 * (r[0] * r[0] + r[1] * r[1] + r[2] * r[2])) / 310));
  // A variant that is uniformly 0.1 better on every block: its difference has no test-set error;
  // one better only on the hard blocks has some; with two identical seeds, the same.
  const LossBlocks shifted{{100, 290}, {100, 310}, {100, 270}, {100, 290}};
  CHECK(test_set_se({run}, {shifted}) == doctest::Approx(0.0).epsilon(1e-12));
  const LossBlocks hard_only{{100, 300}, {100, 300}, {100, 280}, {100, 300}};
  const double se = test_set_se({run}, {hard_only});
  CHECK(se > 0);
  CHECK(test_set_se({run, run}, {hard_only, hard_only}) == doctest::Approx(se));
  // Blocks that do not line up, one block, mismatched seed counts: unknown.
  CHECK(std::isnan(test_set_se({run}, {uneven})));
  CHECK(std::isnan(test_set_se({{{100, 300}}})));
  CHECK(std::isnan(test_set_se({run, run}, {shifted})));
}

TEST_CASE("the A/A check: twins' gap, σ_repeat pooled over seeds, σ_seed net of it") {
  // seeds 1..3, twins ±d around 1, 2, 4: σ_repeat² = mean of (2d)²/2 = 2d²
  const double d = 0.01;
  const AaCheck aa = aa_check({{1, {1 - d, 1 + d}}, {2, {2 - d, 2 + d}}, {3, {4 - d, 4 + d}}, {4, {7.0}}});
  CHECK(aa.pairs == 3);  // seed 4 lacks a twin
  CHECK(aa.largest_gap == doctest::Approx(2 * d));
  CHECK(aa.sigma_repeat == doctest::Approx(std::sqrt(2) * d));
  // the means 1, 2, 4 have variance 7/3, which holds σ_seed² + σ_repeat²/2
  CHECK(aa.sigma_seed == doctest::Approx(std::sqrt(7.0 / 3 - d * d)));
  const AaCheck same = aa_check({{1, {3.0, 3.0}}, {2, {3.5, 3.5}}});
  CHECK(same.largest_gap == 0);
  CHECK(same.sigma_repeat == 0);
  CHECK(std::isnan(aa_check({{1, {1.0, 1.1}}}).sigma_seed));  // one pair: nothing to say
}
