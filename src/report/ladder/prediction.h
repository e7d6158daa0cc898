// A trend's prediction at a rung it was not fitted to — the hidden rung of a backtest, or the
// ladder's target — with an interval that allows for what a straight line leaves out. The line is
// the trend's own (report/ladder/trend.h); its interval adds to the line's own uncertainty
//   - the seed noise of each rung's own: σ²_r pooled over the ladder's interventions at rung r (the
//     paired improvements' spread within each), so a noisier rung weighs as it is;
//   - a bend: each intervention's curvature c (the quadratic coefficient through its rung means)
//     is taken as drawn from N(0, κ²), κ² common to the ladder's interventions; the interval uses
//     κ²_U, the upper 75% confidence bound of κ² from their fitted curvatures (profile χ²), and a
//     bend c moves the straight line's reading at x* by c·g(x*), g computed from the design alone;
//   - in a backtest, the noise of the hidden rung's measured mean: its σ² (pooled as above; its
//     level, never its mean) over its seeds. At the target: none — the interval is for the effect.
// The quantile is Student's t on the pooled seed variances' degrees of freedom. κ needs 3 rungs
// with paired results: from 2, no interval is given (a line through 2 points cannot show a bend).
// Measured by `sweep calibrate --backtest` (docs/verdicts.md). Pure: no database, no files.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace sweep {

// The bound's χ² quantile: 0.25 (an upper 75% bound). Chosen on the synthetic ladders of
// `sweep calibrate --backtest` (0.10 covered ≥ 0.98 at twice the width; 0.50 covered bent ladders
// 0.878) before any real ladder was backtested with it.
inline constexpr double k_curvature_bound = 0.25;

// What a ladder's interventions share: each rung's seed variance and the bend allowance.
struct LadderNoise {
  std::vector<double> seed_var;  // per rung: the variance of one seed's paired improvement (NaN: no 2 seeds)
  double df = 0;                 // the pooled variances' degrees of freedom
  double curvature_var = 0;      // κ²_U (NaN: no intervention with 3 rungs of results)
  int64_t curvatures = 0;        // the interventions κ comes from
};

// The variance of one seed's paired improvement at rung r, pooled over the interventions (each
// intervention's spread within the rung), and its degrees of freedom; NaN and 0 without 2 seeds.
std::pair<double, double> rung_seed_var(const std::vector<std::vector<std::vector<double>>>& paired, size_t r);

// From every intervention's paired improvements per rung (paired[i][r], rung r at x[r]), over the
// first `rungs` rungs.
LadderNoise ladder_noise(const std::vector<double>& x, const std::vector<std::vector<std::vector<double>>>& paired,
                         size_t rungs);

struct Prediction {
  double at = 0, low = 0, high = 0;  // low, high NaN: no interval
};

// The line through d[r] (every seed's paired improvement at x[r], the rungs with results) read at
// x_star, with the interval above at `level`; `extra_var`: the variance of what it is compared
// with beyond the effect itself (a backtest's measured mean), 0 at the target.
Prediction predict_at(const std::vector<double>& x, const std::vector<std::vector<double>>& d, double x_star,
                      const LadderNoise& noise, double extra_var, double level = 0.95);

}  // namespace sweep
