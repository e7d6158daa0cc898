// How the metric responds along a sweep's numeric grid/zip/tune dimensions, and which value is
// best: a quadratic in log(x) fitted by least squares over every seed's value at the 3 values
// around the lowest mean, its lowest point within the tried range, and a 95% CI from its seeds'
// own fits, widened for the curve's shape (below).
// Pure: no database, no files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/seeds.h"
#include "report/stats.h"

namespace sweep {

// The metric along one grid/zip dimension, for one series (an intervention, the other axes fixed).
struct ResponsePoint {
  std::string variant;
  double x = 0;
  std::map<SeedKey, double> values;  // one per seed
  Summary summary;
};
struct OptimumFit {
  bool fitted = false;
  std::string note;           // why there is no fit, or what to know about it
  bool log_x = true;          // fitted against log(x) (false: some x ≤ 0, fitted against x)
  Quadratic curve;            // metric ≈ curve(log x) (or curve(x))
  double fit_low = 0, fit_high = 0;  // the x's the curve was fitted over: its 3 values'
  double best = 0;            // where the fitted curve is lowest within the tried range
  bool inside = false;        // a true minimum inside the range (else the best lies at an end, or beyond)
  double ci_low = 0, ci_high = 0;  // bootstrap 95% over seeds (NaN with one seed)
  double share_inside = 0;    // of the resamples whose minimum lay inside the range
  int64_t seeds = 0, resamples = 0, points = 0;
};
struct Response {
  std::string label;               // "batch size (sequences)", or the axis key
  std::vector<std::string> keys;   // the dimension's keys
  std::string series;              // what the curve holds fixed
  bool log_x = false;              // x spans a factor ≥ 4 (and is positive): shown on a log axis
  std::vector<ResponsePoint> points;  // by x
  OptimumFit fit;
};

// One response per numeric dimension and series (an intervention, the other axes held fixed).
// The x of a dimension that changes the global batch is the batch in sequences (micro_batch ×
// grad_accum × ranks); otherwise its first numeric key. `notes` receives what the reader must
// know (a dimension with no numeric key, too few values to fit).
std::vector<Response> find_responses(const ReportInput& in, std::vector<std::string>& notes);

// The series `v` belongs to along the dimension of keys `along`: its intervention and its values
// of the other axes ("clip+grad_accum=4"), as variant names show them.
std::string series_of(const VariantRuns& v, const std::vector<std::string>& along);

// The series along the dimension of keys `keys`: each one's name and its variants (in the sweep
// file's order: a series first met first).
std::vector<std::pair<std::string, std::vector<const VariantRuns*>>> series_along(const ReportInput& in,
                                                                                  const std::vector<std::string>& keys);

// The first of `keys` with a number in every variant: a dimension's x; nullopt when none.
std::optional<std::string> first_numeric_key(const ReportInput& in, const std::vector<std::string>& keys);

// A grid value's JSON text as a finite number; nullopt when it is not one.
std::optional<double> axis_number(const std::string& json_text);

// An optimum is fitted locally: the quadratic through the value with the lowest mean and its two
// neighbours (the three at an end), so that a curve that is no parabola away from its minimum — a
// learning rate's loss, far steeper above its best than below — does not pull the minimum. (One
// quadratic through every value, with a bootstrap CI over seeds, covered the true best in 74–84%
// of true quadratics and none of the lopsided curves: docs/verdicts.md, measured at aa8150c.)

// How far off a 3-point fit's minimum may lie, as a share of its values' larger step, when the
// curve is up to 4× steeper on one side of its minimum than on the other (a learning rate's loss
// is: ~3.3× above its best, measured in reports/tuned-speedrun): at most 0.344 of a step, toward
// the shallower side. The best value's CI is the t interval of each seed's own fit's
// minimum (around the fit to all seeds), widened on each side by this share of a step — in
// quadrature: the shape's error and the seeds' are independent. Resampling seeds cannot see the
// shape's: it is the same on every seed. `sweep calibrate --tune` measures the coverage.
inline constexpr double k_best_shape_allowance = 0.35;

// The first and last x of a fit's 3 values among (x, mean) pairs sorted by x: the lowest
// mean's x and its neighbours, or the 3 at the end where it lies (all of them when 3 or fewer).
std::pair<double, double> local_window(const std::vector<std::pair<double, double>>& x_means);

// A quadratic in log x (in x when not log_x) fitted by least squares to the (x, value) pairs at
// local_window's 3 x's by their mean values, and the first and last x it speaks for, in x and in
// t, the fit's axis. Empty with fewer than 3 distinct x or a degenerate fit.
struct FittedCurve {
  Quadratic q;
  double first = 0, last = 0;  // the x's, as tried
  double lo = 0, hi = 0;       // the same in t
};
std::optional<FittedCurve> fit_curve(const std::vector<std::pair<double, double>>& xy, bool log_x);

// The best x of `points` (by x): see the file comment. `resamples` bootstrap resamples of the
// seeds (each choosing its 3 values again), from a generator seeded with `seed` so that a report
// is reproducible, give the share of minima inside the range — and the CI when fewer than 2 seeds
// have a fit of their own.
OptimumFit fit_optimum(const std::vector<ResponsePoint>& points, int64_t resamples = 2000, uint64_t seed = 1);

}  // namespace sweep
