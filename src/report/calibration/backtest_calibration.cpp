#include "report/calibration/backtest_calibration.h"

#include <cmath>
#include <functional>
#include <random>

#include "report/ladder/backtest.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

// A scenario: intervention i's true improvement at rung k (u = k, decades above the smallest).
struct Scenario {
  std::string name;
  std::function<double(double u, double level, double slope, double sign)> truth;
  bool noisier_top = false;  // the top rung's seeds spread top_noise × σ
};

}  // namespace

std::vector<BacktestCalibrationRow> calibrate_backtest(const BacktestCalibrationSetup& s) {
  if (!(s.sigma > 0) || s.rungs < 3 || s.seeds < 2 || s.interventions < 1 || s.replicates < 1 ||
      !std::isfinite(s.bend) || !(s.top_noise >= 1)) {
    throw Error("calibrate --backtest: needs σ > 0, 3 or more rungs, 2 or more seeds, an intervention, a replicate "
                "and a top rung at least as noisy as the others",
                Exit::bad_input);
  }
  const double top = static_cast<double>(s.rungs - 1);
  const auto straight = [](double u, double level, double slope, double) { return level + slope * u; };
  const auto bent = [&](double u, double level, double slope, double sign) {
    return level + slope * u + sign * s.bend * u * u / 2;
  };
  const std::string noisier = ", top rung σ ×" + format_number("%g", s.top_noise);
  const std::vector<Scenario> scenarios{
      {"straight", straight},
      {"bent", bent},
      {"crosses 0 between the two largest rungs",
       [=](double u, double, double slope, double) {
         const double size = 0.005 + std::abs(slope);  // 0.005–0.015 per decade: no two alike, no tie by construction
         return size * (top - 0.5 - u);  // the sign flips halfway between the rungs top − 1 and top
       }},
      {"straight" + noisier, straight, true},
      {"bent" + noisier, bent, true},
  };
  std::vector<BacktestCalibrationRow> rows;
  int64_t scenario = -1;
  for (const auto& sc : scenarios) {
    ++scenario;
    std::mt19937_64 rng(s.seed);  // the same ladders' noise in every scenario
    std::normal_distribution<double> noise(0, s.sigma);
    std::uniform_real_distribution<double> level(-0.02, 0.02), slope(-0.01, 0.01), coin(0, 1);
    std::vector<BacktestRow> all;
    int64_t flagged = 0, judged = 0;
    for (int64_t r = 0; r < s.replicates; ++r) {
      if (s.progress) {  // the studies done before this one
        s.progress(scenario * s.replicates + r, static_cast<int64_t>(scenarios.size()) * s.replicates);
      }
      LadderSummary l;
      for (int64_t k = 0; k < s.rungs; ++k) {
        l.rungs.push_back({"r" + std::to_string(k), 1e6, 1e6, std::pow(10.0, 12.0 + static_cast<double>(k))});
      }
      for (int64_t i = 0; i < s.interventions; ++i) {
        const double a = level(rng), b = slope(rng), sign = coin(rng) < 0.5 ? -1.0 : 1.0;
        Trend t;
        t.intervention = "i" + std::to_string(i + 1);
        for (int64_t k = 0; k < s.rungs; ++k) {
          std::vector<double> seeds;
          const double spread = sc.noisier_top && k == s.rungs - 1 ? s.top_noise : 1;
          for (int64_t j = 0; j < s.seeds; ++j) {
            seeds.push_back(sc.truth(static_cast<double>(k), a, b, sign) + spread * noise(rng));
          }
          t.paired.push_back(seeds);
        }
        l.trends.push_back(t);
      }
      const Backtest b = backtest_ladder(l, "synthetic");
      for (const auto& t : l.trends) {
        bool miss = false;
        for (const auto& row : b.rows) {
          for (const auto& p : row.predictions) {
            miss |= p.intervention == t.intervention && std::isfinite(p.pi_low) &&
                    !(p.pi_low <= p.measured && p.measured <= p.pi_high);
          }
        }
        flagged += miss;
        ++judged;
      }
      all.insert(all.end(), b.rows.begin(), b.rows.end());
    }
    const BacktestPooled p = pool_backtest(all);
    BacktestCalibrationRow row;
    row.scenario = sc.name;
    row.predictions = p.predictions;
    row.given = static_cast<double>(p.intervals) / static_cast<double>(std::max<int64_t>(1, p.predictions));
    row.coverage = p.coverage;
    row.decided = static_cast<double>(p.decided) / static_cast<double>(std::max<int64_t>(1, p.intervals));
    row.half_width = p.half_width;
    row.flagged = static_cast<double>(flagged) / static_cast<double>(std::max<int64_t>(1, judged));
    row.trend_sign = p.trend_sign;
    row.single_sign = p.single_sign;
    row.trend_accuracy = p.trend_accuracy;
    row.single_accuracy = p.single_accuracy;
    rows.push_back(row);
  }
  return rows;
}

std::string backtest_calibration_header(const BacktestCalibrationSetup& s) {
  return "Synthetic ladders: " + plural(s.rungs, "rung") + " a decade of training FLOPs apart, " + plural(s.interventions, "intervention") +
      " each, " + plural(s.seeds, "seed") + " per rung, a seed's paired improvement σ = " + format_number("%g", s.sigma) +
      " around the truth; straight: a level in ±0.02 and a slope in ±0.01 per decade drawn per intervention; bent: "
      "the same plus ±" + format_number("%g", s.bend) + "·u²/2 (u: decades above the smallest rung); crossing: a line "
      "that is 0 halfway between the two largest rungs, its slope 0.005 + |a drawn slope| per decade (downward); noisier top: "
      "the top rung's seeds spread " + format_number("%g", s.top_noise) + "σ. Every rung with 2 or more below it hidden in "
      "turn (an interval needs 3 below: a line through 2 cannot show a bend); " +
      std::to_string(s.replicates) + " ladders per row, seed " + std::to_string(s.seed) + ".\n\n";
}

std::string backtest_calibration_markdown(const BacktestCalibrationSetup& s, const std::vector<BacktestCalibrationRow>& rows) {
  std::string out = backtest_calibration_header(s);
  out += "| trend | predictions | with a 95% PI | PI covers | PI excludes 0 | PI half-width | interventions flagged "
         "(a hidden rung outside its PI) | sign: trend | sign: single | accuracy: trend | accuracy: single |\n"
         "|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const auto& r : rows) {
    const double n = std::max(1.0, std::round(r.given * static_cast<double>(r.predictions)));  // the intervals
    const double half = 1.96 * std::sqrt(std::max(r.coverage * (1 - r.coverage), 1.0 / n) / n);
    out += "| " + r.scenario + " | " + std::to_string(r.predictions) + " | " + format_number("%.3f", r.given) + " | " +
           format_number("%.3f", r.coverage) + " ± " + format_number("%.3f", half) + " | " + format_number("%.3f", r.decided) +
           " | " + format_number("%.4f", r.half_width) + " | " + format_number("%.3f", r.flagged) + " | " + format_number("%.3f", r.trend_sign) +
           " | " + format_number("%.3f", r.single_sign) + " | " + format_number("%.3f", r.trend_accuracy) + " | " +
           format_number("%.3f", r.single_accuracy) + " |\n";
  }
  return out;
}

}  // namespace sweep
