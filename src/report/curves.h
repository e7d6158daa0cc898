// Where effects happen along training: the paired Δ-loss curve of each intervention and the
// tokens it needs to reach the baseline's final validation loss, with CIs over seeds; and a note
// when the curves have too few points to show their shape. Pure: computed from the runs' curves.
#pragma once

#include <vector>

#include "report/analysis.h"

namespace sweep {

// Validation points a run should have to show its curve's shape.
inline constexpr size_t k_wanted_val_points = 20;

// The Δ-loss curves and tokens-to-target of every intervention that has seeds in common with the
// baseline (in `a`'s ranked order), and notes for the reader.
void analyze_curves(const ReportInput& in, Analysis& a);

// The first token count at which `curve` (tokens ascending) reaches `target` or below, linear
// between points; nullopt when it never does.
std::optional<double> tokens_to_reach(const std::vector<std::pair<int64_t, double>>& curve, double target);

// `curve` at `tokens`, linear between points; nullopt outside its range.
std::optional<double> interpolate(const std::vector<std::pair<int64_t, double>>& curve, double tokens);

}  // namespace sweep
