// --until-decided: a variant's verdict look by look, at error rates held at their nominal levels
// (report/until_decided.h: the seeds each variant needs next).
#pragma once

#include <map>
#include <vector>

#include "report/seeds.h"
#include "report/variant_stats.h"

namespace sweep {

// --until-decided: look j is the variant's first first·j planned seeds (the last look: all of
// them), as the runner had them when it decided whether to add more. Each look gives repeated
// confidence intervals at alpha / interventions (Bonferroni across them): two-sided for the
// difference, one-sided on each side at the same level for equivalence (TOST). Paired, their
// half-widths come from simulated t boundaries (exact for normal differences at any df); unpaired
// (Welch), from the look's own share of alpha at its t quantile (a union bound). The verdict is
// the first look's that decides; a look with a seed that has no result on either side stops the
// design there (undecided), as a failed run stops the runner.
// `base` and `mine`: seed_values of `base_runs` and `runs`.
void decide_sequentially(const ReportInput& in, VariantStats& s, const std::map<SeedKey, double>& base,
                         const std::map<SeedKey, double>& mine, const std::vector<ReportRun>& base_runs,
                         const std::vector<ReportRun>& runs, bool paired);

}  // namespace sweep
