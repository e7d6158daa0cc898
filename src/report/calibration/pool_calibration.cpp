#include "report/calibration/pool_calibration.h"

#include <cmath>
#include <iterator>
#include <random>

#include "report/pool/pool.h"
#include "report/stats.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

// The settings' precisions, and the two settings' copies a pool must count once: every setting the
// first one again (a key that does not change training), or the last one a copy of the first.
constexpr const char* k_pool_precisions[] = {"equal", "½× to 2×", "one 10×", "identical settings",
                                             "one setting duplicated"};

// DerSimonian–Laird's τ² (truncated at 0) and its z interval: whether it excludes 0.
bool dl_excludes_zero(const std::vector<double>& y, const std::vector<double>& se) {
  double sw = 0, sw2 = 0, swy = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double w = 1 / (se[i] * se[i]);
    sw += w;
    sw2 += w * w;
    swy += w * y[i];
  }
  const double m = swy / sw;
  double q = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    q += (y[i] - m) * (y[i] - m) / (se[i] * se[i]);
  }
  const double tau2 = std::max(0.0, (q - static_cast<double>(y.size() - 1)) / (sw - sw2 / sw));
  double rw = 0, rwy = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    rw += 1 / (se[i] * se[i] + tau2);
    rwy += y[i] / (se[i] * se[i] + tau2);
  }
  return std::abs(rwy / rw) > 1.959963984540054 / std::sqrt(rw);
}

}  // namespace

std::vector<PoolCalibrationRow> calibrate_pool(const PoolCalibrationSetup& s) {
  if (s.seeds < 2 || s.replicates < 1 || s.ks.empty() || s.taus.empty()) {
    throw Error("calibrate --pool: needs 2 or more seeds per setting and a replicate", Exit::bad_input);
  }
  for (const int64_t k : s.ks) {
    if (k < 2 || k > 100) {
      throw Error("calibrate --pool: settings from 2 to 100, not " + std::to_string(k), Exit::bad_input);
    }
  }
  std::vector<PoolCalibrationRow> rows;
  const double unit = 1 / std::sqrt(static_cast<double>(s.seeds));  // σ = 1: one setting's standard error
  const int64_t total = static_cast<int64_t>(s.ks.size() * s.taus.size() * std::size(k_pool_precisions)) * s.replicates;
  int64_t done = 0;
  for (const int precision : {0, 1, 2, 3, 4}) {
    for (const int64_t k : s.ks) {
      for (const double tau : s.taus) {
        std::mt19937_64 rng(s.seed);
        std::normal_distribution<double> z(0, 1);
        PoolCalibrationRow row;
        row.k = k;
        row.tau = tau;
        int64_t fp = 0, dl = 0, holds = 0, varies = 0, covered = 0, hts_covered = 0, intervals = 0;
        double widths = 0;
        for (int64_t r = 0; r < s.replicates; ++r, ++done) {
          if (s.progress) {
            s.progress(done, total);
          }
          for (const double mu : {0.0, s.effect}) {
            Measured study;
            std::vector<double> y, se;
            for (int64_t i = 0; i < k; ++i) {
              PoolSetting setting{"s" + std::to_string(i), "x", "x", 0, 0, s.seeds};
              const bool copy = (precision == 3 && i > 0) || (precision == 4 && i == k - 1);
              if (copy) {  // the first setting's measurement again, in a setting of its own
                setting = study.measured.front();
                setting.setting = "s" + std::to_string(i);
              } else {
                const double u = k > 1 ? -1 + 2 * static_cast<double>(i) / static_cast<double>(k - 1) : 0;
                const double sigma = precision == 1 ? std::pow(2.0, u) : precision == 2 && i == k - 1 ? 10.0 : 1.0;
                const double theta = (mu + tau * z(rng)) * unit;
                std::vector<double> d;
                for (int64_t j = 0; j < s.seeds; ++j) {
                  d.push_back(theta + sigma * z(rng));
                  setting.values[{j, j}] = d.back();  // the paired differences, against a baseline of 0
                  setting.baseline_values[{j, j}] = 0;
                }
                const Summary sm = summarize(d);
                setting.effect = sm.mean;
                setting.se = sm.sd / std::sqrt(static_cast<double>(s.seeds));
              }
              y.push_back(setting.effect);
              se.push_back(setting.se);
              study.settings.push_back(setting.setting);
              study.measured.push_back(std::move(setting));
            }
            if (mu == 0) {
              dl += dl_excludes_zero(y, se);  // on every setting given, copies as they come
            }
            const Pool pool = pool_measured({study}, Metric{}, 0.05);
            if (pool.pooled.empty()) {
              continue;  // one setting: nothing pooled, no interval, "undecided"
            }
            const PooledIntervention& p = pool.pooled.front();
            if (mu == 0) {
              fp += p.meta.ci_low > 0 || p.meta.ci_high < 0;
              holds += p.verdict == PoolVerdict::holds;
              varies += p.verdict == PoolVerdict::varies;
            } else if (std::isfinite(p.meta.pi_low)) {
              const double next = (mu + tau * z(rng)) * unit;
              covered += p.meta.pi_low <= next && next <= p.meta.pi_high;
              hts_covered += p.meta.hts_pi_low <= next && next <= p.meta.hts_pi_high;
              ++intervals;
              widths += (p.meta.pi_high - p.meta.pi_low) / 2 / unit;
            }
          }
        }
        const double n = static_cast<double>(s.replicates);
        row.false_positive = static_cast<double>(fp) / n;
        row.dl_false_positive = static_cast<double>(dl) / n;
        row.false_holds = static_cast<double>(holds) / n;
        row.varies = static_cast<double>(varies) / n;
        row.precision = k_pool_precisions[precision];
        row.pi_coverage = intervals > 0 ? static_cast<double>(covered) / static_cast<double>(intervals) : k_nan;
        row.hts_pi_coverage =
            intervals > 0 ? static_cast<double>(hts_covered) / static_cast<double>(intervals) : k_nan;
        row.pi_half_width = intervals > 0 ? widths / static_cast<double>(intervals) : k_nan;
        rows.push_back(row);
      }
    }
  }
  return rows;
}

