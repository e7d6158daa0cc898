// The noise a verdict must beat: σ of the baseline's seeds (or of --noise-from's), its
// components, the one-seed band, the effect these seeds detect, and the finite test set's own noise.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/input.h"
#include "report/stats.h"

namespace sweep {

struct NoiseSummary {
  int64_t n = 0;             // seeds σ is computed from
  double sigma = 0;          // the σ of one seed's metric (NaN when unknown)
  std::string source;        // a sentence: where σ comes from
  VarianceComponents components;  // of the source's runs (NaN fields when not measured)
  int64_t seeds = 0;         // seeds per variant in this sweep (the most common count)
  double band = 0;           // ±t·σ·√(2/seeds), t for σ's n − 1 degrees of freedom: a one-seed comparison's 95% half-width
  double alpha = 0.05;       // the level of `detectable` and of the seeds-for-80% column: alpha / interventions
  double detectable = 0;     // smallest effect detectable with `seeds` seeds (power 0.8, at `alpha`), unpaired
  double test_se = 0;        // a baseline run's test-metric SE from the finite test set (median; NaN: unknown)
  int64_t test_blocks = 0;   // blocks of its test split
};

NoiseSummary noise_summary(const ReportInput& in, const std::vector<ReportRun>& baseline_runs);

// A finished run's test blocks in the metric's units: nats per token for test_loss, bits per byte
// for test_bpb (the run's own ratio of the two); empty for val_loss and val_lastK: not the test set.
std::optional<LossBlocks> metric_blocks(const ReportRun& r, const Metric& metric);

}  // namespace sweep
