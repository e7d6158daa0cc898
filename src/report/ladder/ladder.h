// A scale ladder's analysis: each rung judged as a study of its own, then each intervention's
// trend across the rungs, its speed-up's, the extrapolation to the target and the backtest.
#pragma once

#include <string>

#include "report/analysis.h"

namespace sweep {

// Each rung as a study of its own (the plain analysis), then the trends.
Analysis analyze_ladder(const ReportInput& input);
// The variants of one rung as a study of their own: the ladder's input, its baseline the rung's.
ReportInput rung_input(const ReportInput& input, const std::string& rung);

}  // namespace sweep
