#include "report/stats.h"

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/non_central_t.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <numeric>
#include <random>
#include <tuple>

namespace sweep {

namespace {

double mean_of(const std::vector<double>& x) {
  return x.empty() ? k_nan : std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

double variance_of(const std::vector<double>& x) {
  if (x.size() < 2) {
    return k_nan;
  }
  const double m = mean_of(x);
  double ss = 0;
  for (double v : x) {
    ss += (v - m) * (v - m);
  }
  return ss / static_cast<double>(x.size() - 1);
}

// p and CI of a t statistic for difference `diff` with standard error `se` and `df`.
Comparison from_t(double diff, double se, double df, double level, bool paired) {
  Comparison c;
  c.improvement = diff;
  c.se = se;
  c.df = df;
  c.paired = paired;
  if (!(df > 0) || !std::isfinite(se)) {
    c.p = c.ci_low = c.ci_high = k_nan;
    return c;
  }
  if (se == 0) {  // no variance at all: the difference is exact
    c.p = diff == 0 ? 1.0 : 0.0;
    c.ci_low = c.ci_high = diff;
    return c;
  }
  const boost::math::students_t dist(df);
  const double t = diff / se;
  c.p = 2.0 * boost::math::cdf(boost::math::complement(dist, std::abs(t)));
  const double q = t_quantile(level, df);
  c.ci_low = diff - q * se;
  c.ci_high = diff + q * se;
  return c;
}

}  // namespace

double t_quantile(double level, double df) {
  return boost::math::quantile(boost::math::students_t(df), 0.5 + level / 2.0);
}

double chi2_quantile(double p, double df) { return boost::math::quantile(boost::math::chi_squared(df), p); }

Summary summarize(const std::vector<double>& x, double level) {
  Summary s;
  s.n = static_cast<int64_t>(x.size());
  s.mean = mean_of(x);
  s.sd = std::sqrt(variance_of(x));
  if (s.n < 2) {
    s.ci_low = s.ci_high = k_nan;
    return s;
  }
  const double half = t_quantile(level, static_cast<double>(s.n - 1)) * s.sd / std::sqrt(static_cast<double>(s.n));
  s.ci_low = s.mean - half;
  s.ci_high = s.mean + half;
  return s;
}

Comparison t_estimate(double estimate, double se, double df, double level) {
  return from_t(estimate, se, df, level, false);
}

Comparison one_sample(const std::vector<double>& d, double level) {
  const double n = static_cast<double>(d.size());
  return from_t(mean_of(d), std::sqrt(variance_of(d) / n), n - 1, level, true);
}

Comparison compare_paired(const std::vector<double>& baseline, const std::vector<double>& variant, double level) {
  std::vector<double> d;
  for (size_t i = 0; i < std::min(baseline.size(), variant.size()); ++i) {
    d.push_back(baseline[i] - variant[i]);
  }
  return one_sample(d, level);
}

Comparison contrast(const std::vector<std::vector<double>>& groups, const std::vector<double>& weights, double level) {
  double diff = 0, var = 0, df_denominator = 0, n_total = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const double n = static_cast<double>(groups[g].size());
    const double v = weights[g] * weights[g] * variance_of(groups[g]) / n;  // NaN when n < 2
    diff += weights[g] * mean_of(groups[g]);
    var += v;
    df_denominator += v * v / (n - 1);
    n_total += n;
  }
  // Welch–Satterthwaite; without any variance it is 0/0, and any positive df gives the exact answer.
  const double df = var == 0 ? n_total - static_cast<double>(groups.size()) : var * var / df_denominator;
  return from_t(diff, std::sqrt(var), df, level, false);
}

Comparison compare_welch(const std::vector<double>& baseline, const std::vector<double>& variant, double level) {
  return contrast({baseline, variant}, {1.0, -1.0}, level);
}

double tost_p(const Comparison& c, double delta) {
  if (!(c.df > 0) || !std::isfinite(c.se) || !std::isfinite(c.improvement)) {
    return k_nan;
  }
  if (c.se == 0) {
    return std::abs(c.improvement) < delta ? 0.0 : 1.0;
  }
  const boost::math::students_t dist(c.df);
  const double p_low = boost::math::cdf(boost::math::complement(dist, (c.improvement + delta) / c.se));  // H0: ≤ −δ
  const double p_high = boost::math::cdf(dist, (c.improvement - delta) / c.se);                         // H0: ≥ δ
  return std::max(p_low, p_high);
}

double margin_p(const Comparison& c, double margin) {
  if (!(c.df > 0) || !std::isfinite(c.se) || !std::isfinite(c.improvement)) {
    return k_nan;
  }
  if (c.se == 0) {
    return c.improvement > margin ? 0.0 : 1.0;
  }
  return boost::math::cdf(boost::math::complement(boost::math::students_t(c.df), (c.improvement - margin) / c.se));
}

double spent(Spending spending, double alpha, double t) {
  const boost::math::normal normal;
  return spending == Spending::pocock
             ? alpha * std::log(1 + (std::exp(1.0) - 1) * t)
             : 2.0 * boost::math::cdf(boost::math::complement(
                         normal, boost::math::quantile(normal, 1 - alpha / 2) / std::sqrt(t)));
}

std::vector<double> t_boundaries(const std::vector<int64_t>& looks, int64_t n_max, double alpha, Spending spending,
                                 bool two_sided, int64_t paths) {
  const size_t K = looks.size();
  // The statistic of every simulated study at every look.
  std::vector<std::vector<float>> stat(K, std::vector<float>(static_cast<size_t>(paths)));
  std::mt19937_64 rng(20261123);
  std::normal_distribution<double> normal;
  // Every path draws its n_max pairs whatever the looks, so path p is the same study in every
  // call: c_k depends on n_1 … n_k and n_max alone, and the runner, which knows the looks so far,
  // and a report made after more looks set the same boundary at the same look.
  const int64_t draws = std::max(n_max, looks.empty() ? 0 : looks.back());
  for (int64_t p = 0; p < paths; ++p) {
    double sum = 0, squares = 0;
    size_t k = 0;
    for (int64_t n = 1; n <= draws; ++n) {
      const double x = normal(rng);
      sum += x;
      squares += x * x;
      if (k < K && n == looks[k]) {
        const double nn = static_cast<double>(n), mean = sum / nn;
        const double var = std::max(0.0, (squares - nn * mean * mean) / (nn - 1));
        const double t = var > 0 ? mean / std::sqrt(var / nn) : 0.0;
        stat[k][static_cast<size_t>(p)] = static_cast<float>(two_sided ? std::abs(t) : t);
        ++k;
      }
    }
  }
  // Look by look: the studies still running that cross c_k make up this look's share of alpha.
  std::vector<char> running(static_cast<size_t>(paths), 1);
  std::vector<double> out;
  double before = 0;
  for (size_t k = 0; k < K; ++k) {
    const double t = std::min(1.0, static_cast<double>(looks[k]) / static_cast<double>(n_max));
    const double total = two_sided ? 2 * spent(spending, alpha / 2, t) : spent(spending, alpha, t);
    const auto crossing = static_cast<size_t>(std::llround((total - before) * static_cast<double>(paths)));
    before = total;
    std::vector<float> values;
    for (size_t p = 0; p < running.size(); ++p) {
      if (running[p]) {
        values.push_back(stat[k][p]);
      }
    }
    if (crossing == 0 || values.empty()) {
      out.push_back(std::numeric_limits<double>::infinity());
      continue;
    }
    const size_t at = values.size() - std::min(crossing, values.size());  // the crossing-th largest
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(at), values.end());
    const float c = values[at];
    out.push_back(c);
    for (size_t p = 0; p < running.size(); ++p) {
      running[p] = running[p] && stat[k][p] < c;
    }
  }
  return out;
}

