#include "report/additivity.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "report/seeds.h"
#include "util/text.h"

namespace sweep {

namespace {

// A combination at the baseline's grid point against the sum of its parts' improvements.
std::optional<Additivity> additivity(const ReportInput& in, const VariantRuns& combined, const VariantRuns& base) {
  if (combined.parts.size() < 2 || combined.name != combined.intervention) {
    return std::nullopt;  // not a combination, or one at another grid point (its parts there include the axes)
  }
  Additivity out;
  out.variant = combined.name;
  out.parts = combined.parts;
  std::vector<std::map<SeedKey, double>> parts;
  for (const auto& name : combined.parts) {
    const auto it = std::find_if(in.variants.begin(), in.variants.end(),
                                 [&](const VariantRuns& v) { return v.name == name; });
    if (it == in.variants.end()) {
      return std::nullopt;
    }
    parts.push_back(seed_values(it->runs));
  }
  const auto b = seed_values(base.runs), c = seed_values(combined.runs);
  const auto k = static_cast<double>(parts.size());
  // combined − Σ parts of improvements = (1 − k)·baseline − combined + Σ part
  const bool paired = c.size() >= 2 && same_seeds(b, c) &&
                      std::all_of(parts.begin(), parts.end(), [&](const auto& p) { return same_seeds(b, p); });
  Comparison cmp;
  if (paired) {
    std::vector<double> d;
    for (const auto& [seed, base_value] : b) {
      double v = (1 - k) * base_value - c.at(seed);
      for (const auto& p : parts) {
        v += p.at(seed);
      }
      d.push_back(v);
    }
    cmp = one_sample(d);
  } else {
    std::vector<std::vector<double>> groups{values_of(b), values_of(c)};
    std::vector<double> weights{1 - k, -1};
    for (const auto& p : parts) {
      groups.push_back(values_of(p));
      weights.push_back(1);
    }
    cmp = contrast(groups, weights);
  }
  out.method = paired ? Method::paired : Method::welch;
  const double base_mean = summarize(values_of(b)).mean;
  out.combined = base_mean - summarize(values_of(c)).mean;
  out.sum_of_parts = 0;
  out.best_part = -std::numeric_limits<double>::infinity();
  for (const auto& p : parts) {
    const double improvement = base_mean - summarize(values_of(p)).mean;
    out.sum_of_parts += improvement;
    out.best_part = std::max(out.best_part, improvement);
  }
  out.difference = cmp.improvement;
  out.ci_low = cmp.ci_low;
  out.ci_high = cmp.ci_high;
  out.verdict = !std::isfinite(out.ci_low)      ? SumVerdict::unknown
                : out.ci_low > 0                ? SumVerdict::better_than_sum
                : out.ci_high >= 0              ? SumVerdict::adds_up
                : out.combined >= out.best_part ? SumVerdict::overlaps
                                                : SumVerdict::interferes;
  return out;
}

}  // namespace

std::vector<Additivity> check_additivity(const ReportInput& in, const VariantRuns& base,
                                         std::vector<std::string>& notes) {
  std::vector<Additivity> out;
  int64_t combined_elsewhere = 0;  // combinations at the other grid points: not checked
  for (const auto& v : in.variants) {
    if (auto add = additivity(in, v, base)) {
      out.push_back(*add);
    } else {
      combined_elsewhere += v.parts.size() >= 2;
    }
  }
  if (combined_elsewhere > 0) {
    notes.push_back("combinations are checked against their parts at the baseline's grid point only: " +
                    plural(combined_elsewhere, "combination variant") + " at other points are not");
  }
  return out;
}

}  // namespace sweep
