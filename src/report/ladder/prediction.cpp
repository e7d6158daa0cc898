#include "report/ladder/prediction.h"

#include <array>
#include <cmath>

#include "report/stats.h"

namespace sweep {

namespace {

// The weights a_r with ĉ = Σ a_r·m_r: the curvature of the least-squares quadratic
// m ≈ b0 + b1·u + c·u²/2 through the rung means m_r at u_r = x_r − mean x (3 or more rungs).
std::vector<double> curvature_weights(const std::vector<double>& xs) {
  const double centre = summarize(xs).mean;
  std::vector<std::array<double, 3>> rows;
  for (const double x : xs) {
    const double u = x - centre;
    rows.push_back({1, u, u * u / 2});
  }
  std::array<std::array<double, 3>, 3> m{};  // XᵀX
  for (const auto& r : rows) {
    for (size_t i = 0; i < 3; ++i) {
      for (size_t j = 0; j < 3; ++j) {
        m[i][j] += r[i] * r[j];
      }
    }
  }
  // the third row of (XᵀX)⁻¹, by cofactors
  const double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                     m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                     m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  if (!(std::abs(det) > 1e-12)) {
    return {};
  }
  const std::array<double, 3> inv{(m[1][0] * m[2][1] - m[1][1] * m[2][0]) / det,
                                  -(m[0][0] * m[2][1] - m[0][1] * m[2][0]) / det,
                                  (m[0][0] * m[1][1] - m[0][1] * m[1][0]) / det};
  std::vector<double> a;
  for (const auto& r : rows) {
    a.push_back(inv[0] * r[0] + inv[1] * r[1] + inv[2] * r[2]);
  }
  return a;
}

// κ²_U: the largest κ² with Σ ĉ_i²/(κ² + v_i) ≥ the χ²_k quantile k_curvature_bound — the upper
// 75% confidence bound of a common curvature variance, given each curvature's own sampling variance v_i.
double curvature_bound(const std::vector<double>& c, const std::vector<double>& v) {
  const double q = chi2_quantile(k_curvature_bound, static_cast<double>(c.size()));
  const auto f = [&](double kappa2) {
    double sum = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      sum += c[i] * c[i] / (kappa2 + v[i]);
    }
    return sum;
  };
  if (f(0) <= q) {
    return 0;
  }
  double sum_c2 = 0;
  for (const double ci : c) {
    sum_c2 += ci * ci;
  }
  double lo = 0, hi = 2 * sum_c2 / q;  // f(hi) ≤ Σ ĉ²/hi = q/2
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (f(mid) > q ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace

std::pair<double, double> rung_seed_var(const std::vector<std::vector<std::vector<double>>>& paired, size_t r) {
  double ss = 0, df = 0;
  for (const auto& d : paired) {
    if (d.size() > r && d[r].size() >= 2) {
      const double m = summarize(d[r]).mean;
      for (const double v : d[r]) {
        ss += (v - m) * (v - m);
      }
      df += static_cast<double>(d[r].size()) - 1;
    }
  }
  return {df > 0 ? ss / df : k_nan, df};
}

LadderNoise ladder_noise(const std::vector<double>& x, const std::vector<std::vector<std::vector<double>>>& paired,
                         size_t rungs) {
  LadderNoise out;
  out.seed_var.assign(rungs, k_nan);
  for (size_t r = 0; r < rungs; ++r) {
    const auto [var, df] = rung_seed_var(paired, r);
    out.seed_var[r] = var;
    out.df += df;
  }
  std::vector<double> c, v;
  for (const auto& d : paired) {
    std::vector<double> xs, means, vars;
    for (size_t r = 0; r < rungs && r < d.size(); ++r) {
      if (!d[r].empty() && std::isfinite(x[r]) && std::isfinite(out.seed_var[r])) {
        xs.push_back(x[r]);
        means.push_back(summarize(d[r]).mean);
        vars.push_back(out.seed_var[r] / static_cast<double>(d[r].size()));
      }
    }
    const std::vector<double> a = xs.size() >= 3 ? curvature_weights(xs) : std::vector<double>{};
    if (a.empty()) {
      continue;
    }
    double ci = 0, vi = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      ci += a[k] * means[k];
      vi += a[k] * a[k] * vars[k];
    }
    c.push_back(ci);
    v.push_back(vi);
  }
  out.curvatures = static_cast<int64_t>(c.size());
  out.curvature_var = c.empty() ? k_nan : curvature_bound(c, v);
  return out;
}

Prediction predict_at(const std::vector<double>& x, const std::vector<std::vector<double>>& d, double x_star,
                      const LadderNoise& noise, double extra_var, double level) {
  Prediction p{k_nan, k_nan, k_nan};
  double n = 0, sum_x = 0;
  size_t rungs = 0;
  for (size_t r = 0; r < d.size() && r < x.size(); ++r) {
    if (!d[r].empty() && std::isfinite(x[r])) {
      ++rungs;
      n += static_cast<double>(d[r].size());
      sum_x += static_cast<double>(d[r].size()) * x[r];
    }
  }
  if (rungs < 2) {
    return p;
  }
  const double x_bar = sum_x / n;
  double sxx = 0;
  for (size_t r = 0; r < d.size() && r < x.size(); ++r) {
    if (!d[r].empty() && std::isfinite(x[r])) {
      sxx += static_cast<double>(d[r].size()) * (x[r] - x_bar) * (x[r] - x_bar);
    }
  }
  if (!(sxx > 0)) {
    return p;
  }
  // the line at x_star as weights on the rung means: Σ W_r = 1, Σ W_r·x_r = x_star
  const auto q = [&](double at) { return (at - x_bar) * (at - x_bar) / 2; };
  double at = 0, var_line = 0, bend = q(x_star);
  bool known = true;
  for (size_t r = 0; r < d.size() && r < x.size(); ++r) {
    if (d[r].empty() || !std::isfinite(x[r])) {
      continue;
    }
    const double nr = static_cast<double>(d[r].size());
    const double w = nr * (1 / n + (x[r] - x_bar) * (x_star - x_bar) / sxx);
    at += w * summarize(d[r]).mean;
    known = known && r < noise.seed_var.size() && std::isfinite(noise.seed_var[r]);
    var_line += known ? w * w * noise.seed_var[r] / nr : 0;
    bend -= w * q(x[r]);
  }
  p.at = at;
  if (!known || !(noise.df > 0) || !std::isfinite(noise.curvature_var) || !std::isfinite(extra_var)) {
    return p;
  }
  const double half = t_quantile(level, noise.df) * std::sqrt(var_line + bend * bend * noise.curvature_var + extra_var);
  p.low = at - half;
  p.high = at + half;
  return p;
}

}  // namespace sweep
