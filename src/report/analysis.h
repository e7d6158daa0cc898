// What `sweep report` concludes: each variant against the baseline on one metric, ranked by
// improvement, with a verdict (better / worse / in the noise) and where the noise estimate came
// from; the response of the metric along each numeric grid/zip axis, with the best value; and
// whether combinations add up. Pure: the runs come in as values (report/load.h reads them from
// the database).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/additivity.h"
#include "report/curves.h"
#include "report/input.h"
#include "report/ladder/summary.h"
#include "report/noise.h"
#include "report/response.h"
#include "report/signal.h"
#include "report/tuned/summary.h"
#include "report/variant_stats.h"

namespace sweep {

struct Analysis {
  std::string sweep, baseline;
  Metric metric;
  double alpha = 0.05;
  SeedDesign design;
  MinEffectSource min_effect_source = MinEffectSource::none;
  bool better_by_option = false;  // the margin from `sweep report`'s options: not one the runner added seeds for
  double suggested_min_effect = 0;     // the effect these seeds detect with power 0.8 (median; NaN: unknown)
  std::vector<VariantStats> variants;  // ranked: best improvement first, no-result variants last
  NoiseSummary noise;
  std::vector<MetricSignal> signals;  // per metric recorded, highest signal-to-noise first
  std::vector<Response> responses;
  std::vector<Additivity> additivity;
  std::vector<DeltaCurve> deltas;         // per intervention with paired validation curves
  std::vector<TokensToTarget> targets;
  std::vector<ComputeMatch> matched;      // per intervention with paired validation curves
  std::string code;                    // which code trained the sweep's runs (a sentence)
  std::vector<std::string> notes;      // things the reader must know (diverged runs, unpaired seeds...)
  std::vector<ReferenceScore> references;  // scored on the test split: shown beside the baseline
  // A scale ladder: each rung's own analysis (variants judged against the baseline at the rung),
  // and the trends across them. `variants` then holds every rung's variants, rung by rung.
  std::vector<Analysis> rungs;
  std::optional<LadderSummary> ladder;
  std::optional<TunedSummary> tuned;  // a tune axis: the verdicts at each arm's own best (`variants`: at the base value)
};

// The plain analysis: every variant against the baseline, as one study (no ladder, no tune axis).
// A ladder's rungs and a tune axis's values are analysed by it (report/ladder, report/tuned);
// report/analyze.h chooses among the three.
Analysis analyze_plain(const ReportInput& input);

// What an analysis states before its rows, as the input gives it: the sweep, its baseline, metric,
// alpha and design, its notes and references (the noise and everything after are analyze_plain's).
Analysis analysis_header(const ReportInput& in);

}  // namespace sweep