double test_set_se(const std::vector<LossBlocks>& plus, const std::vector<LossBlocks>& minus) {
  if (plus.empty() || (!minus.empty() && minus.size() != plus.size())) {
    return k_nan;
  }
  const size_t n = plus.front().size();
  std::vector<double> residual(n, 0.0);
  double tokens = 0;
  auto add = [&](const LossBlocks& run, double sign) {
    if (run.size() != n) {
      return false;
    }
    double nats = 0, count = 0;
    for (const auto& [t, x] : run) {
      nats += x;
      count += static_cast<double>(t);
    }
    const double loss = nats / count;
    for (size_t i = 0; i < n; ++i) {
      if (run[i].first != plus.front()[i].first) {
        return false;  // another split or block size: the blocks do not line up
      }
      residual[i] += sign * (run[i].second - loss * static_cast<double>(run[i].first)) / static_cast<double>(plus.size());
    }
    tokens = count;
    return true;
  };
  for (size_t s = 0; s < plus.size(); ++s) {
    if (!add(plus[s], 1.0) || (!minus.empty() && !add(minus[s], -1.0))) {
      return k_nan;
    }
  }
  if (n < 2 || !(tokens > 0)) {
    return k_nan;
  }
  double ss = 0;
  for (double r : residual) {
    ss += r * r;
  }
  return std::sqrt(static_cast<double>(n) / static_cast<double>(n - 1) * ss) / tokens;
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
  std::vector<size_t> order;  // the tests: NaN is no test, left NaN and not counted
  for (size_t i = 0; i < p.size(); ++i) {
    if (!std::isnan(p[i])) {
      order.push_back(i);
    }
  }
  const size_t m = order.size();
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> out(p.size(), k_nan);
  double running = 0;
  for (size_t rank = 0; rank < m; ++rank) {
    const double adjusted = std::min(1.0, static_cast<double>(m - rank) * p[order[rank]]);
    running = std::max(running, adjusted);  // adjusted p-values never decrease with rank
    out[order[rank]] = running;
  }
  return out;
}

