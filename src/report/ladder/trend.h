// A line through an intervention's paired improvements across a ladder's rungs, and its verdict:
// what a ladder's trends (report/ladder/ladder.h) and its backtest (report/ladder/backtest.h) fit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/ladder/summary.h"

namespace sweep {

// FLOPs as the ladder's sentences print them: 3 significant digits.
std::string flops_text(double flops);

// The line through paired improvements d[r] (baseline − variant, one per seed) at x[r] =
// log10(rung r's training FLOPs), from 3 rungs with pairs: everything but the Holm-adjusted
// p-values, the verdict and the reading at the target (report/ladder/prediction.h).
Trend fit_trend(const std::vector<double>& x, const std::vector<std::vector<double>>& d, double min_effect);
// The verdict from the Holm-adjusted p-values: flips sign, grows or shrinks when the slope differs
// from 0 (flips when the line's 95% CIs at the two ends exclude 0 on opposite sides); holds when
// the change across the ladder is shown within ±min_effect; else undecided.
void judge_trend(Trend& t, double alpha, double min_effect);

}  // namespace sweep
