// A variant against the baseline: one row of the ranked table, as the plain analysis
// (report/analysis.cpp) and --until-decided (report/sequential.h) fill it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/stats.h"
#include "report/verdict.h"

namespace sweep {

struct VariantStats {
  std::string name;
  int position = 0;  // in the sweep file: fixes the variant's colour in every plot
  bool is_baseline = false;
  int64_t runs = 0, finished = 0, diverged = 0;
  int64_t seeds = 0;             // observations: seeds with a finished run (repeats averaged)
  int64_t seeds_planned = 0;     // seeds among all its runs
  Summary summary;               // over the seeds' values
  Method method = Method::none;
  double improvement = 0;        // mean(baseline) − mean(variant): positive = better
  double ci_low = 0, ci_high = 0;
  double p = 0, p_holm = 0;      // NaN when there is no test (band, none, baseline)
  double correlation = 0;        // Pearson r of its per-seed values with the baseline's (NaN: < 3 common seeds)
  double prob_improvement = 0;   // share of seed pairs the variant wins
  int64_t seeds_needed = -1;     // for power 0.8 at the observed effect and alpha / interventions;
                                 // -1 when it cannot be said
  Verdict verdict = Verdict::undecided;
  bool below_min_effect = false; // better or worse, and yet shown smaller than the smallest effect of interest
  bool no_op = false;            // every seed's value is the baseline's to the last digit: the change never acted
  double p_equivalence = 0, p_equivalence_holm = 0;  // TOST within ±min_effect (fixed design); NaN: no test
  double p_better_by = 0, p_better_by_holm = 0;  // one-sided, improvement > better_by (fixed design); NaN: no test
  bool better_by = false;        // better, and shown better by more than the design's better_by margin
  std::vector<int64_t> looks;    // --until-decided: the seed counts it was analysed at
  std::string stopped;           // --until-decided: why it has the seeds it has
  bool halted = false;           // --until-decided: a look lacks a result; no seeds are added
  bool margin_open = false;      // --until-decided: better, its better_by margin neither shown nor out of reach,
                                 // below the cap: the runner adds seeds for it
  double seed_se = 0;            // standard error of the improvement from seed noise (the test's)
  double test_se = 0;            // ... from the finite test set (paired, test metrics; NaN: unknown)
  double tokens = 0, tokens_per_s = 0, wall_seconds = 0;  // means over runs that report them
  int64_t starts = 0;            // worker starts over its runs
};

}  // namespace sweep