double probability_of_improvement(const std::vector<double>& baseline, const std::vector<double>& variant,
                                  bool paired) {
  double wins = 0, total = 0;
  auto score = [&](double b, double v) {
    wins += v < b ? 1.0 : v == b ? 0.5 : 0.0;
    total += 1;
  };
  if (paired) {
    for (size_t i = 0; i < std::min(baseline.size(), variant.size()); ++i) {
      score(baseline[i], variant[i]);
    }
  } else {
    for (double b : baseline) {
      for (double v : variant) {
        score(b, v);
      }
    }
  }
  return total > 0 ? wins / total : k_nan;
}

namespace {

// Power of a two-sided t-test at `alpha` for `effect` with n seeds per variant (pairs when paired).
double power_of(double effect, double sd, int64_t n, bool paired, double alpha) {
  const double nn = static_cast<double>(n);
  const double df = paired ? nn - 1 : 2 * nn - 2;
  const double se = paired ? sd / std::sqrt(nn) : sd * std::sqrt(2.0 / nn);
  const double crit = t_quantile(1.0 - alpha, df);
  if (std::abs(effect / se) > 1000) {  // certain detection (and beyond what Boost's series can evaluate)
    return 1.0;
  }
  const boost::math::non_central_t dist(df, effect / se);
  return boost::math::cdf(boost::math::complement(dist, crit)) + boost::math::cdf(dist, -crit);
}

}  // namespace

int64_t seeds_needed(double effect, double sd, bool paired, double alpha, double power) {
  effect = std::abs(effect);
  if (!(effect > 0) || !(sd > 0) || !std::isfinite(effect) || !std::isfinite(sd)) {
    return -1;
  }
  // Power grows with n: bisect for the first n that reaches it.
  int64_t lo = 1, hi = 100000;  // power(lo) < power (n = 1 has no test), power(hi) assumed enough
  if (power_of(effect, sd, hi, paired, alpha) < power) {
    return hi;
  }
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    (power_of(effect, sd, mid, paired, alpha) >= power ? hi : lo) = mid;
  }
  return hi;
}

double detectable_effect(int64_t n, double sd, bool paired, double alpha, double power) {
  if (n < 2 || !(sd > 0) || !std::isfinite(sd)) {
    return k_nan;
  }
  // Power depends on effect ÷ sd alone: the effect detectable at sd = 1, found once per design
  // (a report asks for it per variant and per look; each search is ~70 non-central t CDFs).
  static std::mutex mutex;
  static std::map<std::tuple<int64_t, bool, double, double>, double> known;
  const std::lock_guard<std::mutex> lock(mutex);
  auto [it, added] = known.try_emplace({n, paired, alpha, power}, 0.0);
  if (added) {
    // Power grows with the effect: bisect between an effect too small and one large enough.
    double lo = 0, hi = 1;
    while (power_of(hi, 1, n, paired, alpha) < power) {
      hi *= 2;
    }
    for (int i = 0; i < 60; ++i) {
      const double mid = (lo + hi) / 2;
      (power_of(mid, 1, n, paired, alpha) < power ? lo : hi) = mid;
    }
    it->second = hi;
  }
  return sd * it->second;
}

