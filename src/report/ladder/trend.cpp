#include "report/ladder/trend.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/stats.h"
#include "util/text.h"

namespace sweep {

std::string flops_text(double flops) { return format_number("%.3g", flops); }

Trend fit_trend(const std::vector<double>& x, const std::vector<std::vector<double>>& d, double min_effect) {
  constexpr double level = 0.95;
  constexpr int64_t min_rungs = 3;
  Trend t;
  t.mean = t.slope = t.slope_low = t.slope_high = t.df = t.p = t.p_holm = t.change = k_nan;
  t.p_holds = t.p_holds_holm = t.low_end = t.low_end_lo = t.low_end_hi = t.high_end = t.high_end_lo = k_nan;
  t.high_end_hi = t.crossover = t.crossover_low = t.crossover_high = t.tau = k_nan;
  t.at_target = t.target_low = t.target_high = k_nan;
  // The pairs, and the rungs that have them.
  double n = 0, sum_x = 0, sum_d = 0, x_min = std::numeric_limits<double>::infinity(), x_max = -x_min;
  for (size_t r = 0; r < x.size(); ++r) {
    if (d[r].empty() || !std::isfinite(x[r])) {
      continue;
    }
    ++t.rungs;
    x_min = std::min(x_min, x[r]);
    x_max = std::max(x_max, x[r]);
    for (double v : d[r]) {
      n += 1;
      sum_x += x[r];
      sum_d += v;
    }
  }
  t.pairs = static_cast<int64_t>(n);
  if (t.rungs < min_rungs || t.rungs < 2) {
    t.verdict = TrendVerdict::no_result;
    t.why = "a trend needs paired results at " + std::to_string(min_rungs) + " rungs; " + std::to_string(t.rungs) + " have them";
    return t;
  }
  const double x_bar = sum_x / n, d_bar = sum_d / n;
  double sxx = 0, sxd = 0;
  for (size_t r = 0; r < x.size(); ++r) {
    for (double v : d[r]) {
      sxx += (x[r] - x_bar) * (x[r] - x_bar);
      sxd += (x[r] - x_bar) * (v - d_bar);
    }
  }
  t.mean = d_bar;
  t.slope = sxd / sxx;
  auto line = [&](double at) { return d_bar + t.slope * (at - x_bar); };
  // Residuals about the line: within the rungs (seed noise) and of the rungs' means (lack of fit).
  double ss_res = 0, ss_within = 0, ss_lack = 0;
  for (size_t r = 0; r < x.size(); ++r) {
    if (d[r].empty()) {
      continue;
    }
    double rung_mean = 0;
    for (double v : d[r]) {
      rung_mean += v / static_cast<double>(d[r].size());
    }
    for (double v : d[r]) {
      ss_res += (v - line(x[r])) * (v - line(x[r]));
      ss_within += (v - rung_mean) * (v - rung_mean);
    }
    ss_lack += static_cast<double>(d[r].size()) * (rung_mean - line(x[r])) * (rung_mean - line(x[r]));
  }
  t.df = n - 2;
  const double s2 = t.df > 0 ? ss_res / t.df : k_nan;
  const double se_slope = std::sqrt(s2 / sxx);
  const Comparison slope = t_estimate(t.slope, se_slope, t.df, level);
  t.slope_low = slope.ci_low;
  t.slope_high = slope.ci_high;
  t.p = slope.p;
  const double span = x_max - x_min;
  t.change = t.slope * span;
  if (min_effect > 0) {
    Comparison change;
    change.improvement = t.change;
    change.se = se_slope * span;
    change.df = t.df;
    t.p_holds = tost_p(change, min_effect);
  }
  const double q = t.df > 0 ? t_quantile(level, t.df) : k_nan;
  auto se_line = [&](double at) { return std::sqrt(s2 * (1 / n + (at - x_bar) * (at - x_bar) / sxx)); };
  t.low_end = line(x_min);
  t.low_end_lo = t.low_end - q * se_line(x_min);
  t.low_end_hi = t.low_end + q * se_line(x_min);
  t.high_end = line(x_max);
  t.high_end_lo = t.high_end - q * se_line(x_max);
  t.high_end_hi = t.high_end + q * se_line(x_max);
  // Where the line is 0, and Fieller's interval for it: the x whose line's t interval holds 0.
  if (t.slope != 0) {
    t.crossover = std::pow(10.0, x_bar - d_bar / t.slope);
    const double g = t.slope * t.slope - q * q * s2 / sxx;
    const double disc = d_bar * d_bar * t.slope * t.slope - g * (d_bar * d_bar - q * q * s2 / n);
    if (g > 0 && disc >= 0) {  // bounded only when the slope itself is shown to be non-zero
      const double a = (-d_bar * t.slope - std::sqrt(disc)) / g, b = (-d_bar * t.slope + std::sqrt(disc)) / g;
      t.crossover_low = std::pow(10.0, x_bar + std::min(a, b));
      t.crossover_high = std::pow(10.0, x_bar + std::max(a, b));
    }
  }
  // The rungs' scatter about the line beyond what their seeds explain (a random effect per rung,
  // by the method of moments): a new size deviates from the line by as much. With one seed per
  // rung the two cannot be told apart and all the residual counts as scatter.
  const double df_within = n - static_cast<double>(t.rungs), df_lack = static_cast<double>(t.rungs) - 2;
  const double tau2 = df_within > 0 && df_lack > 0
                          ? std::max(0.0, (ss_lack / df_lack - ss_within / df_within) / (n / static_cast<double>(t.rungs)))
                          : s2;
  t.tau = std::sqrt(tau2);
  return t;
}

void judge_trend(Trend& t, double alpha, double min_effect) {
  if (!std::isfinite(t.p)) {
    if (t.why.empty()) {  // else fit_trend said why
      t.verdict = TrendVerdict::no_result;
      t.why = "no test: fewer than 3 paired results";
    }
    return;
  }
  const std::string ends = "from " + format_number("%+.4f", t.low_end) + " at the smallest rung to " +
                           format_number("%+.4f", t.high_end) + " at the largest";
  if (t.p_holm < alpha) {
    const bool flips = (t.low_end_lo > 0 && t.high_end_hi < 0) || (t.low_end_hi < 0 && t.high_end_lo > 0);
    const std::string crossing =
        std::isfinite(t.crossover)
            ? "; the line crosses 0 at " + flops_text(t.crossover) + " FLOPs" +
                  (std::isfinite(t.crossover_low)
                       ? " [" + flops_text(t.crossover_low) + ", " + flops_text(t.crossover_high) + "]"
                       : std::string(" (its interval unbounded)"))
            : "";
    // where the line reaches 0 toward the larger sizes: inside the ladder, or ahead of it
    const std::string ahead = flips || std::abs(t.high_end) < std::abs(t.low_end) ? crossing : "";
    if (flips) {
      t.verdict = TrendVerdict::flips_sign;
      t.why = (t.low_end > 0 ? "better" : "worse") + std::string(" at the smallest rung, ") +
              (t.high_end > 0 ? "better" : "worse") + " at the largest (both ends' 95% CI exclude 0)" + crossing;
    } else {
      t.verdict = std::abs(t.high_end) > std::abs(t.low_end) ? TrendVerdict::grows : TrendVerdict::shrinks;
      t.why = ends + ahead;
    }
  } else if (min_effect > 0 && t.p_holds_holm < alpha) {
    t.verdict = TrendVerdict::holds;
    t.why = "changes by " + format_number("%+.4f", t.change) + " across the ladder, shown within ±" +
            format_number("%g", min_effect);
  } else {
    t.verdict = TrendVerdict::undecided;
    t.why = min_effect > 0 ? "not shown to change with scale, nor to stay within ±" + format_number("%g", min_effect) +
                                 " across the ladder"
                           : "not shown to change with scale; declare min_effect to test whether it holds";
  }
}

}  // namespace sweep
