// What `sweep report` concludes: each variant against the baseline on one metric, ranked by
// improvement, with a verdict (better / worse / in the noise) and where the noise estimate came
// from. Pure: the runs come in as values (report/load.h reads them from the database).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/stats.h"

namespace sweep {

struct RunResult {
  std::string run_id;
  std::string status;  // done, diverged, failed, ...
  int64_t init_seed = 0, data_seed = 0, repeat = 0;
  std::optional<double> value;  // the metric; empty unless the run finished with a finite value
  std::optional<double> test_loss, test_bpb, val_loss;
  int64_t tokens = 0;
  std::optional<double> tokens_per_s, wall_seconds;
  std::vector<std::pair<int64_t, double>> val_curve;  // (tokens, validation loss), finite points
};

struct VariantRuns {
  std::string name;
  std::vector<RunResult> runs;
};

struct NoiseSource {
  std::string sweep;             // the --noise-from sweep
  std::vector<RunResult> runs;   // its baseline's runs
};

struct ReportInput {
  std::string sweep, baseline, metric;
  std::string file, spec;             // the sweep file's path and text as it was run
  std::vector<VariantRuns> variants;  // in the sweep file's order
  std::optional<NoiseSource> noise_from;
  double alpha = 0.05;
};

struct VariantStats {
  std::string name;
  int position = 0;  // in the sweep file: fixes the variant's colour in every plot
  bool is_baseline = false;
  int64_t runs = 0, finished = 0, diverged = 0;
  Summary summary;               // over the finished runs' metric values
  std::string method;            // paired, welch, band (one seed against the noise band), none
  double improvement = 0;        // mean(baseline) − mean(variant): positive = better
  double ci_low = 0, ci_high = 0;
  double p = 0, p_holm = 0;      // NaN when there is no test (band, none, baseline)
  double prob_improvement = 0;   // share of seed pairs the variant wins
  int64_t seeds_needed = -1;     // for power 0.8 at the observed effect and alpha / interventions;
                                 // -1 when it cannot be said
  std::string verdict;           // better, worse, in the noise, baseline, diverged, no result, unknown
  double tokens = 0, tokens_per_s = 0, wall_seconds = 0;  // means over runs that report them
};

struct NoiseSummary {
  int64_t n = 0;             // runs σ is computed from
  double sigma = 0;          // the σ of one run's metric (NaN when unknown)
  std::string source;        // a sentence: where σ comes from
  VarianceComponents components;  // of the source's runs (NaN fields when not measured)
  int64_t seeds = 0;         // seeds per variant in this sweep (the most common count)
  double band = 0;           // ±2·√2·σ/√seeds: the noise band of an improvement
  double detectable = 0;     // smallest effect detectable with `seeds` seeds (power 0.8), unpaired
};

struct Analysis {
  std::string sweep, baseline, metric;
  double alpha = 0.05;
  std::vector<VariantStats> variants;  // ranked: best improvement first, no-result variants last
  NoiseSummary noise;
  std::vector<std::string> notes;      // things the reader must know (diverged runs, unpaired seeds...)
};

Analysis analyze(const ReportInput& input);

}  // namespace sweep
