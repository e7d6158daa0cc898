// `sweep calibrate --eliminate`: the elimination rule (report/eliminate/rule.h) on simulated studies
// with a known truth. Each arm's paired Δ curve over training is its true final effect μ times a
// shape h(f) (h(1) = 1) fitted to the range the committed studies' curves span (their Δ at a quarter
// of training from 0.03× to 4.3× their final Δ): an effect that grows (h = f^p, p from 0.3 to 2.5),
// one that fades (a deficit up to 5× its final size early, h = 1 + (R − 1)(1 − f)^q), or — a share
// of the arms — one that crosses 0: a dip to −D·μ (D from 0.5 to 1.5) between 5% and 25% of training
// (where the committed curves that crossed had theirs), then back through 0 by 70% (they crossed
// between 5% and 25%, one ladder rung at 65%). Each seed adds noise σ·(2 − f) (twice as large early
// as at the end), correlated along the curve (exp(−|f − f′| / 0.3)); an arm's σ is 1× or, for the
// worse arms in the heterogeneous rows, 2× the others'. Effects and σ in units of δ.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "report/eliminate/rule.h"

namespace sweep {

struct EliminationCalibrationSetup {
  int64_t arms = 8;
  int64_t seeds = 3;
  std::vector<double> noises{1, 2, 4};  // a seed's paired Δ standard deviation at the end, in units of δ
  double crossing = 0.125;              // the share of crossing arms (4 of the committed 32)
  EliminationRule rule{};               // δ = 1: every effect is in units of δ
  int64_t replicates = 2000;
  uint64_t seed = 1;
  std::function<void(int64_t done, int64_t total)> progress{};
};

struct EliminationCalibrationRow {
  std::string scenario;
  double noise = 0;
  double false_elimination = 0;  // share of studies with an arm stopped whose true final effect is ≥ −δ
  double arms_false = 0;         // share of such arms stopped
  double crossing_stopped = 0;   // share of the crossing arms whose final effect is ≥ −δ stopped (NaN: none)
  double worse_stopped = 0;      // share of arms with a true final effect < −δ stopped (NaN: none)
  double saved_worse = 0;        // share of those arms' tokens saved
  double saved_total = 0;        // share of the study's tokens saved, the baseline's included
};

std::vector<EliminationCalibrationRow> calibrate_elimination(const EliminationCalibrationSetup& setup);
std::string elimination_calibration_header(const EliminationCalibrationSetup& setup);
std::string elimination_calibration_markdown(const EliminationCalibrationSetup& setup,
                                             const std::vector<EliminationCalibrationRow>& rows);

}  // namespace sweep
