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

#include "config/elimination_check.h"
#include "config/run_config.h"
#include "config/sweep_spec.h"
#include "report/eliminate/rule.h"
#include "report/input.h"
#include "report/variant_stats.h"

namespace sweep {

// The rule a sweep's design runs: its --eliminate record's settings and δ (without one: the defaults
// and its min_effect).
EliminationRule rule_of(const SeedDesign& design);

// The record's stop of `v` while it applies — the arm's runs are the ones it judged, whatever the arm
// is named now, and not all of them finished —, else null.
const Elimination* stop_of(const ReportInput& in, const VariantRuns& v);

// A look of a live sweep: the arms it stops (each with how, its runs recorded), and the arms it
// could not judge and why ("diverged runs", "no point there").
struct LookJudgement {
  std::vector<Elimination> stopped;  // each with its arm and runs
  std::vector<std::string> unjudged;
};

// Look `look` of `rule` on the study's runs so far (each variant but the baseline an arm, the
// level counting every arm): an arm whose runs a look stopped before, or one with a diverged run (the report calls it
// diverged, never judged on its survivors), is not judged; with a diverged run of the baseline's,
// none is. Only this look: the earlier ones were judged on what their own time had.
LookJudgement judge_look(const ReportInput& in, const EliminationRule& rule, size_t look);

// The report of a sweep run --eliminate (in.design.eliminate): each arm whose stop applies
// (stop_of) is `worse`, its improvement and interval those of the look that stopped it and
// `stopped` saying where; one trained to the end since keeps the verdict of its results, and a
// stop of runs an arm holds beside others (the file changed since) is not applied; notes say each
// — an arm renamed since by both its names —, the record's settings and the tokens the stops saved.
void apply_eliminations(const ReportInput& in, std::vector<VariantStats>& variants, std::vector<std::string>& notes);

}  // namespace sweep
