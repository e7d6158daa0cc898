#include "report/pool/meta.h"

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/fisher_f.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>

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

}  // namespace

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
  r.se = std::sqrt(hk / df);
  const double t = t_quantile(level, df);
  r.ci_low = r.mean - t * r.se;
  r.ci_high = r.mean + t * r.se;
  r.p = r.se > 0 ? 2 * boost::math::cdf(boost::math::complement(boost::math::students_t(df), std::abs(r.mean) / r.se))
               : k_nan;
  r.pi_low = r.pi_high = k_nan;
  if (r.k >= 3) {
    const double half = t_quantile(level, df - 1) * std::sqrt(r.tau2 + r.se * r.se);
    r.pi_low = r.mean - half;
    r.pi_high = r.mean + half;
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
