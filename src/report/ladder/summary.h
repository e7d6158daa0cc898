// What a scale ladder's analysis finds beyond each rung's own: the rungs, each intervention's trend
// across them (in loss and in speed-up), the extrapolation to the target, and the backtest. Types
// only: report/ladder/ladder.h computes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/sweep_spec.h"
#include "report/verdict.h"

namespace sweep {

// A scale ladder's rung, as its baseline has it.
struct RungInfo {
  std::string name;
  double params = 0, tokens = 0, flops = 0;  // parameters, training tokens, training FLOPs (flops/token × tokens)
};

// How one intervention's improvement changes across a ladder's rungs: an ordinary least squares
// line through every seed's paired improvement against x = log10(its rung's training FLOPs).
struct Trend {
  std::string intervention;
  int position = 0;
  std::vector<std::string> rung_variants;  // its variant at each rung ("" where it has none)
  int64_t pairs = 0, rungs = 0;            // the seeds paired with the baseline, over the rungs that have them
  double mean = 0;                          // the fitted improvement at the pairs' mean x
  double slope = 0, slope_low = 0, slope_high = 0;  // change of the improvement per 10× training FLOPs, 95% CI
  double df = 0, p = 0, p_holm = 0;         // the intervention × scale interaction: slope ≠ 0 (t-test, Holm)
  double change = 0;                        // slope × the ladder's span in decades: the change across it
  double p_holds = 0, p_holds_holm = 0;     // TOST: the change lies within ±min_effect (NaN: no min_effect)
  double low_end = 0, low_end_lo = 0, low_end_hi = 0;     // the line at the smallest rung, 95% CI
  double high_end = 0, high_end_lo = 0, high_end_hi = 0;  // ... at the largest
  double crossover = 0, crossover_low = 0, crossover_high = 0;  // FLOPs where the line crosses 0 (Fieller CI; NaN: none/unbounded)
  double tau = 0;                           // the rungs' scatter about the line beyond seed noise
  double at_target = 0, target_low = 0, target_high = 0;  // extrapolated improvement, 95% prediction interval
  TrendVerdict verdict = TrendVerdict::no_result;
  std::string why;  // the verdict's reason, in words
  std::vector<std::vector<double>> paired;  // per rung: its seeds' paired improvements (the line's data)
};

// How an intervention's speed-up changes across a ladder's rungs: at each rung, the training FLOPs
// the baseline needs to reach its final validation loss ÷ the FLOPs the intervention needs (per
// seed; the seeds whose intervention reaches it), and a line through their natural logarithms
// against log10(the rung's training FLOPs) — `line`'s values are ln(speed-up), its slope the
// change of ln(speed-up) per 10× FLOPs; no `holds` (no margin is declared for speed-ups).
struct SpeedupTrend {
  std::string intervention;
  std::vector<std::string> rung_variants;  // as its Trend's
  std::vector<int64_t> seeds, reached;     // per rung: the seeds compared, those that reached the target
  std::vector<double> at_rung;             // per rung: the geometric mean speed-up (NaN: no seed reached it)
  Trend line;
};

// A ladder's backtest (report/ladder/backtest.h): one rung hidden, each intervention's improvement there
// predicted from the rungs below it and compared with what the rung measured.
struct BacktestPrediction {
  std::string intervention;
  double measured = 0;                // the hidden rung's mean paired improvement
  int64_t seeds = 0;                  // ... over that many seeds
  double trend = 0, pi_low = 0, pi_high = 0;  // the line through the rungs below, read at the hidden rung; 95% PI
  double single = 0;                  // the largest rung below's mean paired improvement (the single-scale rule)
};
struct BacktestRow {
  std::string sweep, hidden;          // the ladder and the rung hidden
  int64_t rungs_below = 0;            // the rungs the predictions come from
  double compute_ratio = 0;           // training FLOPs of the largest rung below ÷ the hidden rung's
  std::vector<BacktestPrediction> predictions;  // the interventions with results on both sides
  // shares over the interventions (sign) and over pairs of arms, the baseline one of them (decision
  // accuracy, as DataDecide defines it); NaN where there is nothing to compare
  double trend_sign = 0, single_sign = 0, trend_accuracy = 0, single_accuracy = 0;
  int64_t arm_pairs = 0;
  double coverage = 0;                // share of the trend's 95% PIs that hold the measured improvement
};
struct Backtest {
  std::vector<BacktestRow> rows;      // every rung with 2 or more rungs below it, smallest first
  std::string why;                    // when there are none: what is missing
  std::vector<std::string> unscored;  // rungs not hidden, and why: no more FLOPs than the rung below
};

struct LadderSummary {
  Ladder ladder;
  std::vector<RungInfo> rungs;
  double target_flops = 0;   // the target in training FLOPs (NaN: none)
  double target_factor = 0;  // the target ÷ the largest rung, in the target's unit
  bool far = false;          // target_factor > ladder.beyond
  std::string target_rule;   // how a params target became FLOPs
  std::vector<Trend> trends;  // in the sweep file's order
  std::vector<SpeedupTrend> speedups;  // the same interventions, in FLOPs to the baseline's final loss
  Backtest backtest;          // every rung that can be hidden, predicted from the rungs below it
};

}  // namespace sweep
