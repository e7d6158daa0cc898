// How often does a small-scale verdict come true? A ladder's backtest hides each rung that has 2 or
// more rungs below it, predicts every intervention's improvement there from the rungs below — by
// the trend (the line through their paired improvements against log10 training FLOPs, its 95%
// prediction interval for the hidden rung's mean) and by DataDecide's single-scale rule (the
// improvement at the largest rung below) — and compares both with what the hidden rung measured:
// sign agreement, decision accuracy over pairs of arms (the baseline one of them), and the
// trend's interval coverage, against the compute ratio between the predicting and the predicted
// rung. Pure: no database, no files.
#pragma once

#include <string>
#include <vector>

#include "report/analysis.h"
#include "report/tables.h"

namespace sweep {

// The ladder's backtest from its trends' paired improvements and its rungs' FLOPs; `why` says what
// is missing when no rung can be hidden.
Backtest backtest_ladder(const LadderSummary& ladder, const std::string& sweep);

// Rows pooled: every prediction and arm pair counted once.
struct BacktestPooled {
  int64_t rows = 0, predictions = 0, arm_pairs = 0;
  int64_t intervals = 0, covered = 0;  // the trend's intervals, and those covering the hidden rung's mean
  double trend_sign = 0, single_sign = 0, trend_accuracy = 0, single_accuracy = 0, coverage = 0;
};
BacktestPooled pool_backtest(const std::vector<BacktestRow>& rows);

// Whether the trend beats the single-scale rule, in a sentence (decision accuracy pooled).
std::string backtest_sentence(const std::vector<BacktestRow>& rows);

// What the backtest says of the ladder's extrapolation to its target: the coverage measured at the
// compute ratio nearest the target's (largest rung ÷ target), or that none was measured that far.
// "" without a target.
std::string backtest_target_sentence(const LadderSummary& ladder);

// The table: one row per hidden rung (and a pooled row with more than one).
std::vector<std::string> backtest_headers();
Rows backtest_table(const std::vector<BacktestRow>& rows);

}  // namespace sweep
