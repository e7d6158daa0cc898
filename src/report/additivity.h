// Whether combinations of interventions add up: each combination at the baseline's grid point
// against the sum of its parts' improvements (adds up, overlaps, interferes, better than the sum).
#pragma once

#include "report/input.h"
#include "report/stats.h"

namespace sweep {

// A combination against the sum of its parts (each an improvement over the baseline).
struct Additivity {
  std::string variant;
  std::vector<std::string> parts;
  double combined = 0, sum_of_parts = 0, best_part = 0;
  double difference = 0, ci_low = 0, ci_high = 0;  // combined − sum, 95% CI
  Method method = Method::welch;  // paired when every side shares the seeds
  SumVerdict verdict = SumVerdict::unknown;
};

// Each combination of interventions against the sum of its parts (at the baseline's grid point).
// What it finds that the reader must know is added to `notes`.
std::vector<Additivity> check_additivity(const ReportInput& in, const VariantRuns& base,
                                         std::vector<std::string>& notes);

}  // namespace sweep
