#include "report/noise.h"

#include <cmath>
#include <map>

#include "report/seeds.h"
#include "util/text.h"

namespace sweep {

std::optional<LossBlocks> metric_blocks(const ReportRun& r, const Metric& metric) {
  if (!r.value || r.test_blocks.empty() || metric == Metric::Kind::val_loss || metric == Metric::Kind::val_last) {
    return std::nullopt;
  }
  LossBlocks blocks = r.test_blocks;
  if (metric == Metric::Kind::test_bpb) {
    if (!r.test_bpb || !r.test_loss || !(*r.test_loss > 0)) {
      return std::nullopt;
    }
    for (auto& b : blocks) {
      b.second *= *r.test_bpb / *r.test_loss;
    }
  }
  return blocks;
}

NoiseSummary noise_summary(const ReportInput& in, const std::vector<ReportRun>& baseline_runs) {
  NoiseSummary ns;
  const std::vector<ReportRun>& source_runs = in.noise_from ? in.noise_from->runs : baseline_runs;
  const std::vector<double> values = values_of(seed_values(source_runs));
  ns.n = static_cast<int64_t>(values.size());
  ns.sigma = summarize(values).sd;
  std::vector<SeedRun> seed_runs;
  for (const auto& r : source_runs) {
    if (r.value && std::isfinite(*r.value)) {
      seed_runs.push_back({r.init_seed, r.data_seed, r.repeat, *r.value});
    }
  }
  ns.components = variance_components(seed_runs);
  const std::string whose = in.noise_from ? "the baseline of sweep " + in.noise_from->sweep : "this sweep's baseline";
  if (ns.n >= 2) {
    ns.source = "σ = standard deviation of " + in.metric.name() + " over " + plural(ns.n, "seed") + " of " + whose +
                (seed_runs.size() > values.size() ? " (identical-seed repeats averaged into one value per seed)" : "");
  } else if (ns.n == 1 && seed_runs.size() > 1) {
    ns.sigma = k_nan;
    ns.source = "σ refused: " + whose + " runs one seed pair (init " + std::to_string(seed_runs.front().init) +
                ", data " + std::to_string(seed_runs.front().data) + ") " + std::to_string(seed_runs.size()) +
                " times — their spread is run-to-run nondeterminism (σ_repeat), not the seed-to-seed noise a verdict "
                "must beat; take σ from a sweep that varies its seeds (experiments/noise.yaml)";
  } else {
    ns.sigma = k_nan;
    ns.source = "σ unknown: " + whose + " has " + plural(ns.n, "seed") + " with a finished run" +
                " — run it with more seeds, or pass --noise-from SWEEP with a seed study";
  }
  // The seed count most variants have (ties: the smaller).
  std::map<int64_t, int> counts;
  for (const auto& v : in.variants) {
    const auto n = static_cast<int64_t>(seed_values(v.runs).size());
    if (n > 0) {
      counts[n]++;
    }
  }
  ns.seeds = counts.empty() ? 0
                            : std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
                                return a.second < b.second;
                              })->first;
  // The half-width of a one-seed comparison's interval at `seeds` per side: t for σ's degrees of freedom.
  ns.band = ns.seeds > 0 && ns.n >= 2 ? t_quantile(1 - in.alpha, static_cast<double>(ns.n - 1)) * ns.sigma *
                                            std::sqrt(2.0 / static_cast<double>(ns.seeds))
                                      : k_nan;
  // At the level a verdict applies, as the seeds-for-80% column: alpha split across the interventions.
  ns.alpha = alpha_each(in);
  ns.detectable = in.power ? detectable_effect(ns.seeds, ns.sigma, false, ns.alpha) : k_nan;
  std::vector<double> test_se;
  for (const auto& r : source_runs) {
    if (const auto blocks = metric_blocks(r, in.metric)) {
      test_se.push_back(test_set_se({*blocks}));
      ns.test_blocks = static_cast<int64_t>(blocks->size());
    }
  }
  ns.test_se = percentile(test_se, 0.5);
  return ns;
}

}  // namespace sweep