std::string pool_calibration_header(const PoolCalibrationSetup& s) {
  return "Simulated meta-studies: k settings, each measuring an intervention over " + plural(s.seeds, "seed") +
         " (its standard error estimated from them); τ and the effect in units of one setting's standard "
         "error at equal precision; precision: equal, the settings' seed noise from ½× to 2×, one setting "
         "10× noisier, or at equal precision the first setting's runs measured again in every other (identical "
         "settings: a key that does not change training) or in the last (one setting duplicated) — the pool "
         "counts a measurement once; DerSimonian–Laird's column takes the copies as they come. False "
         "positives, \"holds\" and \"varies\" at a true effect of 0 (\"varies\" at τ > 0: "
         "how often the spread is found); the prediction interval's coverage of a new setting's true effect "
         "at " + format_number("%g", s.effect) + ". " + std::to_string(s.replicates) + " meta-studies per row, seed " +
         std::to_string(s.seed) + ".\n\n";
}

std::string pool_calibration_markdown(const PoolCalibrationSetup& s, const std::vector<PoolCalibrationRow>& rows) {
  std::string out = pool_calibration_header(s) +
                    "| k | τ | precision | pooled ≠ 0 (Hartung–Knapp) | pooled ≠ 0 (DerSimonian–Laird z) | "
                    "\"holds\" at 0 | \"varies\" at 0 | "
                    "95% PI covers a new setting | PI half-width | Higgins–Thompson–Spiegelhalter's PI covers |\n"
                    "|--:|--:|:--|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const auto& r : rows) {
    out += "| " + std::to_string(r.k) + " | " + format_number("%g", r.tau) + " | " + r.precision +
           " | " + format_number("%.3f", r.false_positive) + " | " + format_number("%.3f", r.dl_false_positive) +
           " | " +
           format_number("%.3f", r.false_holds) + " | " + format_number("%.3f", r.varies) + " | " +
           format_number("%.3f", r.pi_coverage) + " | " +
           format_number("%.2f", r.pi_half_width) + " | " + format_number("%.3f", r.hts_pi_coverage) + " |\n";
  }
  return out;
}

}  // namespace sweep
