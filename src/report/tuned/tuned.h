// Tuning-fair verdicts (docs/verdicts.md, "Tuned comparisons"). A sweep with a `tune:` axis
// trains every variant at every value of the tuned keys; each arm — an intervention, the other
// axes held fixed — is then judged twice against the baseline:
//   - at the base value: the runs a sweep without the axis would have, judged as today;
//   - at each arm's own best value: on every seed, a quadratic in log(value) is fitted through
//     that seed's lowest value and its two neighbours and its lowest point between them taken (a
//     local fit: a learning rate's loss is no parabola far from its best). The best is re-chosen on every
//     seed, so the noise of choosing it is in the seeds' spread, and the per-seed tuned values
//     are compared as any variant's are (paired t, Holm across the arms, TOST, --until-decided).
// An arm whose two verdicts differ, or whose best value (or the baseline's) may lie beyond
// the values tried, is "<key>-confounded": its verdict at the base value is not a verdict on the
// intervention. Pure: no database, no files.
#pragma once

#include <string>
#include <vector>

#include "report/analysis.h"

namespace sweep {

// The tune axis of a sweep, if it has one.
const SweepAxis* tune_axis(const ReportInput& in);

// The variants at the base value of the tuned keys (the baseline's), the tune axis left out:
// the study a sweep without the axis would have been.
ReportInput base_value_input(const ReportInput& in);

// One variant per arm, named as its variant at the base value, with one run per seed whose value
// is that seed's tuned value (see the file comment); a seed with results at fewer than 3 values
// has none. `notes` receives what the reader must know (seeds without a tuned value).
ReportInput tuned_input(const ReportInput& in, std::vector<std::string>& notes);

// The lowest value of the quadratic in log x (in x when some x ≤ 0) through (x, value) pairs at
// the x with the lowest value and its two neighbours (the 3 at an end: local_window), on their
// range; NaN with fewer than 3 distinct x or a degenerate fit.
double tuned_value(const std::vector<std::pair<double, double>>& points);

// The outcome of one arm (its verdicts set) from its two verdicts and where its best value and
// the baseline's lie on their curves along the tuned key `key` (null: none; the baseline's own
// arm passes no baseline curve).
void judge_tuned_arm(TunedArm& arm, const Response* curve, const Response* baseline_curve, const std::string& key);

// A sweep with a tune axis: the analysis at the base value (its variants, notes, curves), the
// responses along every axis, and `tuned` with the verdicts at each arm's best.
Analysis analyze_tuned(const ReportInput& in);

}  // namespace sweep
