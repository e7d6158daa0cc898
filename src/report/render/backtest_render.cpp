#include "report/render/backtest_render.h"

#include <cmath>
#include <string>

#include "report/ladder/summary.h"
#include "util/text.h"

namespace sweep {

namespace {

std::string share_text(double x) { return std::isfinite(x) ? format_number("%.2f", x) : "-"; }

}  // namespace

std::string backtest_sentence(const std::vector<BacktestRow>& rows) {
  if (rows.empty()) {
    return "";
  }
  const BacktestPooled p = pool_backtest(rows);
  const std::string over = "over " + plural(p.arm_pairs, "pair") + " of arms at " + plural(p.rows, "hidden rung");
  if (!std::isfinite(p.trend_accuracy)) {
    return "the backtest has no pair of arms the hidden rungs tell apart";
  }
  const std::string figures = "decision accuracy " + share_text(p.trend_accuracy) + " by the trend against " +
                              share_text(p.single_accuracy) + " by the single-scale rule " + over +
                              (p.trend_accuracy == p.single_accuracy ? " (a tie)" : "");
  // on synthetic ladders, bent or with a noisier top rung, the intervals cover ≥ 90% (sweep calibrate --backtest)
  const std::string coverage =
      p.intervals == 0 ? ""
                       : "; the trend's 95% intervals covered the hidden rung's mean in " + std::to_string(p.covered) +
                             " of " + std::to_string(p.intervals) +
                             (p.intervals < p.predictions ? " (none from 2 rungs below)" : "") +
                             (static_cast<double>(p.covered) < 0.9 * static_cast<double>(p.intervals)
                                ? " — less than synthetic ladders give (≥ 0.90, bent or not, sweep calibrate --backtest): "
                                  "the trend bends more than its rungs below show"
                                : "");
  return (p.trend_accuracy > p.single_accuracy
              ? "the trend beats the single-scale rule (the ranking at the largest rung below): " + figures
              : "the trend does not beat the single-scale rule (the ranking at the largest rung below) — trust the "
                "largest rung's verdicts over the extrapolation: " + figures) +
         coverage;
}

std::string backtest_target_sentence(const LadderSummary& l) {
  if (!l.ladder.target_unit || !std::isfinite(l.target_flops) || l.rungs.empty()) {
    return "";
  }
  const double ratio = l.rungs.back().flops / l.target_flops;
  const std::string at = "the target lies at a compute ratio of " + format_number("%.3g", ratio) + " (the largest rung ÷ the target)";
  if (l.backtest.rows.empty()) {
    return at + "; no backtest measures how often this ladder's intervals come true (" + l.backtest.why + ")";
  }
  const BacktestRow* nearest = nullptr;
  const BacktestRow* farthest = nullptr;
  for (const auto& r : l.backtest.rows) {
    if (!std::isfinite(r.coverage)) {
      continue;  // hidden with 2 rungs below: no interval to measure
    }
    const auto distance = [&](const BacktestRow* x) { return std::abs(std::log(x->compute_ratio / ratio)); };
    nearest = nearest == nullptr || distance(&r) < distance(nearest) ? &r : nearest;
    farthest = farthest == nullptr || r.compute_ratio < farthest->compute_ratio ? &r : farthest;
  }
  if (nearest == nullptr) {
    return at + "; no backtest measures how often this ladder's intervals come true (an interval needs a hidden "
                "rung with 3 rungs below it)";
  }
  const std::string measured = "coverage " + share_text(nearest->coverage) + " at ratio " + format_number("%.3g", nearest->compute_ratio) +
                               " (rung " + nearest->hidden + " hidden)";
  if (ratio < farthest->compute_ratio / 3) {
    return at + "; the backtest measured none that far — its farthest: " + measured +
           ": how often the target's interval holds is not measured";
  }
  return at + "; the backtest measured the 95% interval's " + measured + ", the nearest to it";
}

std::vector<std::string> backtest_headers() {
  return {"ladder", "hidden rung", "rungs below", "compute ratio", "interventions", "sign: trend", "sign: single",
          "accuracy: trend", "accuracy: single", "pairs", "95% PI covers"};
}

Rows backtest_table(const std::vector<BacktestRow>& rows) {
  Rows out;
  for (const auto& r : rows) {
    out.push_back({r.sweep, r.hidden, std::to_string(r.rungs_below), format_number("%.3g", r.compute_ratio),
                   std::to_string(r.predictions.size()), share_text(r.trend_sign), share_text(r.single_sign),
                   share_text(r.trend_accuracy), share_text(r.single_accuracy), std::to_string(r.arm_pairs),
                   share_text(r.coverage)});
  }
  if (rows.size() > 1) {
    const BacktestPooled p = pool_backtest(rows);
    out.push_back({"all", "-", "-", "-", std::to_string(p.predictions), share_text(p.trend_sign), share_text(p.single_sign),
                   share_text(p.trend_accuracy), share_text(p.single_accuracy), std::to_string(p.arm_pairs),
                   share_text(p.coverage)});
  }
  return out;
}

}  // namespace sweep
