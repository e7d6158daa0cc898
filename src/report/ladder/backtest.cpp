#include "report/ladder/backtest.h"

#include "report/ladder/summary.h"
#include "report/ladder/prediction.h"
#include "report/stats.h"

#include <algorithm>
#include <cmath>

#include "util/text.h"

namespace sweep {

namespace {

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (const double x : v) {
    sum += x;
  }
  return v.empty() ? k_nan : sum / static_cast<double>(v.size());
}

// Agreement counts: the shares' numerators and denominators.
struct Tally {
  double trend_sign = 0, single_sign = 0, signs = 0;
  double trend_pairs = 0, single_pairs = 0, pairs = 0;
  double covered = 0, intervals = 0, decided = 0, half_widths = 0;

  // Sign agreement of each prediction; ties (a measured 0) left out.
  void add_signs(const std::vector<BacktestPrediction>& ps) {
    for (const auto& p : ps) {
      if (p.measured == 0) {
        continue;
      }
      signs += 1;
      trend_sign += (p.trend > 0) == (p.measured > 0) && p.trend != 0;
      single_sign += (p.single > 0) == (p.measured > 0) && p.single != 0;
      if (std::isfinite(p.pi_low) && std::isfinite(p.pi_high)) {
        intervals += 1;
        covered += p.pi_low <= p.measured && p.measured <= p.pi_high;
        decided += p.pi_low > 0 || p.pi_high < 0;
        half_widths += (p.pi_high - p.pi_low) / 2;
      }
    }
  }

  // Decision accuracy: every pair of arms, the baseline (0 everywhere) among them, ordered alike
  // by the prediction and by the hidden rung; a pair the hidden rung ties is left out, a predicted
  // tie counts half.
  void add_pairs(const std::vector<BacktestPrediction>& ps) {
    std::vector<BacktestPrediction> arms{{}};  // the baseline
    arms.insert(arms.end(), ps.begin(), ps.end());
    const auto agree = [](double predicted, double measured) {
      return predicted == 0 ? 0.5 : (predicted > 0) == (measured > 0) ? 1.0 : 0.0;
    };
    for (size_t i = 0; i < arms.size(); ++i) {
      for (size_t j = i + 1; j < arms.size(); ++j) {
        const double measured = arms[i].measured - arms[j].measured;
        if (measured == 0) {
          continue;
        }
        pairs += 1;
        trend_pairs += agree(arms[i].trend - arms[j].trend, measured);
        single_pairs += agree(arms[i].single - arms[j].single, measured);
      }
    }
  }

  static double share(double k, double n) { return n > 0 ? k / n : k_nan; }
};

BacktestRow hide(const LadderSummary& ladder, const std::string& sweep, const std::vector<double>& x, size_t hidden) {
  BacktestRow row;
  row.sweep = sweep;
  row.hidden = ladder.rungs[hidden].name;
  row.compute_ratio = ladder.rungs[hidden - 1].flops / ladder.rungs[hidden].flops;
  const std::vector<double> x_below(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(hidden));
  // the rungs below give the line, its noise and the bend allowance; the hidden rung only its noise level
  std::vector<std::vector<std::vector<double>>> paired;
  for (const auto& t : ladder.trends) {
    paired.push_back(t.paired);
  }
  LadderNoise noise = ladder_noise(x, paired, hidden);
  const auto [hidden_var, hidden_df] = rung_seed_var(paired, hidden);
  noise.df += hidden_df;
  for (const auto& t : ladder.trends) {
    if (t.paired.size() <= hidden || t.paired[hidden].empty() || t.paired[hidden - 1].empty()) {
      continue;
    }
    const std::vector<std::vector<double>> below(t.paired.begin(), t.paired.begin() + static_cast<std::ptrdiff_t>(hidden));
    const double seeds = static_cast<double>(t.paired[hidden].size());
    const Prediction fit = predict_at(x_below, below, x[hidden], noise, hidden_var / seeds);
    if (!std::isfinite(fit.at)) {
      continue;
    }
    // the rungs below the line went through: those with paired results (a rung may have none yet)
    row.rungs_below = std::max<int64_t>(
        row.rungs_below, std::count_if(below.begin(), below.end(), [](const std::vector<double>& r) { return !r.empty(); }));
    BacktestPrediction p;
    p.intervention = t.intervention;
    p.measured = mean_of(t.paired[hidden]);
    p.seeds = static_cast<int64_t>(t.paired[hidden].size());
    p.trend = fit.at;
    p.pi_low = fit.low;
    p.pi_high = fit.high;
    p.single = mean_of(t.paired[hidden - 1]);
    row.predictions.push_back(p);
  }
  Tally tally;
  tally.add_signs(row.predictions);
  tally.add_pairs(row.predictions);
  row.trend_sign = Tally::share(tally.trend_sign, tally.signs);
  row.single_sign = Tally::share(tally.single_sign, tally.signs);
  row.trend_accuracy = Tally::share(tally.trend_pairs, tally.pairs);
  row.single_accuracy = Tally::share(tally.single_pairs, tally.pairs);
  row.arm_pairs = static_cast<int64_t>(tally.pairs);
  row.coverage = Tally::share(tally.covered, tally.intervals);
  return row;
}

}  // namespace

