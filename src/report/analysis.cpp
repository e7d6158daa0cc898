#include "report/analysis.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <tuple>

#include "util/error.h"

namespace sweep {

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

using SeedKey = std::tuple<int64_t, int64_t, int64_t>;  // init, data, repeat

// The finished runs' metric values by seed (ordered: pairs line up by key).
std::map<SeedKey, double> values_by_seed(const std::vector<RunResult>& runs) {
  std::map<SeedKey, double> out;
  for (const auto& r : runs) {
    if (r.value && std::isfinite(*r.value)) {
      out[{r.init_seed, r.data_seed, r.repeat}] = *r.value;
    }
  }
  return out;
}

std::vector<double> values_of(const std::map<SeedKey, double>& by_seed) {
  std::vector<double> out;
  for (const auto& [key, v] : by_seed) {
    out.push_back(v);
  }
  return out;
}

bool same_seeds(const std::map<SeedKey, double>& a, const std::map<SeedKey, double>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](const auto& x, const auto& y) { return x.first == y.first; });
}

double mean_where(const std::vector<RunResult>& runs, const std::function<std::optional<double>(const RunResult&)>& f) {
  double sum = 0;
  int n = 0;
  for (const auto& r : runs) {
    if (auto v = f(r); v && std::isfinite(*v)) {
      sum += *v;
      ++n;
    }
  }
  return n > 0 ? sum / n : k_nan;
}

std::string plural(int64_t n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

NoiseSummary noise_summary(const ReportInput& in, const std::vector<RunResult>& baseline_runs) {
  NoiseSummary ns;
  const std::vector<RunResult>& source_runs = in.noise_from ? in.noise_from->runs : baseline_runs;
  const std::vector<double> values = values_of(values_by_seed(source_runs));
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
    ns.source = "σ = standard deviation of " + in.metric + " over " + plural(ns.n, "finished run") + " of " + whose;
  } else {
    ns.sigma = k_nan;
    ns.source = "σ unknown: " + whose + " has " + plural(ns.n, "finished run") +
                " — run it with more seeds, or pass --noise-from SWEEP with a seed study";
  }
  // The seed count most variants have (ties: the smaller).
  std::map<int64_t, int> counts;
  for (const auto& v : in.variants) {
    const auto n = static_cast<int64_t>(values_by_seed(v.runs).size());
    if (n > 0) {
      counts[n]++;
    }
  }
  ns.seeds = counts.empty() ? 0
                            : std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
                                return a.second < b.second;
                              })->first;
  ns.band = ns.seeds > 0 ? 2.0 * std::sqrt(2.0) * ns.sigma / std::sqrt(static_cast<double>(ns.seeds)) : k_nan;
  ns.detectable = detectable_effect(ns.seeds, ns.sigma, false, in.alpha);
  return ns;
}

}  // namespace

