#include "report/curves.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace sweep {

namespace {

// A seed's validation curve, (tokens, loss) ascending: the mean over identical-seed repeats'
// curves is not needed — repeats are identical here or averaged by seed_values for the metric;
// the first finished run of the seed stands for it.
std::map<SeedKey, const std::vector<std::pair<int64_t, double>>*> curves_by_seed(const std::vector<ReportRun>& runs) {
  std::map<SeedKey, const std::vector<std::pair<int64_t, double>>*> out;
  for (const auto& r : runs) {
    if (r.value && r.val_curve.size() >= 2) {
      out.emplace(SeedKey{r.init_seed, r.data_seed}, &r.val_curve);
    }
  }
  return out;
}

}  // namespace

std::optional<double> interpolate(const std::vector<std::pair<int64_t, double>>& curve, double tokens) {
  for (size_t i = 0; i < curve.size(); ++i) {
    const auto x = static_cast<double>(curve[i].first);
    if (x == tokens) {
      return curve[i].second;
    }
    if (x > tokens) {
      if (i == 0) {
        return std::nullopt;
      }
      const auto x0 = static_cast<double>(curve[i - 1].first);
      return curve[i - 1].second + (curve[i].second - curve[i - 1].second) * (tokens - x0) / (x - x0);
    }
  }
  return std::nullopt;
}

std::optional<double> tokens_to_reach(const std::vector<std::pair<int64_t, double>>& curve, double target) {
  for (size_t i = 0; i < curve.size(); ++i) {
    if (curve[i].second <= target) {
      if (i == 0) {
        return static_cast<double>(curve[0].first);
      }
      const auto [x0, y0] = curve[i - 1];
      const auto [x1, y1] = curve[i];
      return static_cast<double>(x0) + static_cast<double>(x1 - x0) * (y0 - target) / (y0 - y1);
    }
  }
  return std::nullopt;
}

void analyze_curves(const ReportInput& in, Analysis& a) {
  const auto base_it = std::find_if(in.variants.begin(), in.variants.end(),
                                    [&](const VariantRuns& v) { return v.name == in.baseline; });
  const auto base = curves_by_seed(base_it->runs);
  size_t fewest = std::numeric_limits<size_t>::max();
  for (const auto& v : in.variants) {
    for (const auto& r : v.runs) {
      if (r.value && !r.val_curve.empty()) {
        const size_t points = r.val_curve.size() - (r.val_curve.front().first == 0 ? 1 : 0);  // step 0 is no progress
        fewest = std::min(fewest, points);
      }
    }
  }
  if (fewest < k_wanted_val_points) {
    a.notes.push_back("the validation curves have as few as " + std::to_string(fewest) +
                      (fewest == 1 ? " point" : " points") + " after step 0 (" +
                      std::to_string(k_wanted_val_points) + " or more show their shape): a smaller eval.every "
                      "gives more, at the cost of evaluation time");
  }
  for (const auto& s : a.variants) {
    if (s.is_baseline) {
      continue;
    }
    const auto mine_it = std::find_if(in.variants.begin(), in.variants.end(),
                                      [&](const VariantRuns& v) { return v.name == s.name; });
    std::map<int64_t, std::vector<double>> delta;  // tokens -> improvement per seed
    TokensToTarget target;
    target.variant = s.name;
    target.position = s.position;
    std::vector<double> savings;
    for (const auto& [seed, curve] : curves_by_seed(mine_it->runs)) {
      const auto b = base.find(seed);
      if (b == base.end()) {
        continue;
      }
      for (const auto& [tokens, loss] : *curve) {
        if (tokens == 0) {
          continue;  // ln(vocab) on both sides
        }
        if (const auto at = interpolate(*b->second, static_cast<double>(tokens))) {
          delta[tokens].push_back(*at - loss);
        }
      }
      ++target.seeds;
      const double goal = b->second->back().second;
      const std::optional<double> base_tokens = tokens_to_reach(*b->second, goal);
      if (const auto t = tokens_to_reach(*curve, goal); t && base_tokens && *base_tokens > 0) {
        ++target.reached;
        savings.push_back(1 - *t / *base_tokens);
      }
    }
    if (target.seeds == 0) {
      continue;
    }
    target.saving = summarize(savings);
    if (target.reached < target.seeds) {
      target.saving.ci_low = target.saving.ci_high = std::nan("");
    }
    a.targets.push_back(target);
    DeltaCurve curve;
    curve.variant = s.name;
    curve.position = s.position;
    for (const auto& [tokens, values] : delta) {
      curve.points.emplace_back(tokens, summarize(values));
    }
    a.deltas.push_back(curve);
  }
}

}  // namespace sweep
