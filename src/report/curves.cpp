#include "report/curves.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

namespace sweep {

namespace {

// `curve` (x ascending) at x, linear between points; nullopt outside its range.
template <class X>
std::optional<double> value_at(const std::vector<std::pair<X, double>>& curve, double at) {
  for (size_t i = 0; i < curve.size(); ++i) {
    const auto x = static_cast<double>(curve[i].first);
    if (x == at) {
      return curve[i].second;
    }
    if (x > at) {
      if (i == 0) {
        return std::nullopt;
      }
      const auto x0 = static_cast<double>(curve[i - 1].first);
      return curve[i - 1].second + (curve[i].second - curve[i - 1].second) * (at - x0) / (x - x0);
    }
  }
  return std::nullopt;
}

// The first x at which `curve` reaches `target` or below, linear between points.
template <class X>
std::optional<double> first_reach(const std::vector<std::pair<X, double>>& curve, double target) {
  for (size_t i = 0; i < curve.size(); ++i) {
    if (curve[i].second <= target) {
      if (i == 0) {
        return static_cast<double>(curve[0].first);
      }
      const auto x0 = static_cast<double>(curve[i - 1].first), x1 = static_cast<double>(curve[i].first);
      const double y0 = curve[i - 1].second, y1 = curve[i].second;
      return x0 + (x1 - x0) * (y0 - target) / (y0 - y1);
    }
  }
  return std::nullopt;
}



// A seed's finished run with a validation curve (`unfinished`: or one still training): the first
// of its identical-seed repeats stands for it (repeats are identical here, or averaged by
// seed_values for the metric).
std::map<SeedKey, const ReportRun*> runs_by_seed(const std::vector<ReportRun>& runs, bool unfinished = false) {
  std::map<SeedKey, const ReportRun*> out;
  for (const auto& r : runs) {
    if ((r.value || unfinished) && r.val_curve.size() >= 2) {
      out.emplace(SeedKey{r.init_seed, r.data_seed}, &r);
    }
  }
  return out;
}

using Curve = std::vector<std::pair<double, double>>;  // (x, validation loss), x ascending

// The validation curve against tokens × `per_token` (1: tokens; FLOPs per token: training FLOPs).
Curve scaled_curve(const ReportRun& r, double per_token) {
  Curve out;
  for (const auto& [tokens, loss] : r.val_curve) {
    out.emplace_back(static_cast<double>(tokens) * per_token, loss);
  }
  return out;
}

// The validation curve against training seconds (each step's tokens over its own speed,
// evaluations left out); empty when a step's speed is unknown.
Curve time_curve(const ReportRun& r) {
  // (tokens, seconds) per step, tokens ascending; of the steps at one token count the last stands.
  std::vector<std::pair<int64_t, double>> seconds{{0, 0.0}};
  seconds.reserve(r.train_curve.size() + 1);
  for (const auto& p : r.train_curve) {
    seconds.emplace_back(p.tokens, p.seconds);
  }
  const auto by_tokens = [](const std::pair<int64_t, double>& a, const std::pair<int64_t, double>& b) {
    return a.first < b.first;
  };
  if (!std::is_sorted(seconds.begin(), seconds.end(), by_tokens)) {
    std::stable_sort(seconds.begin(), seconds.end(), by_tokens);
  }
  Curve out;
  for (const auto& [tokens, loss] : r.val_curve) {
    const auto after = std::upper_bound(seconds.begin(), seconds.end(), std::make_pair(tokens, 0.0), by_tokens);
    if (after == seconds.begin() || std::prev(after)->first != tokens || !std::isfinite(std::prev(after)->second)) {
      return {};
    }
    out.emplace_back(std::prev(after)->second, loss);
  }
  return out;
}

// The improvement (base − mine) at the smaller of the two curves' ends, the other interpolated there.
std::optional<double> at_equal(const Curve& base, const Curve& mine) {
  if (base.size() < 2 || mine.size() < 2) {
    return std::nullopt;
  }
  const double end = std::min(base.back().first, mine.back().first);
  const auto b = value_at(base, end), m = value_at(mine, end);
  if (!b || !m) {
    return std::nullopt;
  }
  return *b - *m;
}

// 1 − x(variant) / x(baseline) to reach the baseline's final loss; nullopt when the variant never does.
std::optional<double> saving_to_target(const Curve& base, const Curve& mine) {
  if (base.size() < 2 || mine.size() < 2) {
    return std::nullopt;
  }
  const double goal = base.back().second;
  const std::optional<double> b = first_reach(base, goal), m = first_reach(mine, goal);
  if (!b || !m || *b <= 0) {
    return std::nullopt;
  }
  return 1 - *m / *b;
}

// Mean and CI over seeds that all reached it (else the mean alone).
Summary savings_summary(const std::vector<double>& savings, int64_t seeds) {
  Summary s = summarize(savings);
  if (static_cast<int64_t>(savings.size()) < seeds) {
    s.ci_low = s.ci_high = std::nan("");
  }
  return s;
}

}  // namespace


std::optional<double> interpolate(const std::vector<std::pair<int64_t, double>>& curve, double tokens) {
  return value_at(curve, tokens);
}

std::optional<double> tokens_to_reach(const std::vector<std::pair<int64_t, double>>& curve, double target) {
  return first_reach(curve, target);
}

std::vector<std::pair<int64_t, Summary>> paired_delta_points(const std::vector<ReportRun>& base,
                                                             const std::vector<ReportRun>& mine, bool unfinished) {
  const auto base_runs = runs_by_seed(base, unfinished);
  std::map<int64_t, std::vector<double>> delta;  // tokens -> improvement per seed
  for (const auto& [seed, run] : runs_by_seed(mine, unfinished)) {
    const auto b = base_runs.find(seed);
    if (b == base_runs.end()) {
      continue;
    }
    for (const auto& [tokens, loss] : run->val_curve) {
      if (tokens == 0) {
        continue;  // ln(vocab) on both sides
      }
      if (const auto at = interpolate(b->second->val_curve, static_cast<double>(tokens))) {
        delta[tokens].push_back(*at - loss);
      }
    }
  }
  std::vector<std::pair<int64_t, Summary>> points;
  for (const auto& [tokens, values] : delta) {
    points.emplace_back(tokens, summarize(values));
  }
  return points;
}

CurveResults analyze_curves(const ReportInput& in, const std::vector<VariantStats>& ranked,
                            std::vector<std::string>& notes) {
  CurveResults a;
  const auto base_it = std::find_if(in.variants.begin(), in.variants.end(),
                                    [&](const VariantRuns& v) { return v.name == in.baseline; });
  const auto base = runs_by_seed(base_it->runs);
  size_t fewest = std::numeric_limits<size_t>::max();
  for (const auto& v : in.variants) {
    for (const auto& r : v.runs) {
      if (r.value && !r.val_curve.empty() && v.branch_step == 0) {  // a branch's curve starts at its branch point
        const size_t points = r.val_curve.size() - (r.val_curve.front().first == 0 ? 1 : 0);  // step 0 is no progress
        fewest = std::min(fewest, points);
      }
    }
  }
  if (fewest < k_wanted_val_points) {
    const bool own_trainer = std::any_of(in.variants.begin(), in.variants.end(), [](const VariantRuns& v) { return !v.trainer.empty(); });
    notes.push_back("the validation curves have as few as " + std::to_string(fewest) +
                    (fewest == 1 ? " point" : " points") + " after step 0 (" +
                    std::to_string(k_wanted_val_points) + " or more show their shape): " +
                    (own_trainer ? "more frequent eval events of the trainer give more" : "a smaller eval.every gives more") +
                    ", at the cost of evaluation time");
  }
  std::map<const ReportRun*, Curve> times;  // each run's time curve, made once (the baseline's serve every variant)
  const auto time_of = [&](const ReportRun& r) -> const Curve& {
    auto it = times.find(&r);
    return it != times.end() ? it->second : times.emplace(&r, time_curve(r)).first->second;
  };
  for (const auto& s : ranked) {
    if (s.is_baseline) {
      continue;
    }
    const auto mine_it = std::find_if(in.variants.begin(), in.variants.end(),
                                      [&](const VariantRuns& v) { return v.name == s.name; });
    if (mine_it->branch_step > 0) {  // its curves start at the branch point, its time there: only its Δ curve
      a.deltas.push_back({s.name, s.position, paired_delta_points(base_it->runs, mine_it->runs, false)});
      continue;
    }
    TokensToTarget target;
    target.variant = s.name;
    target.position = s.position;
    ComputeMatch match;
    match.variant = s.name;
    match.position = s.position;
    const bool flops_known = base_it->flops_per_token > 0 && mine_it->flops_per_token > 0;
    match.flops_ratio = flops_known ? mine_it->flops_per_token / base_it->flops_per_token : std::nan("");
    std::vector<double> savings, flops_savings, time_savings, at_tokens, at_flops, at_time, time_ratios;
    for (const auto& [seed, run] : runs_by_seed(mine_it->runs)) {
      const auto b = base.find(seed);
      if (b == base.end()) {
        continue;
      }
      const auto& base_curve = b->second->val_curve;
      const auto& curve = run->val_curve;
      ++target.seeds;
      const Curve bc = scaled_curve(*b->second, 1), mc = scaled_curve(*run, 1);
      if (const auto saved = saving_to_target(bc, mc)) {
        savings.push_back(*saved);
      }
      if (const auto d = at_equal(bc, mc)) {
        at_tokens.push_back(*d);
      }
      if (flops_known) {
        const Curve bf = scaled_curve(*b->second, base_it->flops_per_token), mf = scaled_curve(*run, mine_it->flops_per_token);
        if (const auto saved = saving_to_target(bf, mf)) {
          flops_savings.push_back(*saved);
          if (*saved < 1) {
            target.flops_speedups.push_back(1 / (1 - *saved));
          }
        }
        if (const auto d = at_equal(bf, mf)) {
          at_flops.push_back(*d);
        }
      }
      const Curve &bt = time_of(*b->second), &mt = time_of(*run);
      if (!bt.empty() && !mt.empty()) {
        ++target.time_seeds;
        if (const auto saved = saving_to_target(bt, mt)) {
          time_savings.push_back(*saved);
        }
        if (const auto d = at_equal(bt, mt)) {
          at_time.push_back(*d);
        }
        time_ratios.push_back((mt.back().first / static_cast<double>(curve.back().first)) /
                              (bt.back().first / static_cast<double>(base_curve.back().first)));
      }
    }
    if (target.seeds == 0) {
      continue;
    }
    target.reached = static_cast<int64_t>(savings.size());
    target.saving = savings_summary(savings, target.seeds);
    target.flops_reached = static_cast<int64_t>(flops_savings.size());
    target.flops_saving = savings_summary(flops_savings, flops_known ? target.seeds : 0);
    target.time_reached = static_cast<int64_t>(time_savings.size());
    target.time_saving = savings_summary(time_savings, target.time_seeds);
    a.targets.push_back(target);
    match.at_tokens = summarize(at_tokens);
    match.at_flops = summarize(at_flops);
    match.at_time = summarize(at_time);
    match.time_ratio = time_ratios.empty() ? std::nan("") : summarize(time_ratios).mean;
    a.matched.push_back(match);
    a.deltas.push_back({s.name, s.position, paired_delta_points(base_it->runs, mine_it->runs, false)});
  }
  return a;
}

}  // namespace sweep
