#include "report/response.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "util/text.h"

namespace sweep {

namespace {

// Keys that change how many sequences one optimizer step sees.
bool changes_batch(const std::string& key) {
  return key == "train.micro_batch" || key == "train.grad_accum" || key == "resources.ranks";
}

}  // namespace

std::optional<double> axis_number(const std::string& json_text) {
  try {
    size_t used = 0;
    const double v = std::stod(json_text, &used);
    if (used == json_text.size() && std::isfinite(v)) {
      return v;
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

namespace {

// (x, value) pairs of the given seeds (a seed drawn twice counts twice) at every point, by x.
std::vector<std::pair<double, double>> values_of(const std::vector<ResponsePoint>& points, const std::vector<SeedKey>& seeds) {
  std::vector<std::pair<double, double>> xy;
  for (const auto& p : points) {
    for (const auto& s : seeds) {
      if (const auto it = p.values.find(s); it != p.values.end()) {
        xy.emplace_back(p.x, it->second);
      }
    }
  }
  return xy;
}

void add_note(OptimumFit& f, const std::string& note) { f.note += (f.note.empty() ? "" : "; ") + note; }

// (x, summary of its values) of each point with results.
std::vector<std::pair<double, Summary>> point_means(const std::vector<ResponsePoint>& points) {
  std::vector<std::pair<double, Summary>> means;
  for (const auto& p : points) {
    std::vector<double> values;
    for (const auto& [key, value] : p.values) {
      values.push_back(value);
    }
    if (!values.empty()) {
      means.emplace_back(p.x, summarize(values));
    }
  }
  return means;
}

bool by_mean(const std::pair<double, Summary>& a, const std::pair<double, Summary>& b) { return a.second.mean < b.second.mean; }

// Why the fitted curve's lowest value is not a bowl the data show, if it lies far below every
// measured mean: by more than half the spread of the means, or than the widest mean's CI (noise).
std::optional<std::string> far_below_the_means(double lowest_fitted, const std::vector<std::pair<double, Summary>>& means) {
  const auto [lowest, highest] = std::minmax_element(means.begin(), means.end(), by_mean);
  double tolerance = (highest->second.mean - lowest->second.mean) / 2;
  for (const auto& [x, m] : means) {
    if (std::isfinite(m.ci_high)) {
      tolerance = std::max(tolerance, m.ci_high - m.mean);
    }
  }
  if (lowest_fitted >= lowest->second.mean - tolerance) {
    return std::nullopt;
  }
  char text[256];
  std::snprintf(text, sizeof text,
                "no optimum: the fitted quadratic's lowest value (%.4g) lies far below every measured mean "
                "(the lowest, %.4f, at %g) — this response is not a bowl a quadratic describes",
                lowest_fitted, lowest->second.mean, lowest->first);
  return text;
}

// Seeds drawn with replacement, the curve fitted again (its 3 values chosen again), its minimum
// taken each time (in t, the fit's axis): the share strictly within [lo, hi], the values tried, and
// a percentile CI (replaced by local_best_interval's where 2 seeds have fits of their own).
void bootstrap_best(OptimumFit& f, const std::vector<ResponsePoint>& points, const std::vector<SeedKey>& all,
                    const std::set<double>& xs, int64_t resamples, uint64_t seed) {
  const double lo = f.log_x ? std::log(*xs.begin()) : *xs.begin(), hi = f.log_x ? std::log(*xs.rbegin()) : *xs.rbegin();
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, all.size() - 1);
  std::vector<double> bests;
  int64_t inside = 0;
  std::vector<SeedKey> drawn(all.size());
  for (int64_t r = 0; r < resamples; ++r) {
    for (auto& d : drawn) {
      d = all[pick(rng)];
    }
    const std::optional<FittedCurve> c = fit_curve(values_of(points, drawn), f.log_x);
    if (!c) {
      continue;
    }
    const double b = argmin_on(c->q, c->lo, c->hi);
    inside += b > lo && b < hi;
    bests.push_back(b);
  }
  f.resamples = static_cast<int64_t>(bests.size());
  if (!bests.empty()) {
    const auto to_x = [&](double t) { return f.log_x ? std::exp(t) : t; };
    f.ci_low = to_x(percentile(bests, 0.025));
    f.ci_high = to_x(percentile(bests, 0.975));
    f.share_inside = static_cast<double>(inside) / static_cast<double>(bests.size());
  }
}

// The best value's CI (k_best_shape_allowance says how). The bootstrap's percentile interval
// covered the true best in 74% of symmetric bowls with 3 seeds (10 distinct resamples) and in none
// of the asymmetric ones. Kept as the bootstrap's when fewer than 2 seeds give a fit.
void local_best_interval(OptimumFit& f, const std::vector<ResponsePoint>& points, const std::vector<SeedKey>& all,
                         const std::set<double>& xs, const FittedCurve& c, double best_t) {
  std::vector<double> seed_bests;
  for (const SeedKey& key : all) {
    if (const std::optional<FittedCurve> one = fit_curve(values_of(points, {key}), f.log_x)) {
      seed_bests.push_back(argmin_on(one->q, one->lo, one->hi));
    }
  }
  if (seed_bests.size() < 2) {
    return;
  }
  double step = 0;  // the window's larger step between values, in t
  for (auto x = xs.lower_bound(c.first); x != xs.end() && *x < c.last; ++x) {
    step = std::max(step, (f.log_x ? std::log(*std::next(x)) - std::log(*x) : *std::next(x) - *x));
  }
  const Summary spread = summarize(seed_bests);  // its CI: the t interval of the seeds' mean best
  const double half = std::hypot(spread.ci_high - spread.mean, k_best_shape_allowance * step);
  const auto to_x = [&](double t) { return f.log_x ? std::exp(t) : t; };
  f.ci_low = to_x(best_t - half);
  f.ci_high = to_x(best_t + half);
}

// Where the best value sits against the ends of the values with results (xs): the lowest mean
// at an end with the curve's minimum inside, or the curve lowest at an end (low_end: the
// smallest; then the values tried beyond it that have no result are named).
void note_range_end(OptimumFit& f, const std::vector<ResponsePoint>& points, const std::set<double>& xs,
                    const std::vector<std::pair<double, Summary>>& means, bool low_end) {
  char text[320];
  const double lowest_x = std::min_element(means.begin(), means.end(), by_mean)->first;
  if (f.inside && (lowest_x == *xs.begin() || lowest_x == *xs.rbegin())) {
    std::snprintf(text, sizeof text,
                  "the lowest measured mean is at the end of the range (%g): the minimum inside it is the curve's, "
                  "between values tried",
                  lowest_x);
    add_note(f, text);
  }
  if (f.inside) {
    return;
  }
  // Values tried beyond this end that have no result (every run diverged, or not finished).
  std::string beyond;
  for (const auto& p : points) {
    if (p.values.empty() && (low_end ? p.x < *xs.begin() : p.x > *xs.rbegin())) {
      std::snprintf(text, sizeof text, "%s%g", beyond.empty() ? "" : ", ", p.x);
      beyond += text;
    }
  }
  add_note(f, std::string("the fitted curve is lowest at the ") + (low_end ? "smallest" : "largest") +
                  " value with results: the best value lies there or beyond it" +
                  (beyond.empty() ? " (try values beyond it, where the key allows)"
                                  : "; the " + std::string(low_end ? "smaller" : "larger") + " values tried (" + beyond +
                                        ") have no result — their runs diverged or have not finished"));
}

}  // namespace

std::pair<double, double> local_window(const std::vector<std::pair<double, double>>& x_means) {
  if (x_means.size() <= 3) {
    return {x_means.front().first, x_means.back().first};
  }
  const auto lowest = std::min_element(x_means.begin(), x_means.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
  const auto i = static_cast<size_t>(lowest - x_means.begin());
  const size_t first = std::min(i > 0 ? i - 1 : 0, x_means.size() - 3);
  return {x_means[first].first, x_means[first + 2].first};
}

std::optional<FittedCurve> fit_curve(const std::vector<std::pair<double, double>>& xy, bool log_x) {
  std::map<double, std::pair<double, int64_t>> sums;  // x → (sum, count)
  for (const auto& [x, value] : xy) {
    sums[x].first += value;
    sums[x].second += 1;
  }
  if (sums.size() < 3) {
    return std::nullopt;
  }
  std::vector<std::pair<double, double>> x_means;
  for (const auto& [x, sum] : sums) {
    x_means.emplace_back(x, sum.first / static_cast<double>(sum.second));
  }
  const auto [first, last] = local_window(x_means);
  std::vector<double> t, y;
  for (const auto& [x, value] : xy) {
    if (x >= first && x <= last) {
      t.push_back(log_x ? std::log(x) : x);
      y.push_back(value);
    }
  }
  const std::optional<Quadratic> q = fit_quadratic(t, y);
  if (!q) {
    return std::nullopt;
  }
  return FittedCurve{*q, first, last, log_x ? std::log(first) : first, log_x ? std::log(last) : last};
}

OptimumFit fit_optimum(const std::vector<ResponsePoint>& points, int64_t resamples, uint64_t seed) {
  OptimumFit f;
  f.best = f.ci_low = f.ci_high = f.share_inside = f.fit_low = f.fit_high = k_nan;
  std::set<double> xs;
  std::set<SeedKey> seed_set;
  for (const auto& p : points) {
    if (!p.values.empty()) {
      xs.insert(p.x);
    }
    for (const auto& [key, value] : p.values) {
      seed_set.insert(key);
    }
  }
  f.points = static_cast<int64_t>(xs.size());
  f.seeds = static_cast<int64_t>(seed_set.size());
  if (xs.size() < 3) {
    f.note = "fewer than 3 distinct values with results: no optimum fitted";
    return f;
  }
  const std::vector<std::pair<double, Summary>> means = point_means(points);
  const auto [lowest, highest] = std::minmax_element(means.begin(), means.end(), by_mean);
  if (highest->second.mean - lowest->second.mean <= 1e-9 * std::max(1.0, std::abs(highest->second.mean))) {
    // a quadratic through rounding noise would put a best anywhere
    f.note = "the metric is the same at every value tried: flat, no optimum (a key the trainer ignores?)";
    return f;
  }
  f.log_x = *xs.begin() > 0;
  const double lo = f.log_x ? std::log(*xs.begin()) : *xs.begin(), hi = f.log_x ? std::log(*xs.rbegin()) : *xs.rbegin();
  const std::vector<SeedKey> all(seed_set.begin(), seed_set.end());
  const std::optional<FittedCurve> c = fit_curve(values_of(points, all), f.log_x);
  if (!c) {
    f.note = "the quadratic fit is degenerate";
    return f;
  }
  const auto to_x = [&](double t) { return f.log_x ? std::exp(t) : t; };
  f.curve = c->q;
  f.fit_low = c->first;
  f.fit_high = c->last;
  const double best_t = argmin_on(c->q, c->lo, c->hi);
  if (std::optional<std::string> why = far_below_the_means(c->q.at(best_t), means)) {
    f.note = *why;
    return f;
  }
  f.fitted = true;
  f.best = to_x(best_t);
  f.inside = best_t > lo && best_t < hi;
  if (all.size() >= 2) {
    bootstrap_best(f, points, all, xs, resamples, seed);
    local_best_interval(f, points, all, xs, *c, best_t);
  } else {
    add_note(f, "one seed: no bootstrap CI");
  }
  note_range_end(f, points, xs, means, best_t <= lo);
  return f;
}

std::string series_of(const VariantRuns& v, const std::vector<std::string>& along) {
  std::string key = v.intervention;
  for (const auto& [axis, value] : v.axes) {
    if (std::find(along.begin(), along.end(), axis) == along.end()) {
      // as variant names show it: the key's last part, a string without its JSON quotes
      const bool text = value.size() >= 2 && value.front() == '"';
      key += "+" + short_key(axis) + "=" + (text ? value.substr(1, value.size() - 2) : value);
    }
  }
  return key;
}

std::vector<std::pair<std::string, std::vector<const VariantRuns*>>> series_along(const ReportInput& in,
                                                                                  const std::vector<std::string>& keys) {
  std::vector<std::pair<std::string, std::vector<const VariantRuns*>>> series;
  for (const auto& v : in.variants) {
    const std::string key = series_of(v, keys);
    auto it = std::find_if(series.begin(), series.end(), [&](const auto& s) { return s.first == key; });
    if (it == series.end()) {
      series.push_back({key, {}});
      it = series.end() - 1;
    }
    it->second.push_back(&v);
  }
  return series;
}

std::optional<std::string> first_numeric_key(const ReportInput& in, const std::vector<std::string>& keys) {
  for (const auto& key : keys) {
    if (std::all_of(in.variants.begin(), in.variants.end(),
                    [&](const VariantRuns& v) { return v.axes.count(key) && axis_number(v.axes.at(key)); })) {
      return key;
    }
  }
  return std::nullopt;
}

std::vector<Response> find_responses(const ReportInput& in, std::vector<std::string>& notes) {
  std::vector<Response> out;
  for (const auto& dim : in.axes) {
    const auto series = series_along(in, dim.keys);
    // x: the batch when this dimension changes it along a series, else the first key with numbers everywhere.
    const bool by_batch = std::any_of(dim.keys.begin(), dim.keys.end(), changes_batch) &&
                          std::any_of(series.begin(), series.end(), [](const auto& s) {
                            std::set<double> batches;
                            for (const VariantRuns* v : s.second) {
                              batches.insert(v->batch_sequences);
                            }
                            return batches.size() >= 2 && *batches.begin() > 0;
                          });
    std::string x_key;
    if (!by_batch) {
      const std::optional<std::string> numeric = first_numeric_key(in, dim.keys);
      if (!numeric) {
        notes.push_back("axis " + join(dim.keys, ", ") + ": no numeric value, so no response");
        continue;
      }
      x_key = *numeric;
    }
    for (const auto& [name, members] : series) {
      Response r;
      r.keys = dim.keys;
      r.series = name;
      r.label = by_batch ? "batch size (sequences)" : x_key;
      for (const VariantRuns* v : members) {
        ResponsePoint p;
        p.variant = v->name;
        p.x = by_batch ? v->batch_sequences : *axis_number(v->axes.at(x_key));
        p.values = seed_values(v->runs);
        std::vector<double> values;
        for (const auto& [seed, value] : p.values) {
          values.push_back(value);
        }
        p.summary = summarize(values);
        r.points.push_back(p);
      }
      std::stable_sort(r.points.begin(), r.points.end(),
                       [](const ResponsePoint& a, const ResponsePoint& b) { return a.x < b.x; });
      if (r.points.size() < 2) {
        continue;
      }
      const double x_min = r.points.front().x, x_max = r.points.back().x;
      r.log_x = x_min > 0 && x_max / x_min >= 4;
      r.fit = fit_optimum(r.points);
      if (!r.fit.fitted) {
        notes.push_back("response to " + r.label + " (series " + name + "): " + r.fit.note);
      } else if (!r.fit.log_x) {
        r.fit.note = "fitted against " + r.label + " itself: some values are ≤ 0, which have no logarithm" +
                     (r.fit.note.empty() ? "" : "; " + r.fit.note);  // first: it says what the fit is
      }
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace sweep
