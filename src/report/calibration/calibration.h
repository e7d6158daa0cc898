// The harness's own error rates, measured: synthetic studies with a known truth, analysed by the
// report's own code (analyze, and next_round for --until-decided) exactly as real ones are. A
// study has a baseline and `interventions` variants that share one true effect; a variant's
// metric at a seed is μ − effect + σ·(ρ·z + √(1 − ρ²)·w), the baseline's μ + σ·z, with z shared by
// every variant at that seed (the same initial weights and batches) and w its own. A last row
// group mixes the effects: intervention i has the i-th (cyclically).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "report/analysis.h"
#include "report/calibration/verdict_tally.h"

namespace sweep {

struct CalibrationSetup {
  double sigma = 0;          // seed-to-seed standard deviation of one variant's metric
  double rho = 0;            // correlation of a variant's and the baseline's metric at one seed
  double min_effect = 0;     // δ
  double better_by = 0;      // m, the margin of `better by more than m` (0: not tested)
  double better_by_alpha = 0.05;
  int64_t seeds = 3;         // declared seeds (the fixed design, and --until-decided's first look)
  int64_t max_seeds = 12;    // --until-decided's cap
  int64_t interventions = 1;
  std::vector<double> effects{0, 0.5, 1, 2};  // true improvements, in multiples of δ
  int64_t replicates = 1000;                  // studies per effect and design
  uint64_t seed = 1;
  // told after each study: how many of how many (a million replicates is a day: `sweep calibrate` says how far)
  std::function<void(int64_t done, int64_t total)> progress{};
  double alpha = 0.05;
  Spending spending = Spending::pocock;  // of --until-decided (SeedDesign::spending)
  std::string source;        // where σ and ρ come from (a sentence)
};

// Reads σ (the baseline's seed-to-seed sd), ρ (from the median sd of the paired differences),
// δ, the declared seeds and the interventions from an analysed sweep. Throws when it lacks them.
CalibrationSetup setup_from(const Analysis& a, const ReportInput& in);

struct CalibrationRow : VerdictShares {  // the interventions judged: their verdicts' shares
  double effect = 0;            // the true improvement (NaN: mixed, the setup's effects in turn)
  bool mixed = false;
  std::string design;           // "fixed, 3 seeds", "until decided, 3 to 12 seeds"
  double correct = 0;           // share decided correctly: equivalent at 0; better or equivalent
                                // below δ; better from δ on
  double false_equivalent = 0, any_false_equivalent = 0;  // effect ≥ δ: equivalent or (< δ) claims,
                                                          // per intervention and per study
  double seeds = 0;             // mean seeds per variant (the baseline included)
  int64_t fixed_same = -1;      // --until-decided rows: the fewest seeds a fixed design needs to
                                // decide correctly as often, within the 95% binomial error of this
                                // row's rate (-1: none up to the cap does)
};

std::vector<CalibrationRow> calibrate(const CalibrationSetup& setup);

// The table as Markdown, with the setup and the binomial 95% interval of each rate's error.
std::string calibration_markdown(const CalibrationSetup& setup, const std::vector<CalibrationRow>& rows);
// Its first paragraph, what the studies are: calibration_markdown begins with it.
std::string calibration_header(const CalibrationSetup& setup);

}  // namespace sweep
