// Where effects happen along training: the paired Δ-loss curve of each intervention and the
// tokens it needs to reach the baseline's final validation loss, with CIs over seeds; and a note
// when the curves have too few points to show their shape. Pure: computed from the runs' curves.
#pragma once

#include <vector>

#include "report/input.h"
#include "report/stats.h"
#include "report/variant_stats.h"

namespace sweep {

// The paired Δ-loss curve of an intervention: at each token count it was evaluated at, the
// improvement over the baseline's validation loss at the same seed (the baseline's curve
// interpolated linearly there), over the seeds both have.
struct DeltaCurve {
  std::string variant;
  int position = 0;
  std::vector<std::pair<int64_t, Summary>> points;  // tokens, improvement over seeds (95% t CI)
};

// Tokens-to-target: the tokens an intervention needs to reach the baseline's final validation
// loss (same seed; both curves interpolated linearly to the first crossing), as the share of the
// baseline's tokens it saves — 1 − tokens(variant) / tokens(baseline): 0.18 = 18% fewer. The same
// in training FLOPs (tokens × the model's FLOPs per token) and in measured training time.
struct TokensToTarget {
  std::string variant;
  int position = 0;
  int64_t seeds = 0, reached = 0;  // seeds compared; of them, those where the variant reaches it
  Summary saving;                  // over the seeds that reached it; its CI only when all did
  int64_t flops_reached = 0, time_seeds = 0, time_reached = 0;  // time: seeds whose runs have their steps' speeds
  Summary flops_saving, time_saving;
  std::vector<double> flops_speedups;  // per seed that reached it: the baseline's FLOPs to it ÷ the variant's
};

// An intervention against the baseline at equal compute: the final validation loss's improvement
// (baseline − variant, paired by seed, 95% t CI over seeds) at equal tokens, at equal training
// FLOPs and at equal measured training time — each at the smaller of the two runs' totals, the
// curves interpolated linearly there.
struct ComputeMatch {
  std::string variant;
  int position = 0;
  double flops_ratio = 0;  // its FLOPs per token ÷ the baseline's
  double time_ratio = 0;   // its training seconds per token ÷ the baseline's (mean over seeds; NaN: unknown)
  Summary at_tokens, at_flops, at_time;
};

// Validation points a run should have to show its curve's shape.
inline constexpr size_t k_wanted_val_points = 20;

// What the curves show, per intervention with paired validation curves.
struct CurveResults {
  std::vector<DeltaCurve> deltas;
  std::vector<TokensToTarget> targets;
  std::vector<ComputeMatch> matched;
};

// The Δ-loss curves and tokens-to-target of every intervention that has seeds in common with the
// baseline (in the order of `ranked`, the analysis's variants), and notes for the reader.
CurveResults analyze_curves(const ReportInput& in, const std::vector<VariantStats>& ranked,
                            std::vector<std::string>& notes);

// The first token count at which `curve` (tokens ascending) reaches `target` or below, linear
// between points; nullopt when it never does.
std::optional<double> tokens_to_reach(const std::vector<std::pair<int64_t, double>>& curve, double target);

// The points of an intervention's paired Δ-loss curve (DeltaCurve's): `mine`'s runs against the
// baseline's `base`, each seed's first run with a validation curve — a finished one, or
// (`unfinished`) any, as a live sweep's looks read them — at `mine`'s evaluations after step 0.
std::vector<std::pair<int64_t, Summary>> paired_delta_points(const std::vector<ReportRun>& base,
                                                             const std::vector<ReportRun>& mine, bool unfinished);

// `curve` at `tokens`, linear between points; nullopt outside its range.
std::optional<double> interpolate(const std::vector<std::pair<int64_t, double>>& curve, double tokens);

}  // namespace sweep
