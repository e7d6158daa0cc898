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
// log10(rung r's training FLOPs): everything but the Holm-adjusted p-values and the verdict.
// `x_target` NaN: no extrapolation.
// `min_rungs`: the fewest rungs with pairs it fits (2: the backtest's, whose scatter between rungs
// then cannot be told from seed noise and counts all of it). `new_seeds` > 0: the prediction
// interval at x_target is for the mean of that many new seeds there (their noise added), not
// for the line itself.
Trend fit_trend(const std::vector<double>& x, const std::vector<std::vector<double>>& d, double min_effect,
                double x_target, double level = 0.95, int64_t min_rungs = 3, double new_seeds = 0);
// The verdict from the Holm-adjusted p-values: flips sign, grows or shrinks when the slope differs
// from 0 (flips when the line's 95% CIs at the two ends exclude 0 on opposite sides); holds when
// the change across the ladder is shown within ±min_effect; else undecided.
void judge_trend(Trend& t, double alpha, double min_effect);

}  // namespace sweep