Backtest backtest_ladder(const LadderSummary& ladder, const std::string& sweep) {
  Backtest b;
  std::vector<double> x;
  for (const auto& r : ladder.rungs) {
    x.push_back(r.flops > 0 ? std::log10(r.flops) : k_nan);
  }
  for (size_t hidden = 2; hidden < ladder.rungs.size(); ++hidden) {
    bool placed = true;
    for (size_t k = 0; k <= hidden; ++k) {
      placed = placed && std::isfinite(x[k]);
    }
    if (!placed) {
      continue;  // a rung without FLOPs has no place on the line (the ladder's notes say which)
    }
    // a prediction goes up the ladder: a rung at no more FLOPs than the one below is no test of it
    if (ladder.rungs[hidden].flops <= ladder.rungs[hidden - 1].flops) {
      b.unscored.push_back("rung " + ladder.rungs[hidden].name + ": its training FLOPs are not above rung " +
                           ladder.rungs[hidden - 1].name + "'s (compute ratio " +
                           format_number("%.3g", ladder.rungs[hidden - 1].flops / ladder.rungs[hidden].flops) +
                           " ≥ 1): not hidden — order the rungs by compute");
      continue;
    }
    BacktestRow row = hide(ladder, sweep, x, hidden);
    if (!row.predictions.empty()) {
      b.rows.push_back(std::move(row));
    }
  }
  if (b.rows.empty()) {
    b.why = ladder.rungs.size() < 3
                ? "a backtest hides a rung with 2 rungs below it: the ladder has " + plural(static_cast<int64_t>(ladder.rungs.size()), "rung")
                : "no rung with 2 rungs below it has paired results of an intervention at it and at the 2 below "
                  "(with known training FLOPs)";
  }
  return b;
}

BacktestPooled pool_backtest(const std::vector<BacktestRow>& rows) {
  BacktestPooled p;
  Tally tally;
  for (const auto& r : rows) {
    tally.add_signs(r.predictions);
    tally.add_pairs(r.predictions);
    p.predictions += static_cast<int64_t>(r.predictions.size());
  }
  p.rows = static_cast<int64_t>(rows.size());
  p.arm_pairs = static_cast<int64_t>(tally.pairs);
  p.trend_sign = Tally::share(tally.trend_sign, tally.signs);
  p.single_sign = Tally::share(tally.single_sign, tally.signs);
  p.trend_accuracy = Tally::share(tally.trend_pairs, tally.pairs);
  p.single_accuracy = Tally::share(tally.single_pairs, tally.pairs);
  p.coverage = Tally::share(tally.covered, tally.intervals);
  p.intervals = static_cast<int64_t>(tally.intervals);
  p.covered = static_cast<int64_t>(tally.covered);
  p.decided = static_cast<int64_t>(tally.decided);
  p.half_width = Tally::share(tally.half_widths, tally.intervals);
  return p;
}

}  // namespace sweep
