// The backtest's own reliability, measured (`sweep calibrate --backtest`): synthetic ladders with a
// known truth, backtested by the report's own code. Intervention i's true improvement at rung k
// (x_k = log10 of its training FLOPs, one decade apart) follows a straight line, a bent one or a
// line that crosses 0 between the two largest rungs; each seed's paired improvement adds noise σ,
// at the top rung top_noise·σ in the noisier-top families.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sweep {

struct BacktestCalibrationSetup {
  double sigma = 0.01;        // a seed's paired improvement around the truth, at every rung
  int64_t rungs = 4;          // 3 or more: the top two can be hidden with 2 and 3 rungs below
  int64_t seeds = 3;
  int64_t interventions = 3;
  double bend = 0.01;         // the bent rows' curvature: the improvement's second difference per decade²
  double top_noise = 2.5;     // the noisier-top rows: the top rung's σ ÷ the others'
  int64_t replicates = 1000;
  uint64_t seed = 1;
  // told after each study: how many of how many (a million replicates is a day: `sweep calibrate` says how far)
  std::function<void(int64_t done, int64_t total)> progress{};
};

struct BacktestCalibrationRow {
  std::string scenario;
  int64_t predictions = 0;
  double given = 0;            // share of the predictions with an interval (none from 2 rungs below)
  double coverage = 0;         // share of the trend's 95% intervals that hold the hidden rung's mean
  double decided = 0;          // share of the intervals that exclude 0: the sign decided
  double half_width = 0;       // their mean half-width
  double flagged = 0;          // share of interventions with a hidden rung outside its interval: "the line bends"
  double trend_sign = 0, single_sign = 0, trend_accuracy = 0, single_accuracy = 0;  // pooled over the ladders
};

std::vector<BacktestCalibrationRow> calibrate_backtest(const BacktestCalibrationSetup& setup);
// Its first paragraph, what the ladders are: backtest_calibration_markdown begins with it.
std::string backtest_calibration_header(const BacktestCalibrationSetup& setup);
std::string backtest_calibration_markdown(const BacktestCalibrationSetup& setup,
                                          const std::vector<BacktestCalibrationRow>& rows);

}  // namespace sweep
