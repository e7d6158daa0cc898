// A ladder's backtest (report/ladder/backtest.h) in words and as a table: what the ladder report
// and `sweep backtest` print.
#pragma once

#include <string>
#include <vector>

#include "report/ladder/backtest.h"
#include "report/render/tables.h"

namespace sweep {

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
