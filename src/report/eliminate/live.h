// --eliminate while a sweep trains (docs/verdicts.md#eliminate): where each run pauses for a look,
// the look itself — each arm's paired Δ curve from its runs so far (finished, or paused at the
// look), read at the rule's looks taken so far and judged by rule.h's rule, the same rule `sweep
// replay --eliminate` replays —, and in the report an arm stopped whose runs did not finish, judged
// by the look that stopped it. Pure: the database is read by its callers.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/run_config.h"
#include "config/sweep_spec.h"
#include "report/eliminate/rule.h"
#include "report/input.h"
#include "report/variant_stats.h"

namespace sweep {

// The rule a sweep's design runs: its --eliminate settings, δ its min_effect.
EliminationRule rule_of(const SeedDesign& design);

// The step at which a run of config `c` pauses for a look at `fraction` of its tokens: its first
// validation point at or after that share of its steps; nullopt when that point is its end (the
// look comes too late to save anything) or it has no validation point but the end (eval.every 0).
std::optional<int64_t> look_step(const RunConfig& c, double fraction);

// Why `rule`'s looks cannot be read on a run of config `c` ("" when they can): its paired Δ curve
// needs a validation point after step 0 at or before each look's span (its first is at eval.every)
// and one after the look before its end (look_step).
std::string look_problem(const RunConfig& c, const EliminationRule& rule);

// Every arm of the study (each variant but the baseline) judged at the first `looks` looks of
// `rule` on its runs so far: the arms the rule stops, in the study's order, each with how.
std::vector<std::pair<std::string, Elimination>> judge_looks(const ReportInput& in, const EliminationRule& rule,
                                                             size_t looks);

// The report of a sweep run --eliminate (in.design.eliminate): each arm the rule stopped whose runs
// did not all finish is `worse`, its improvement and interval those of the look that stopped it and
// `stopped` saying where; one that was trained to the end later keeps the verdict of its results,
// and a note says so. A note gives the tokens the stops saved.
void apply_eliminations(const ReportInput& in, std::vector<VariantStats>& variants, std::vector<std::string>& notes);

}  // namespace sweep
