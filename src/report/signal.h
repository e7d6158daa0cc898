// Which metric decides most reliably? Per metric a sweep recorded — final test loss, test bits per
// byte, final validation loss, the mean of the last k validation evaluations — its signal-to-noise
// ratio across the sweep's arms (the spread of the arms' means against the seed noise within them,
// as "Signal and Noise", arXiv 2508.13144, defines it for evaluations), and whether its noise lets
// these seeds separate the smallest effect of interest. Pure: no database, no files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/analysis.h"

namespace sweep {

// A run's validation evaluations after step 0: what a val_lastK can average.
int64_t trained_evaluations(const ReportRun& run);

// A finished run's value of `metric` (empty when it lacks one: a val_lastK needs K evaluations
// after step 0).
std::optional<double> metric_value(const ReportRun& run, const Metric& metric);

// The signal of `in.metric`, test_loss, test_bpb, val_loss and val_last3, each that has values on 2
// or more arms with 2 or more seeds, highest SNR first (a tie: in that order).
std::vector<MetricSignal> metric_signals(const ReportInput& in);

}  // namespace sweep
