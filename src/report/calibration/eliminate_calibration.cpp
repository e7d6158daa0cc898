#include "report/calibration/eliminate_calibration.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "report/stats.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

enum class Scenario { mixed, mixed_noisier_worse, at_minus_delta, crossing_winners };

const char* scenario_name(Scenario s) {
  switch (s) {
    case Scenario::mixed: return "mixed: each arm worse (3 in 8), near 0 (2 in 8) or better (3 in 8)";
    case Scenario::mixed_noisier_worse: return "mixed, the worse arms' seeds 2× noisier";
    case Scenario::at_minus_delta: return "every arm's final effect at −δ";
    case Scenario::crossing_winners: return "every arm a winner whose curve crosses 0";
  }
  return "";
}

// An arm's true curve: μ · h(f), h(1) = 1.
struct Arm {
  double mu = 0, sigma = 1;
  enum class Shape { grows, fades, crosses } shape = Shape::grows;
  double p = 1, r = 1, q = 1, dip_at = 0.1, cross = 0.2, dip = 1;

  double at(double f) const {
    switch (shape) {
      case Shape::grows: return mu * std::pow(f, p);
      case Shape::fades: return mu * std::min(f / 0.05, 1.0) * (1 + (r - 1) * std::pow(1 - f, q));
      case Shape::crosses: {  // 0 at f = 0, −dip·μ at dip_at, 0 at cross, μ at the end: linear between
        const double h = f <= dip_at  ? -dip * f / dip_at
                         : f <= cross ? -dip * (cross - f) / (cross - dip_at)
                                      : (f - cross) / (1 - cross);
        return mu * h;
      }
    }
    return 0;
  }
};

Arm draw_arm(Scenario s, double crossing, double noise, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  const auto between = [&](double a, double b) { return a + (b - a) * u(rng); };
  Arm a;
  a.sigma = noise;
  if (s == Scenario::at_minus_delta) {
    a.mu = -1;
  } else if (s == Scenario::crossing_winners) {
    a.mu = between(2, 20);
  } else {
    const double kind = u(rng);
    a.mu = kind < 3.0 / 8 ? between(-20, -2) : kind < 5.0 / 8 ? between(-1, 1) : between(2, 20);
    if (s == Scenario::mixed_noisier_worse && a.mu < -1) {
      a.sigma = 2 * noise;
    }
  }
  if (s == Scenario::crossing_winners || u(rng) < crossing) {
    a.shape = Arm::Shape::crosses;
    a.dip_at = between(0.05, 0.25);
    a.cross = between(a.dip_at + 0.1, 0.7);
    a.dip = between(0.5, 1.5);
  } else if (u(rng) < 0.5) {
    a.shape = Arm::Shape::grows;
    a.p = between(0.3, 2.5);
  } else {
    a.shape = Arm::Shape::fades;
    a.r = between(1, 5);
    a.q = between(0.5, 2);
  }
  return a;
}

// The lower Cholesky factor of the curve noise's correlation at `f`: exp(−|f − f′| / 0.3).
std::vector<std::vector<double>> noise_factor(const std::vector<double>& f) {
  const size_t n = f.size();
  std::vector<std::vector<double>> l(n, std::vector<double>(n, 0));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j <= i; ++j) {
      double sum = std::exp(-std::abs(f[i] - f[j]) / 0.3);
      for (size_t k = 0; k < j; ++k) {
        sum -= l[i][k] * l[j][k];
      }
      l[i][j] = i == j ? std::sqrt(sum) : sum / l[j][j];
    }
  }
  return l;
}

double share(int64_t part, int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : k_nan;
}

}  // namespace

