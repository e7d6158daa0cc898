// How often does a small-scale verdict come true? A ladder's backtest hides each rung that has 2 or
// more rungs below it, predicts every intervention's improvement there from the rungs below — by
// the trend (the line through their paired improvements against log10 training FLOPs, its 95%
// prediction interval for the hidden rung's mean) and by DataDecide's single-scale rule (the
// improvement at the largest rung below) — and compares both with what the hidden rung measured:
// sign agreement, decision accuracy over pairs of arms (the baseline one of them), and the
// trend's interval coverage, against the compute ratio between the predicting and the predicted
// rung. Pure: no database, no files; report/render/backtest_render.h writes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/ladder/summary.h"

namespace sweep {

// The ladder's backtest from its trends' paired improvements and its rungs' FLOPs; `why` says what
// is missing when no rung can be hidden.
Backtest backtest_ladder(const LadderSummary& ladder, const std::string& sweep);

// Rows pooled: every prediction and arm pair counted once.
struct BacktestPooled {
  int64_t rows = 0, predictions = 0, arm_pairs = 0;
  int64_t intervals = 0, covered = 0;  // the trend's intervals, and those covering the hidden rung's mean
  int64_t decided = 0;                 // ... and those that exclude 0 (the sign decided)
  double half_width = 0;               // their mean half-width
  double trend_sign = 0, single_sign = 0, trend_accuracy = 0, single_accuracy = 0, coverage = 0;
};
BacktestPooled pool_backtest(const std::vector<BacktestRow>& rows);

}  // namespace sweep
