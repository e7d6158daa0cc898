// The noise a verdict must beat: σ of the baseline's seeds (or of --noise-from's), its
// components, the one-seed band, the effect these seeds detect, and the finite test set's own noise.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/analysis.h"

namespace sweep {

NoiseSummary noise_summary(const ReportInput& in, const std::vector<ReportRun>& baseline_runs);

// A finished run's test blocks in the metric's units: nats per token for test_loss, bits per byte
// for test_bpb (the run's own ratio of the two); empty for val_loss and val_lastK: not the test set.
std::optional<LossBlocks> metric_blocks(const ReportRun& r, const Metric& metric);

}  // namespace sweep