Analysis analyze(const ReportInput& in) {
  const auto base_it = std::find_if(in.variants.begin(), in.variants.end(),
                                    [&](const VariantRuns& v) { return v.name == in.baseline; });
  if (base_it == in.variants.end()) {
    throw Error("sweep " + in.sweep + " has no variant named '" + in.baseline + "' (its baseline)", Exit::bad_input);
  }
  Analysis a;
  a.sweep = in.sweep;
  a.baseline = in.baseline;
  a.metric = in.metric;
  a.alpha = in.alpha;
  a.noise = noise_summary(in, base_it->runs);

  // Seeds needed are for the level a verdict applies: alpha split across the interventions
  // (Bonferroni, a bound on Holm's first step).
  const double alpha_each = in.alpha / static_cast<double>(std::max<size_t>(1, in.variants.size() - 1));
  const auto base = values_by_seed(base_it->runs);
  const std::vector<double> base_values = values_of(base);
  std::vector<size_t> tested;  // indices into a.variants with a t-test p
  for (size_t i = 0; i < in.variants.size(); ++i) {
    const VariantRuns& v = in.variants[i];
    VariantStats s;
    s.name = v.name;
    s.position = static_cast<int>(i);
    s.is_baseline = v.name == in.baseline;
    s.runs = static_cast<int64_t>(v.runs.size());
    const auto mine = values_by_seed(v.runs);
    const std::vector<double> values = values_of(mine);
    s.finished = static_cast<int64_t>(values.size());
    s.diverged = std::count_if(v.runs.begin(), v.runs.end(), [](const RunResult& r) { return r.status == "diverged"; });
    s.summary = summarize(values);
    s.tokens = mean_where(v.runs, [](const RunResult& r) { return std::optional<double>(static_cast<double>(r.tokens)); });
    s.tokens_per_s = mean_where(v.runs, [](const RunResult& r) { return r.tokens_per_s; });
    s.wall_seconds = mean_where(v.runs, [](const RunResult& r) { return r.wall_seconds; });
    s.improvement = s.ci_low = s.ci_high = s.p = s.p_holm = s.prob_improvement = k_nan;

    if (s.diverged > 0) {
      a.notes.push_back(v.name + ": " + std::to_string(s.diverged) + " of " + plural(s.runs, "run") + " diverged" +
                        (s.finished > 0 ? "; its statistics use the " + std::to_string(s.finished) + " that finished"
                                        : ""));
    }
    if (const int64_t other = s.runs - s.finished - s.diverged; other > 0) {
      a.notes.push_back(v.name + ": " + plural(other, "run") + " without a result yet (pending, running or failed)");
    }
    if (s.finished == 0 || base.empty()) {
      s.method = "none";
      s.verdict = s.finished == 0 && s.diverged == s.runs && s.runs > 0 ? "diverged"
                  : s.is_baseline || s.finished == 0                    ? "no result"
                                                                        : "unknown";
    } else if (s.is_baseline) {
      s.method = "";
      s.verdict = "baseline";
      s.improvement = 0;
    } else {
      const bool paired = mine.size() >= 2 && same_seeds(base, mine);
      if (paired || (base.size() >= 2 && mine.size() >= 2)) {
        const Comparison c = paired ? compare_paired(base_values, values) : compare_welch(base_values, values);
        s.method = paired ? "paired" : "welch";
        s.improvement = c.improvement;
        s.ci_low = c.ci_low;
        s.ci_high = c.ci_high;
        s.p = c.p;
        const double sd = paired ? c.se * std::sqrt(static_cast<double>(values.size()))
                                 : std::sqrt((std::pow(summarize(base_values).sd, 2) + std::pow(s.summary.sd, 2)) / 2);
        s.seeds_needed = seeds_needed(c.improvement, sd, paired, alpha_each);
        if (!paired) {
          a.notes.push_back(v.name + ": its seeds differ from the baseline's; compared unpaired (Welch)");
        }
        if (std::isfinite(s.p)) {
          tested.push_back(i);
        }
      } else {
        // One seed on a side: no t-test; the improvement against the noise band of one run.
        s.method = "band";
        s.improvement = summarize(base_values).mean - s.summary.mean;
        const double band = 2.0 * std::sqrt(2.0) * a.noise.sigma / std::sqrt(static_cast<double>(values.size()));
        s.ci_low = s.improvement - band;
        s.ci_high = s.improvement + band;
        s.seeds_needed = seeds_needed(s.improvement, a.noise.sigma, false, alpha_each);
        s.verdict = !std::isfinite(band)            ? "unknown"
                    : std::abs(s.improvement) <= band ? "in the noise"
                    : s.improvement > 0              ? "better"
                                                     : "worse";
      }
      s.prob_improvement = probability_of_improvement(base_values, values, paired);
    }
    a.variants.push_back(s);
  }

  // Holm across the sweep's tested interventions; the verdict follows the adjusted p.
  std::vector<double> ps;
  for (size_t i : tested) {
    ps.push_back(a.variants[i].p);
  }
  const std::vector<double> adjusted = holm_adjust(ps);
  for (size_t k = 0; k < tested.size(); ++k) {
    VariantStats& s = a.variants[tested[k]];
    s.p_holm = adjusted[k];
    s.verdict = s.p_holm >= in.alpha ? "in the noise" : s.improvement > 0 ? "better" : "worse";
  }

  std::stable_sort(a.variants.begin(), a.variants.end(), [](const VariantStats& x, const VariantStats& y) {
    const bool rx = std::isfinite(x.improvement), ry = std::isfinite(y.improvement);
    if (rx != ry) {
      return rx;
    }
    return rx && x.improvement > y.improvement;
  });
  return a;
}

}  // namespace sweep