std::vector<EliminationCalibrationRow> calibrate_elimination(const EliminationCalibrationSetup& s) {
  EliminationRule rule = s.rule;
  rule.delta = 1;
  if (const std::string problem = rule_problem(rule); !problem.empty()) {
    throw Error("calibrate --eliminate: " + problem, Exit::bad_input);
  }
  if (s.seeds < 2 || s.arms < 1 || s.replicates < 1) {
    throw Error("calibrate --eliminate: needs 2 or more seeds, an arm and a replicate", Exit::bad_input);
  }
  // the points read: every look, a span before each, and the end
  std::vector<double> f = rule.looks;
  for (const double look : rule.looks) {
    f.push_back(look - rule.span);
  }
  f.push_back(1);
  std::sort(f.begin(), f.end());
  f.erase(std::unique(f.begin(), f.end()), f.end());
  const auto index = [&](double x) { return static_cast<size_t>(std::find(f.begin(), f.end(), x) - f.begin()); };
  const std::vector<std::vector<double>> chol = noise_factor(f);
  const std::vector<Scenario> scenarios{Scenario::mixed, Scenario::mixed_noisier_worse, Scenario::at_minus_delta,
                                        Scenario::crossing_winners};
  const int64_t total = static_cast<int64_t>(scenarios.size() * s.noises.size()) * s.replicates;
  int64_t done = 0;
  std::vector<EliminationCalibrationRow> rows;
  for (const Scenario scenario : scenarios) {
    for (const double noise : s.noises) {
      std::mt19937_64 rng(s.seed);
      std::normal_distribution<double> z(0, 1);
      int64_t false_studies = 0, at_least_minus_delta = 0, false_arms = 0, crossing = 0, crossing_stopped = 0;
      int64_t worse = 0, worse_stopped = 0;
      double saved_worse = 0, saved = 0, spent = 0;
      for (int64_t r = 0; r < s.replicates; ++r, ++done) {
        if (s.progress) {
          s.progress(done, total);
        }
        std::vector<Arm> arms;
        std::vector<ArmLooks> looks;
        for (int64_t a = 0; a < s.arms; ++a) {
          arms.push_back(draw_arm(scenario, s.crossing, noise, rng));
          std::vector<std::vector<double>> values(f.size());
          for (int64_t seed = 0; seed < s.seeds; ++seed) {
            std::vector<double> e(f.size());
            for (double& x : e) {
              x = z(rng);
            }
            for (size_t i = 0; i < f.size(); ++i) {
              double correlated = 0;
              for (size_t k = 0; k <= i; ++k) {
                correlated += chol[i][k] * e[k];
              }
              values[i].push_back(arms.back().at(f[i]) + arms.back().sigma * (2 - f[i]) * correlated);
            }
          }
          const auto look_at = [&](double x) {
            const Summary m = summarize(values[index(x)]);
            return std::optional<LookDelta>(
                LookDelta{x, m.n, m.mean, m.sd / std::sqrt(static_cast<double>(m.n))});
          };
          ArmLooks l;
          for (size_t j = 0; j < rule.looks.size(); ++j) {
            l.at.push_back(look_at(rule.looks[j]));
            l.before.push_back(look_at(rule.looks[j] - rule.span));
          }
          looks.push_back(std::move(l));
        }
        const std::vector<Elimination> out = eliminate_study(looks, rule);
        bool any_false = false;
        spent += static_cast<double>((s.arms + 1) * s.seeds);
        for (size_t a = 0; a < arms.size(); ++a) {
          const double kept_tokens = out[a].stopped ? out[a].fraction : 1;
          saved += (1 - kept_tokens) * static_cast<double>(s.seeds);
          if (arms[a].mu >= -1) {
            ++at_least_minus_delta;
            false_arms += out[a].stopped;
            any_false |= out[a].stopped;
          } else {
            ++worse;
            worse_stopped += out[a].stopped;
            saved_worse += 1 - kept_tokens;
          }
          if (arms[a].shape == Arm::Shape::crosses && arms[a].mu >= -1) {
            ++crossing;
            crossing_stopped += out[a].stopped;
          }
        }
        false_studies += any_false;
      }
      EliminationCalibrationRow row;
      row.scenario = scenario_name(scenario);
      row.noise = noise;
      row.false_elimination = share(false_studies, s.replicates);
      row.arms_false = share(false_arms, at_least_minus_delta);
      row.crossing_stopped = share(crossing_stopped, crossing);
      row.worse_stopped = share(worse_stopped, worse);
      row.saved_worse = worse > 0 ? saved_worse / static_cast<double>(worse) : k_nan;
      row.saved_total = saved / spent;
      rows.push_back(row);
    }
  }
  return rows;
}

std::string elimination_calibration_header(const EliminationCalibrationSetup& s) {
  std::string looks, kept;
  for (size_t j = 0; j < s.rule.looks.size(); ++j) {
    looks += (j ? ", " : "") + format_number("%g", s.rule.looks[j]);
  }
  for (size_t j = 0; j < s.rule.kept.size(); ++j) {
    kept += (j ? ", " : "") + format_number("%g", s.rule.kept[j]);
  }
  return "Simulated studies: " + plural(s.arms, "arm") + " and a baseline, " + plural(s.seeds, "seed") +
         " each; looks at " + looks + " of training, kept shares " + kept + ", α " + format_number("%g", s.rule.alpha) +
         " per study; " + format_number("%g", 100 * s.crossing) +
         "% of the arms' curves cross 0 (all in the last rows); each arm of the mixed rows drawn at random. "
         "Effects and a seed's noise σ (its paired Δ's "
         "standard deviation at the end; twice that early) in units of δ. A false elimination: an arm stopped "
         "whose true final effect is ≥ −δ. " +
         std::to_string(s.replicates) + " studies per row, seed " + std::to_string(s.seed) + ".\n\n";
}

std::string elimination_calibration_markdown(const EliminationCalibrationSetup& s,
                                             const std::vector<EliminationCalibrationRow>& rows) {
  std::string out = elimination_calibration_header(s) +
                    "| studies | σ | false elimination (per study) | arms ≥ −δ stopped | "
                    "of them, crossing 0, stopped | "
                    "arms < −δ stopped | their tokens saved | the study's tokens saved |\n"
                    "|:--|--:|--:|--:|--:|--:|--:|--:|\n";
  const auto cell = [](double x) { return std::isfinite(x) ? format_number("%.3f", x) : std::string("-"); };
  for (const auto& r : rows) {
    out += "| " + r.scenario + " | " + format_number("%g", r.noise) + " | " + cell(r.false_elimination) + " | " +
           cell(r.arms_false) + " | " + cell(r.crossing_stopped) + " | " + cell(r.worse_stopped) + " | " +
           cell(r.saved_worse) + " | " + cell(r.saved_total) + " |\n";
  }
  return out;
}

}  // namespace sweep
