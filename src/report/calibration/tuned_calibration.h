// The tuned verdicts' error rates and coverage, measured (`sweep calibrate --tune`): synthetic
// studies with a tune axis over a learning rate, analysed by the report's own code. Arm a's
// metric at seed s and value 2^t (t = log2 of the value ÷ the base value) is a bowl plus noise:
//   depth_a + curvature · k · (t − centre_a)² + σ · (ρ · z_s + √(1 − ρ²) · w_as) + run_sigma · e_asv,
// with z_s shared by every run of seed s (the same initial weights and batches), w_as by an arm's
// runs at that seed, e_asv each run's own; k = 1 in a symmetric bowl, and `asymmetry` above the
// best in an asymmetric one (a real learning rate's loss rises far more steeply above its best
// than below). The scenarios: every arm with the baseline's bowl; arms whose bowl only moves
// sideways (its best at the base value, the baseline's a doubling above); arms deeper by δ and 2δ
// (the interval's coverage of the true difference); then the same bowl, the sideways moves (by a
// doubling, and by half of one: its best off the values' grid where the baseline's is not) and 2δ
// deeper with asymmetric bowls. Each scenario in a
// fixed design and, with max_seeds, under --until-decided: the runner's loop on the report's own
// next_round, seeds added per arm (at every value) while its verdict at its best is open.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/choices.h"
#include "report/calibration/verdict_tally.h"

namespace sweep {

struct TunedCalibrationSetup {
  double sigma = 0.008;       // seed-to-seed sd of an arm's metric
  double rho = 0.5;           // correlation of two arms' seed noise at one seed
  double run_sigma = 0.004;   // each run's own noise
  double curvature = 0.03;    // the bowl's rise per (doubling)² away from its minimum
  double asymmetry = 4;       // the asymmetric bowls: how many times steeper above the minimum than below
  double min_effect = 0.005;  // δ
  double better_by = 0;       // m, the margin of `better by more than m` at an arm's best (0: not tested)
  double better_by_alpha = 0.05;
  int64_t seeds = 3;
  int64_t max_seeds = 0;      // --until-decided's cap (0: the fixed design only)
  Spending spending = Spending::pocock;
  int64_t interventions = 4;
  std::vector<double> grid{-1, 0, 1, 2};  // log2 of the values tried ÷ the base value (0 must be one)
  int64_t replicates = 1000;
  uint64_t seed = 1;
  // told after each study: how many of how many (a million replicates is a day: `sweep calibrate` says how far)
  std::function<void(int64_t done, int64_t total)> progress{};
  double alpha = 0.05;
};

struct TunedCalibrationRow : VerdictShares {  // at each arm's best
  std::string scenario;
  std::string design;           // "fixed, 3 seeds", "until decided, 3 to 8 seeds"
  double truth = 0;             // the true difference of minima, baseline − arm (positive: the arm is better)
  double base_better = 0;       // share called better at the base value
  double confounded_when_base_better = 0;  // of those, the share called <key>-confounded (any reason)
  double extend = 0;            // share whose outcome is "extend the grid"
  double coverage = 0;          // share whose 95% interval at the best covers the truth
  int64_t best_judged = 0;      // arms (the baseline's too) whose best value has a bootstrap CI
  double best_coverage = 0;     // of those, the share whose CI covers the arm's true best value
  double best_width = 0;        // their CI's mean width, in doublings (log2 of high ÷ low)
  double seeds = 0;             // mean seeds per arm (the baseline's included)
};

std::vector<TunedCalibrationRow> calibrate_tuned(const TunedCalibrationSetup& setup);
std::string tuned_calibration_markdown(const TunedCalibrationSetup& setup, const std::vector<TunedCalibrationRow>& rows);
// Its first paragraph, what the studies are: tuned_calibration_markdown begins with it.
std::string tuned_calibration_header(const TunedCalibrationSetup& setup);

}  // namespace sweep
