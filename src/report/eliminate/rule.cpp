#include "report/eliminate/rule.h"

#include <algorithm>
#include <cmath>


namespace sweep {

std::vector<Elimination> eliminate_study(const std::vector<ArmLooks>& arms, const EliminationRule& r) {
  std::vector<Elimination> out(arms.size());
  const double level = r.alpha / static_cast<double>(arms.size() * r.looks.size());
  for (size_t j = 0; j < r.looks.size(); ++j) {
    const auto usable = [j](const ArmLooks& a) {
      return j < a.at.size() && a.at[j] && a.at[j]->seeds >= 2 && std::isfinite(a.at[j]->se);
    };
    double ss = 0, df = 0;  // the seeds' variance at this look, pooled over the arms
    for (const ArmLooks& a : arms) {
      if (usable(a)) {
        const double n = static_cast<double>(a.at[j]->seeds);
        ss += (n - 1) * n * a.at[j]->se * a.at[j]->se;
        df += n - 1;
      }
    }
    if (!(df > 0)) {
      continue;
    }
    const double pooled_sd = std::sqrt(ss / df);
    const double t = t_quantile(1 - 2 * level, df);
    for (size_t i = 0; i < arms.size(); ++i) {
      const ArmLooks& a = arms[i];
      if (out[i].stopped || !usable(a) || j >= a.before.size() || !a.before[j]) {
        continue;
      }
      const LookDelta& d = *a.at[j];
      const double n = static_cast<double>(d.seeds);
      const double upper = d.mean + t * std::max(d.se * std::sqrt(n), pooled_sd) / std::sqrt(n);
      const double threshold = -r.delta / r.kept[j];
      if (upper < threshold && d.mean <= a.before[j]->mean) {
        out[i] = {true, j, r.looks[j], d.mean, upper, threshold, d.seeds, {}};
      }
    }
  }
  return out;
}

std::optional<LookDelta> delta_at(const std::vector<std::pair<int64_t, Summary>>& curve, double fraction, double end) {
  if (curve.empty()) {
    return std::nullopt;
  }
  const double tokens = fraction * end;
  const auto point = [fraction](const std::pair<int64_t, Summary>& p) {
    return LookDelta{fraction, p.second.n, p.second.mean, p.second.sd / std::sqrt(static_cast<double>(p.second.n))};
  };
  const auto after = std::find_if(curve.begin(), curve.end(),
                                  [tokens](const auto& p) { return static_cast<double>(p.first) >= tokens; });
  if (after == curve.end() || (after == curve.begin() && static_cast<double>(after->first) > tokens)) {
    return std::nullopt;  // before the first evaluation, or past the end
  }
  const LookDelta b = point(*after);
  if (static_cast<double>(after->first) == tokens) {
    return b.seeds >= 2 ? std::optional<LookDelta>(b) : std::nullopt;
  }
  const LookDelta a = point(*(after - 1));
  if (a.seeds < 2 || b.seeds < 2) {
    return std::nullopt;
  }
  const double t0 = static_cast<double>((after - 1)->first), t1 = static_cast<double>(after->first);
  const double w = (tokens - t0) / (t1 - t0);
  return LookDelta{fraction, std::min(a.seeds, b.seeds), a.mean + w * (b.mean - a.mean), a.se + w * (b.se - a.se)};
}

ArmLooks arm_looks(const std::vector<std::pair<int64_t, Summary>>& curve, const EliminationRule& r) {
  const double end = curve.empty() ? 0.0 : static_cast<double>(curve.back().first);
  ArmLooks a;
  for (size_t j = 0; j < r.looks.size(); ++j) {
    a.at.push_back(delta_at(curve, r.looks[j], end));
    a.before.push_back(delta_at(curve, r.looks[j] - r.span, end));
  }
  return a;
}

}  // namespace sweep
