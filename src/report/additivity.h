// Whether combinations of interventions add up: each combination at the baseline's grid point
// against the sum of its parts' improvements (adds up, overlaps, interferes, better than the sum).
#pragma once

#include "report/analysis.h"

namespace sweep {

// Each combination of interventions against the sum of its parts (at the baseline's grid point).
void check_additivity(const ReportInput& in, const VariantRuns& base, Analysis& a);

}  // namespace sweep
