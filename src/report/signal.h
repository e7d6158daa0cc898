// Which metric decides most reliably? Per metric a sweep recorded — final test loss, test bits per
// byte, final validation loss, the mean of the last k validation evaluations — its signal-to-noise
// ratio across the sweep's arms (the spread of the arms' means against the seed noise within them,
// as "Signal and Noise", arXiv 2508.13144, defines it for evaluations), and whether its noise lets
// these seeds separate the smallest effect of interest. Pure: no database, no files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/input.h"

namespace sweep {

// One metric's signal across a sweep's arms (report/signal.h).
struct MetricSignal {
  Metric metric;
  int64_t arms = 0, seeds = 0;  // arms with 2 or more seeds; seeds per arm (the median)
  double signal = 0;            // the sd of the arms' means
  double noise = 0;             // the seed-to-seed sd within an arm (pooled)
  double snr = 0;               // signal / noise
  double detectable = 0;        // the improvement these seeds detect with power 0.8, paired (median over the arms)
  bool compared = false;          // with min_effect: one is declared, in this metric's units (not bits per byte)
  bool hides_min_effect = false;  // detectable > min_effect: too noisy to separate the effect that matters
};

// A run's validation evaluations after step 0: what a val_lastK can average.
int64_t trained_evaluations(const ReportRun& run);

// A finished run's value of `metric` (empty when it lacks one: a val_lastK needs K evaluations
// after step 0).
std::optional<double> metric_value(const ReportRun& run, const Metric& metric);

// The signal of `in.metric`, test_loss, test_bpb, val_loss and val_last3, each that has values on 2
// or more arms with 2 or more seeds, highest SNR first (a tie: in that order).
std::vector<MetricSignal> metric_signals(const ReportInput& in);

}  // namespace sweep
