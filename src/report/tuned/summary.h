// What a sweep with a tune axis finds beyond the verdicts at the base value: each arm's fitted
// best along the axis, the verdicts there, and what to do next. Types only: report/tuned/tuned.h
// computes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/response.h"
#include "report/variant_stats.h"
#include "report/verdict.h"

namespace sweep {

// An arm of a sweep with a tune axis (report/tuned/tuned.h): an intervention, the other axes fixed.
// Where an arm's runs diverged along the tune axis: at one value, how many of how many, and whether
// the baseline's runs all trained there.
struct TunedDivergence {
  double value = 0;
  int64_t diverged = 0, runs = 0;
  bool baseline_trains = false;
};

struct TunedArm {
  std::string arm;             // its variant at the base value: its name in both tables
  std::string series;          // its curve along the tune axis (Response::series)
  std::vector<std::string> variants;  // its variants, one per value tried (--until-decided adds seeds to all)
  OptimumFit fit;              // along the tune axis, over all its seeds
  double sensitivity = 0;      // the loss a 2× error in the value costs at the fitted best (NaN: no minimum inside)
  Verdict at_base = Verdict::undecided, at_best = Verdict::undecided;
  TunedOutcome outcome = TunedOutcome::no_result;
  std::string why;             // the outcome in words
  std::vector<TunedDivergence> diverged;  // the values where some of its runs diverged, in order
};

struct TunedSummary {
  std::vector<std::string> keys;     // the tuned keys (the first is the fits' x)
  std::string base_value;            // the baseline's value of the first key
  std::vector<VariantStats> at_best;  // each arm's per-seed tuned values against the baseline's, ranked
  std::vector<TunedArm> arms;        // in the sweep file's order, the baseline first
  std::vector<std::string> notes;    // what the tuned comparison's reader must know
};

}  // namespace sweep
