// --until-decided: the verdict look by look at error rates held at their nominal levels, and the
// seeds each variant needs next.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "report/analysis.h"

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

// --until-decided: the seeds each variant should have for the next round — the interventions
// still undecided below the cap get `first` more (at most max_seeds), the baseline as many as the
// most of them; empty when every intervention is decided or capped (or the design is fixed).
std::map<std::string, int64_t> next_round(const Analysis& analysis);

// The runner's --until-decided loop on a simulated study (both calibrations): `analyze_at(n)` is
// the study's analysis at n[i] seeds of arm i; each round raises the arms next_round names (arm_of:
// a variant's index in n) to the seeds it gives, until it names none. Returns the last analysis;
// n holds the seeds each arm ended with.
using StudyAt = std::function<Analysis(const std::vector<int64_t>& seeds)>;
Analysis run_until_decided(std::vector<int64_t>& n, const StudyAt& analyze_at,
                           const std::function<size_t(const std::string&)>& arm_of);

}  // namespace sweep
