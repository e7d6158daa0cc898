// The statistics behind `sweep report`: per-variant summaries with Student-t confidence
// intervals, the improvement of a variant over the baseline (paired by seed when both have the
// same seeds, Welch otherwise), Holm's correction across a sweep's interventions, the
// probability of improvement, and the seeds a comparison needs for power 0.8. Pure functions:
// no database, no files. Quantiles and distributions from Boost.Math.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "config/choices.h"

namespace sweep {

// A statistic with no value (too few seeds, nothing to compare): NaN, which every table prints as "-".
inline constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

struct Summary {
  int64_t n = 0;
  double mean = 0;
  double sd = 0;       // sample standard deviation (n - 1); NaN when n < 2
  double ci_low = 0;   // Student-t confidence interval of the mean; NaN when n < 2
  double ci_high = 0;
};

Summary summarize(const std::vector<double>& x, double level = 0.95);

// Improvement of `variant` over `baseline`: mean(baseline) − mean(variant), positive = better
// (lower loss). p is two-sided; the CI is at `level`. NaN p and CI when a side has < 2 values
// (paired: < 2 pairs). Zero variance gives p = 1 for equal means, 0 otherwise.
struct Comparison {
  double improvement = 0;
  double ci_low = 0, ci_high = 0;
  double p = 0;
  double df = 0;
  double se = 0;
  bool paired = false;
};

// An estimate with its standard error and degrees of freedom as a t-test of "it is 0" and a t
// interval at `level` (a regression slope, a fitted value).
Comparison t_estimate(double estimate, double se, double df, double level = 0.95);

// A one-sample t interval of the mean of `d` (the paired case: per-seed differences).
Comparison one_sample(const std::vector<double>& d, double level = 0.95);

// Pairs are (baseline[i], variant[i]): the same seeds, in the same order.
Comparison compare_paired(const std::vector<double>& baseline, const std::vector<double>& variant,
                          double level = 0.95);
Comparison compare_welch(const std::vector<double>& baseline, const std::vector<double>& variant,
                         double level = 0.95);

// Σ weights[g] · mean(groups[g]) for independent groups, with a Welch–Satterthwaite t interval
// (compare_welch is the contrast baseline − variant).
Comparison contrast(const std::vector<std::vector<double>>& groups, const std::vector<double>& weights,
                    double level = 0.95);

// Two one-sided tests of equivalence (TOST; Schuirmann 1987) within ±delta for an estimate
// (improvement, se, df): the larger of the p-values of H0: effect ≤ −delta and H0: effect ≥ delta.
// Equivalence at level α when p < α — the (1 − 2α) confidence interval lies inside (−delta, delta).
// NaN where c has no test; with se = 0, 0 inside the margin and 1 outside.
double tost_p(const Comparison& c, double delta);

// A one-sided test of superiority by a margin: the p-value of H0: effect ≤ margin against
// effect > margin for an estimate (improvement, se, df). NaN where c has no test; with se = 0,
// 0 above the margin and 1 at or below it.
double margin_p(const Comparison& c, double margin);

// Lan & DeMets' (1983) alpha-spending functions: the share of a total error rate `alpha` spent by
// information fraction t (0 < t ≤ 1; 1: all of it), for one one-sided test. O'Brien–Fleming-type,
// 2 − 2Φ(z_{1−alpha/2} / √t), keeps nearly all of it for the end; Pocock-type,
// alpha · ln(1 + (e − 1)·t), spends it evenly. A two-sided test spends alpha/2 on each side.
double spent(Spending spending, double alpha, double t);

// Critical values of the paired t statistic for a group-sequential design with looks after
// n_1 < … < n_K pairs (n_1 ≥ 2) out of at most n_max: c_k such that, when there is no effect,
// P(the test rejects at look k and at no earlier look) = α(n_k/n_max) − α(n_{k−1}/n_max) —
// two-sided (|T_k| ≥ c_k, alpha/2 spent on each side) or one-sided (T_k ≥ c_k). Under the null the
// joint law of (T_1, …, T_K) depends on the n_k alone (the paired differences' variance cancels),
// so the c_k are set by simulating it: `paths` studies from a fixed seed. Unlike normal-theory
// boundaries applied to t statistics, they keep the error rate at its level with 1 to 11 degrees
// of freedom. Repeated confidence intervals (Jennison & Turnbull 1989) of half-width c_k·se then
// cover the true effect at every look at once with probability 1 − alpha, whatever rule decides
// when to stop.
std::vector<double> t_boundaries(const std::vector<int64_t>& looks, int64_t n_max, double alpha, Spending spending,
                                 bool two_sided, int64_t paths = 400000);

// The test set's sampling error. A run's test loss is L = Σ nats / Σ tokens over the blocks of the
// test split; over the same blocks, the standard error of mean_s(L(plus[s]) − L(minus[s])) (minus
// empty: of mean_s L(plus[s])) is that of a ratio estimator, by linearisation:
// √(n/(n−1) · Σ_i r_i²) / T, with r_i the block's residual nats_i − L·tokens_i averaged over the
// runs (differenced when paired) and T the tokens. It does not shrink with more seeds: every seed
// is scored on the same test tokens. NaN with fewer than 2 blocks or blocks that do not line up.
using LossBlocks = std::vector<std::pair<int64_t, double>>;  // (predicted tokens, summed nats)
double test_set_se(const std::vector<LossBlocks>& plus, const std::vector<LossBlocks>& minus = {});

// Holm–Bonferroni adjusted p-values, in the input's order; a NaN (no test) stays NaN and does
// not count among the tests.
std::vector<double> holm_adjust(const std::vector<double>& p);

// Share of comparisons in which the variant's loss is lower (ties count one half): over the
// pairs when paired, else over every (baseline, variant) combination.
double probability_of_improvement(const std::vector<double>& baseline, const std::vector<double>& variant,
                                  bool paired);

// The smallest number of seeds per variant (pairs when paired) for which a two-sided t-test at
// `alpha` detects `effect` with probability `power`, given the standard deviation `sd` (of the
// differences when paired, of one variant's results otherwise). -1 when effect or sd is not
// positive and finite; capped at 100000.
int64_t seeds_needed(double effect, double sd, bool paired, double alpha = 0.05, double power = 0.8);

// The smallest effect a two-sided t-test at `alpha` detects with probability `power` given n
// seeds per variant (pairs when paired) and standard deviation `sd`; NaN when n < 2 or sd is not
// positive.
double detectable_effect(int64_t n, double sd, bool paired, double alpha = 0.05, double power = 0.8);

// Where seed noise comes from, for runs of one variant that vary init and data seeds separately
// (crossed, balanced: every init with every data seed) and may repeat identical seeds.
// Method-of-moments estimates of a two-way random-effects model on the cell means:
// σ_init² = (MS_init − MS_resid)/n_data, σ_data² = (MS_data − MS_resid)/n_init (clamped at 0),
// σ_resid² = MS_resid (their interaction, plus repeat noise / repeats); σ_repeat from the spread
// of runs with identical seeds (run-to-run nondeterminism). NaN where the design cannot tell.
struct SeedRun {
  int64_t init = 0, data = 0, repeat = 0;
  double value = 0;
};
struct VarianceComponents {
  int64_t n_init = 0, n_data = 0, repeats = 0;
  double sigma_init = 0, sigma_data = 0, sigma_resid = 0, sigma_repeat = 0;
};
VarianceComponents variance_components(const std::vector<SeedRun>& runs);

// Two-sided Student-t quantile: the t with P(|T| <= t) = level for `df` degrees of freedom.
double t_quantile(double level, double df);
// The chi-square quantile: the x with P(X <= x) = p for `df` degrees of freedom.
double chi2_quantile(double p, double df);

// Pearson's correlation of x[i] and y[i]; NaN with fewer than 3 pairs or no variance.
double pearson(const std::vector<double>& x, const std::vector<double>& y);

// The q-quantile (0..1) of `v`, linear between order statistics; NaN when empty.
double percentile(std::vector<double> v, double q);

// y ≈ a·x² + b·x + c by least squares; empty with fewer than 3 distinct x.
struct Quadratic {
  double a = 0, b = 0, c = 0;
  double at(double x) const;
};
std::optional<Quadratic> fit_quadratic(const std::vector<double>& x, const std::vector<double>& y);

// Where `q` is lowest on [lo, hi]: its vertex when it opens upwards and lies strictly inside,
// else the lower end.
double argmin_on(const Quadratic& q, double lo, double hi);

}  // namespace sweep
