// --eliminate's rule: an arm stopped before the end of training when its paired Δ-validation curve
// shows it worse than −δ — and worse by enough that it stays worse than −δ at the end, where an arm
// worse early can recover much of its deficit (in the committed studies, no shared expert went from
// −0.13 at a quarter of training to −0.031) or cross over (ReLU² at a ladder's middle rung: −0.030 at
// 26%, +0.021 at the end).
//
// At look j (a fraction f_j of each run's tokens), over each arm's seeds paired with the
// baseline's, the mean improvement Δ_j (baseline − arm: negative = worse) gives the one-sided upper
// bound U_j = Δ_j + t·s/√n, s the larger of the arm's own seed standard deviation and the one pooled
// over the study's arms at that look (3 seeds alone give 2 degrees of freedom: a bound too wide to
// stop anything), t on the pooled degrees of freedom at level α / (arms × looks) (Bonferroni: the
// study's false-elimination probability held at α whatever the curves' correlation along training).
// The arm is stopped at the first look where
//   U_j < −δ / kept_j   — worse than −δ even if it keeps only kept_j of its deficit to the end, and
//   Δ_j ≤ Δ_before      — its deficit not shrinking over the span before the look (Δ at f_j − span):
//                         an arm on its way back — one that crosses over, past its dip — is left to
//                         finish. The committed curves that crossed 0 had their dip by 26% of
//                         training; the first look, at 30%, comes after it.
// Never stopped for "equivalent so far" or for looking better. `sweep calibrate --eliminate`
// measures the rule on simulated studies; `sweep replay --eliminate` replays finished studies.
// Pure: no database, no files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/elimination.h"
#include "report/stats.h"

namespace sweep {

// An arm's paired improvement over the baseline at a fraction of training, over its seeds.
struct LookDelta {
  double fraction = 0;
  int64_t seeds = 0;
  double mean = 0, se = 0;
};

// The settings (config/elimination.h: looks, kept shares, span, α) and the study's δ.
struct EliminationRule : EliminationSettings {
  double delta = 0;  // the smallest effect of interest δ (> 0)
};

// Why a rule cannot be used ("" when it can): config/elimination.h's rule_problem of its settings and δ.
inline std::string rule_problem(const EliminationRule& rule) { return rule_problem(rule, rule.delta); }

// One arm's Δ at each look and a span before it (nullopt where its curve has none: that look
// cannot stop it).
struct ArmLooks {
  std::vector<std::optional<LookDelta>> at, before;
};

// Every arm of a study (each paired with the baseline) judged at the rule's looks.
std::vector<Elimination> eliminate_study(const std::vector<ArmLooks>& arms, const EliminationRule& rule);

// A paired Δ curve (tokens ascending, each point's summary over seeds) read at `fraction` of
// `end` tokens — the end of training; a finished arm's: its last point's —, linear between
// points; nullopt before its first point, past its last, or where a point has fewer than 2 seeds.
std::optional<LookDelta> delta_at(const std::vector<std::pair<int64_t, Summary>>& curve, double fraction, double end);

// A finished arm's curve read at the rule's looks and a span before each.
ArmLooks arm_looks(const std::vector<std::pair<int64_t, Summary>>& curve, const EliminationRule& rule);

}  // namespace sweep
