#include "report/pool/meta.h"

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <random>
#include <tuple>

#include "report/stats.h"

namespace sweep {

namespace {

// The generalised Q at τ²: Σ w_i (y_i − μ_w)², w_i = 1 / (s_i² + τ²); decreasing in τ².
double generalised_q(const std::vector<double>& y, const std::vector<double>& v, double tau2) {
  double sw = 0, swy = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    sw += 1 / (v[i] + tau2);
    swy += y[i] / (v[i] + tau2);
  }
  const double m = swy / sw;
  double q = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    q += (y[i] - m) * (y[i] - m) / (v[i] + tau2);
  }
  return q;
}

// The τ² ≥ 0 with generalised_q(τ²) = target (0 when Q(0) ≤ target), by bisection.
double solve_tau2(const std::vector<double>& y, const std::vector<double>& v, double target) {
  if (!(generalised_q(y, v, 0) > target)) {
    return 0;
  }
  double hi = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    hi = std::max(hi, y[i] * y[i] + v[i]);
  }
  hi = std::max(hi, 1e-300);
  for (int i = 0; i < 2000 && generalised_q(y, v, hi) > target; ++i) {
    hi *= 2;
  }
  double lo = 0;
  for (int i = 0; i < 300; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) {
      break;
    }
    (generalised_q(y, v, mid) > target ? lo : hi) = mid;
  }
  return lo + (hi - lo) / 2;
}

// The τ² with generalised_q(τ²) = target for many targets at once: Q (decreasing in τ²) tabled once
// on a grid of τ² eight points to a doubling, read between them linearly in log τ² against log Q (in
// τ² next to 0); a target below the grid's last Q by bisection.
class Tau2Table {
 public:
  Tau2Table(const std::vector<double>& y, const std::vector<double>& v) : m_y(y), m_v(v) {
    double hi = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      hi = std::max(hi, y[i] * y[i] + v[i]);
    }
    hi = std::max(hi, 1e-300);
    m_tau2.push_back(0);
    for (int i = 0; i <= 8 * 64; ++i) {
      m_tau2.push_back(hi * std::exp2(i / 8.0 - 40));
    }
    for (const double t : m_tau2) {
      m_q.push_back(generalised_q(y, v, t));
    }
  }

  double operator()(double target) const {
    if (!(m_q.front() > target)) {
      return 0;
    }
    if (!(m_q.back() < target)) {
      return solve_tau2(m_y, m_v, target);
    }
    // the first grid point whose Q is below the target (Q decreases along the grid)
    const size_t hi = static_cast<size_t>(
        std::partition_point(m_q.begin(), m_q.end(), [target](double q) { return q >= target; }) - m_q.begin());
    const double q0 = m_q[hi - 1], q1 = m_q[hi], t0 = m_tau2[hi - 1], t1 = m_tau2[hi];
    if (t0 == 0 || !(q1 > 0)) {
      return t0 + (t1 - t0) * (q0 - target) / (q0 - q1);
    }
    const double f = std::log(q0 / target) / std::log(q0 / q1);
    return t0 * std::pow(t1 / t0, f);
  }

 private:
  const std::vector<double>& m_y;
  const std::vector<double>& m_v;
  std::vector<double> m_tau2, m_q;
};

}  // namespace

std::pair<double, double> predictive_interval(const std::vector<double>& y, const std::vector<double>& se,
                                              double level, double extra_var) {
  const size_t k = y.size();
  if (k < 3) {
    return {k_nan, k_nan};
  }
  std::vector<double> v;
  for (const double s : se) {
    v.push_back(s * s);
  }
  const double df = static_cast<double>(k) - 1;
  const Tau2Table tau2_at(y, v);
  std::mt19937_64 rng(k_predictive_seed);
  std::chi_squared_distribution<double> chi2(df);
  std::normal_distribution<double> z(0, 1);
  std::student_t_distribution<double> t(df);
  std::vector<double> draws;
  draws.reserve(k_predictive_draws);
  for (int64_t b = 0; b < k_predictive_draws; ++b) {
    const double tau2 = tau2_at(chi2(rng));  // a draw from τ²'s confidence distribution (Q-profile)
    double sw = 0, swy = 0;
    for (size_t i = 0; i < k; ++i) {
      sw += 1 / (v[i] + tau2);
      swy += y[i] / (v[i] + tau2);
    }
    const double mean = swy / sw;
    double hk = 0;  // Hartung–Knapp's factor Σw(y − μ)²/(k − 1), floored at 1 as the pooled interval's
    for (size_t i = 0; i < k; ++i) {
      hk += (y[i] - mean) * (y[i] - mean) / (v[i] + tau2);
    }
    draws.push_back(mean + z(rng) * std::sqrt(tau2 + extra_var) - t(rng) * std::sqrt(std::max(hk / df, 1.0) / sw));
  }
  const auto at = [&](double p) {  // the p-quantile, between the draws around it
    const double index = p * static_cast<double>(draws.size() - 1);
    const auto lo = static_cast<std::ptrdiff_t>(std::floor(index));
    std::nth_element(draws.begin(), draws.begin() + lo, draws.end());
    const double below = draws[static_cast<size_t>(lo)];
    const double above = *std::min_element(draws.begin() + lo + 1, draws.end());
    return below + (index - static_cast<double>(lo)) * (above - below);
  };
  return {at((1 - level) / 2), at((1 + level) / 2)};
}