VarianceComponents variance_components(const std::vector<SeedRun>& runs) {
  VarianceComponents vc;
  std::map<std::pair<int64_t, int64_t>, std::vector<double>> cells;
  std::set<int64_t> inits, datas;
  for (const auto& r : runs) {
    cells[{r.init, r.data}].push_back(r.value);
    inits.insert(r.init);
    datas.insert(r.data);
  }
  vc.n_init = static_cast<int64_t>(inits.size());
  vc.n_data = static_cast<int64_t>(datas.size());
  vc.repeats = cells.empty() ? 0 : static_cast<int64_t>(cells.begin()->second.size());

  // ---- repeats: pooled within-cell variance ----
  double within = 0, within_df = 0;
  for (const auto& [key, values] : cells) {
    if (values.size() >= 2) {
      within += variance_of(values) * static_cast<double>(values.size() - 1);
      within_df += static_cast<double>(values.size() - 1);
    }
  }
  vc.sigma_repeat = within_df > 0 ? std::sqrt(within / within_df) : k_nan;

  // ---- init × data on the cell means (needs every combination) ----
  const bool balanced = cells.size() == inits.size() * datas.size();
  const double a = static_cast<double>(vc.n_init), b = static_cast<double>(vc.n_data);
  if (!balanced || cells.empty()) {
    vc.sigma_init = vc.sigma_data = vc.sigma_resid = k_nan;
    return vc;
  }
  std::map<int64_t, double> init_mean, data_mean;
  double grand = 0;
  for (const auto& [key, values] : cells) {
    const double m = mean_of(values);
    init_mean[key.first] += m / b;
    data_mean[key.second] += m / a;
    grand += m / (a * b);
  }
  double ss_init = 0, ss_data = 0, ss_resid = 0;
  for (const auto& [i, m] : init_mean) {
    ss_init += b * (m - grand) * (m - grand);
  }
  for (const auto& [d, m] : data_mean) {
    ss_data += a * (m - grand) * (m - grand);
  }
  for (const auto& [key, values] : cells) {
    const double r = mean_of(values) - init_mean[key.first] - data_mean[key.second] + grand;
    ss_resid += r * r;
  }
  const double ms_resid = a > 1 && b > 1 ? ss_resid / ((a - 1) * (b - 1)) : 0.0;
  vc.sigma_init = a > 1 ? std::sqrt(std::max(0.0, (ss_init / (a - 1) - ms_resid) / b)) : k_nan;
  vc.sigma_data = b > 1 ? std::sqrt(std::max(0.0, (ss_data / (b - 1) - ms_resid) / a)) : k_nan;
  vc.sigma_resid = a > 1 && b > 1 ? std::sqrt(ms_resid) : k_nan;
  return vc;
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  if (n < 3) {
    return k_nan;
  }
  const double mx = mean_of(x), my = mean_of(y);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : k_nan;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) {
    return k_nan;
  }
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);  // linear between order statistics
  const auto lo = static_cast<size_t>(std::floor(at));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

std::optional<Quadratic> fit_quadratic(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || std::set<double>(x.begin(), x.end()).size() < 3) {
    return std::nullopt;
  }
  // Normal equations in u = x − mean(x) (well conditioned), then back to x.
  const double m = mean_of(x);
  double s[5] = {0, 0, 0, 0, 0}, t[3] = {0, 0, 0};  // s[k] = Σ u^k, t[k] = Σ u^k y
  for (size_t i = 0; i < x.size(); ++i) {
    const double u = x[i] - m;
    double p = 1;
    for (int k = 0; k < 5; ++k) {
      s[k] += p;
      if (k < 3) {
        t[k] += p * y[i];
      }
      p *= u;
    }
  }
  // [s4 s3 s2; s3 s2 s1; s2 s1 s0] · (A, B, C) = (t2, t1, t0), by Cramer's rule.
  auto det3 = [](double a, double b, double c, double d, double e, double f, double g, double h, double k) {
    return a * (e * k - f * h) - b * (d * k - f * g) + c * (d * h - e * g);
  };
  const double d = det3(s[4], s[3], s[2], s[3], s[2], s[1], s[2], s[1], s[0]);
  if (d == 0 || !std::isfinite(d)) {
    return std::nullopt;
  }
  const double A = det3(t[2], s[3], s[2], t[1], s[2], s[1], t[0], s[1], s[0]) / d;
  const double B = det3(s[4], t[2], s[2], s[3], t[1], s[1], s[2], t[0], s[0]) / d;
  const double C = det3(s[4], s[3], t[2], s[3], s[2], t[1], s[2], s[1], t[0]) / d;
  // A(x − m)² + B(x − m) + C
  return Quadratic{A, B - 2 * A * m, A * m * m - B * m + C};
}

double Quadratic::at(double x) const { return (a * x + b) * x + c; }

double argmin_on(const Quadratic& q, double lo, double hi) {
  if (q.a > 0) {
    const double vertex = -q.b / (2 * q.a);
    if (vertex > lo && vertex < hi) {
      return vertex;
    }
  }
  return q.at(lo) <= q.at(hi) ? lo : hi;
}

}  // namespace sweep
