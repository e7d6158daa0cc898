// --until-decided across a study: the seeds each variant needs next, read from its analysis, and
// the loop that adds them until every verdict is decided or capped (report/sequential.h decides
// each variant's verdict look by look).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "report/analysis.h"

namespace sweep {

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