MetaResult random_effects(const std::vector<double>& y, const std::vector<double>& se, double level) {
  MetaResult r;
  r.k = static_cast<int64_t>(y.size());
  std::vector<double> v;
  for (const double s : se) {
    v.push_back(s * s);
  }
  const double df = static_cast<double>(r.k) - 1;
  // Cochran's Q with fixed-effect weights, and its test of homogeneity
  r.q = generalised_q(y, v, 0);
  r.q_p = df > 0 ? boost::math::cdf(boost::math::complement(boost::math::chi_squared(df), r.q)) : k_nan;
  r.tau2 = solve_tau2(y, v, df);
  // Q-profile: the τ² at which Q equals the χ²_{k−1} quantiles (1 ± level)/2
  r.tau2_low = solve_tau2(y, v, chi2_quantile((1 + level) / 2, df));
  r.tau2_high = solve_tau2(y, v, chi2_quantile((1 - level) / 2, df));
  double sw = 0, swy = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    sw += 1 / (v[i] + r.tau2);
    swy += y[i] / (v[i] + r.tau2);
  }
  r.mean = swy / sw;
  double hk = 0;  // Hartung–Knapp: the weighted residual variance about the pooled mean
  for (size_t i = 0; i < y.size(); ++i) {
    hk += (y[i] - r.mean) * (y[i] - r.mean) / (v[i] + r.tau2) / sw;
  }
  r.hk_se = std::sqrt(hk / df);
  r.se = std::sqrt(std::max(hk / df, 1 / sw));  // the factor Σw(y − μ)²/(k − 1) floored at 1
  const double t = t_quantile(level, df);
  r.ci_low = r.mean - t * r.se;
  r.ci_high = r.mean + t * r.se;
  r.p = r.se > 0 ? 2 * boost::math::cdf(boost::math::complement(boost::math::students_t(df), std::abs(r.mean) / r.se))
               : k_nan;
  r.pi_low = r.pi_high = r.hts_pi_low = r.hts_pi_high = k_nan;
  if (r.k >= 3) {
    const double half = t_quantile(level, df - 1) * std::sqrt(r.tau2 + r.hk_se * r.hk_se);
    r.hts_pi_low = r.mean - half;
    r.hts_pi_high = r.mean + half;
    std::tie(r.pi_low, r.pi_high) = predictive_interval(y, se, level);
    // never inside the pooled interval: a new setting's effect varies by τ² + se², never less than se²
    // (the draws' quantiles can fall a hair inside it where every τ² drawn is 0)
    r.pi_low = std::min(r.pi_low, r.ci_low);
    r.pi_high = std::max(r.pi_high, r.ci_high);
  }
  return r;
}

std::pair<double, double> welch_anova(const std::vector<double>& y, const std::vector<double>& se,
                                      const std::vector<int64_t>& seeds) {
  const double k = static_cast<double>(y.size());
  double sw = 0, swy = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    sw += 1 / (se[i] * se[i]);
    swy += y[i] / (se[i] * se[i]);
  }
  const double m = swy / sw;
  double a = 0, lambda = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double w = 1 / (se[i] * se[i]);
    a += w * (y[i] - m) * (y[i] - m);
    lambda += (1 - w / sw) * (1 - w / sw) / (static_cast<double>(seeds[i]) - 1);
  }
  if (!(k > 1) || !(lambda > 0) || !std::isfinite(a)) {
    return {k_nan, k_nan};
  }
  const double f = a / (k - 1) / (1 + 2 * (k - 2) / (k * k - 1) * lambda);
  const double df2 = (k * k - 1) / (3 * lambda);
  return {f, boost::math::cdf(boost::math::complement(boost::math::fisher_f(k - 1, df2), f))};
}

std::vector<double> pooled_noise_se(const std::vector<double>& se, const std::vector<int64_t>& seeds) {
  double ss = 0, df = 0;
  for (size_t i = 0; i < se.size(); ++i) {
    const double n = static_cast<double>(seeds[i]);
    ss += (n - 1) * n * se[i] * se[i];
    df += n - 1;
  }
  std::vector<double> out;
  for (size_t i = 0; i < se.size(); ++i) {
    out.push_back(std::sqrt(ss / df / static_cast<double>(seeds[i])));
  }
  return out;
}

}  // namespace sweep
