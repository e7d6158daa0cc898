#include "report/signal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "report/seeds.h"
#include "report/stats.h"

namespace sweep {

int64_t trained_evaluations(const ReportRun& run) {
  return std::count_if(run.val_curve.begin(), run.val_curve.end(),
                       [](const std::pair<int64_t, double>& p) { return p.first > 0; });
}

std::optional<double> metric_value(const ReportRun& r, const Metric& metric) {
  switch (metric.kind) {
    case Metric::Kind::test_loss:
      return r.test_loss;
    case Metric::Kind::test_bpb:
      return r.test_bpb;
    case Metric::Kind::val_loss:
      return r.val_loss;
    case Metric::Kind::val_last:
      break;
  }
  const int64_t k = metric.k;
  if (trained_evaluations(r) < k) {
    return std::nullopt;
  }
  double sum = 0;
  for (auto it = r.val_curve.end() - k; it != r.val_curve.end(); ++it) {
    sum += it->second;
  }
  return sum / static_cast<double>(k);
}

std::vector<MetricSignal> metric_signals(const ReportInput& in) {
  // the report's own metric first: it wins a tie (test_bpb is test_loss rescaled when every arm
  // has the same tokenizer: the same SNR)
  std::vector<Metric> metrics{in.metric};
  using Kind = Metric::Kind;
  for (const Metric m : {Metric{Kind::test_loss}, Metric{Kind::test_bpb}, Metric{Kind::val_loss}, Metric{Kind::val_last, 3}}) {
    if (m != in.metric) {
      metrics.push_back(m);
    }
  }
  const VariantRuns* base = find_variant(in, in.baseline);
  std::vector<MetricSignal> out;
  for (const auto& metric : metrics) {
    // each arm's per-seed values (repeats averaged), from its finished runs
    const auto values_of_metric = [&](const VariantRuns& v) {
      std::vector<ReportRun> runs;
      for (const auto& r : v.runs) {
        ReportRun copy;
        copy.init_seed = r.init_seed;
        copy.data_seed = r.data_seed;
        copy.status = r.status;
        copy.value = r.status == RunState::done ? metric_value(r, metric) : std::nullopt;
        if (copy.value && !std::isfinite(*copy.value)) {
          copy.value.reset();
        }
        runs.push_back(copy);
      }
      return seed_values(runs);
    };
    std::vector<double> means, detectable;
    double within = 0, df = 0;
    std::vector<double> counts;
    const auto base_values = base ? values_of_metric(*base) : std::map<SeedKey, double>{};
    for (const auto& v : in.variants) {
      const auto by_seed = &v == base ? base_values : values_of_metric(v);
      if (by_seed.size() < 2) {
        continue;
      }
      const std::vector<double> vals = values_of(by_seed);
      const Summary s = summarize(vals);
      means.push_back(s.mean);
      within += s.sd * s.sd * static_cast<double>(vals.size() - 1);
      df += static_cast<double>(vals.size() - 1);
      counts.push_back(static_cast<double>(vals.size()));
      if (&v != base) {
        const auto [b, m] = common(base_values, by_seed);
        std::vector<double> d;
        for (size_t i = 0; i < b.size(); ++i) {
          d.push_back(b[i] - m[i]);
        }
        if (d.size() >= 2) {
          detectable.push_back(detectable_effect(static_cast<int64_t>(d.size()), summarize(d).sd, true, alpha_each(in)));
        }
      }
    }
    if (means.size() < 2 || !(df > 0)) {
      continue;
    }
    MetricSignal sig;
    sig.metric = metric;
    sig.arms = static_cast<int64_t>(means.size());
    sig.seeds = static_cast<int64_t>(percentile(counts, 0.5));
    sig.signal = summarize(means).sd;
    sig.noise = std::sqrt(within / df);
    sig.snr = sig.noise > 0 ? sig.signal / sig.noise : k_nan;
    sig.detectable = percentile(detectable, 0.5);
    // min_effect is in nats per token: comparable with the losses, not with bits per byte
    sig.compared = in.design.min_effect > 0 && metric != Metric::Kind::test_bpb;
    sig.hides_min_effect = sig.compared && std::isfinite(sig.detectable) && sig.detectable > in.design.min_effect;
    out.push_back(sig);
  }
  // highest first; equal to 6 significant digits is a tie, kept in the order above
  const auto key = [](const MetricSignal& m) {
    return std::isfinite(m.snr) && m.snr > 0 ? std::round(std::log(m.snr) * 1e6) : -std::numeric_limits<double>::infinity();
  };
  std::stable_sort(out.begin(), out.end(), [&](const MetricSignal& a, const MetricSignal& b) { return key(a) > key(b); });
  return out;
}

}  // namespace sweep
