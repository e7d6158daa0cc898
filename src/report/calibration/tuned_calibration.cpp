#include "report/calibration/tuned_calibration.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "report/analyze.h"
#include "report/tuned/tuned.h"
#include "report/until_decided.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

struct Arm {
  double depth = 3.0, centre = 0;
  double steep_above = 1;  // the bowl's curvature above its centre ÷ below it
};

// The value 2^t times the base value 1e-3, and as a variant names it.
double value_of(double t) { return 1e-3 * std::exp2(t); }
std::string value_text(double t) { return format_number("%.6g", value_of(t)); }

// One study's noise, enough for the most seeds any design gives it: z per seed, w per arm and
// seed, e per arm, value and seed.
struct Draws {
  std::vector<double> shared;
  std::vector<std::vector<double>> arm_seed;
  std::vector<std::vector<std::vector<double>>> run;
};

Draws draw(const TunedCalibrationSetup& s, size_t arms, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  const int64_t most = std::max(s.seeds, s.max_seeds);
  const auto seeds = [&] {
    std::vector<double> x;
    for (int64_t k = 0; k < most; ++k) {
      x.push_back(normal(rng));
    }
    return x;
  };
  Draws d;
  d.shared = seeds();
  for (size_t a = 0; a < arms; ++a) {
    d.arm_seed.push_back(seeds());
    d.run.emplace_back();
    for (size_t t = 0; t < s.grid.size(); ++t) {
      d.run.back().push_back(seeds());
    }
  }
  return d;
}

// One study: the baseline (arm 0) and the interventions, every arm at every grid value with its
// n[arm] seeds.
ReportInput tuned_study(const TunedCalibrationSetup& s, const std::vector<Arm>& arms, const Draws& d,
                        const std::vector<int64_t>& n, const SeedDesign& design) {
  ReportInput in;
  in.sweep = "tuned-calibration";
  in.baseline = "baseline";
  in.metric = Metric{Metric::Kind::test_loss};
  in.alpha = s.alpha;
  in.design = design;
  in.min_effect_source = MinEffectSource::simulation;
  in.power = false;
  in.axes = {{AxisKind::tune, {"train.lr"}}};
  const double own = std::sqrt(std::max(0.0, 1 - s.rho * s.rho));
  for (size_t a = 0; a < arms.size(); ++a) {
    const std::string name = a == 0 ? "baseline" : "i" + std::to_string(a);
    for (size_t g = 0; g < s.grid.size(); ++g) {
      const double t = s.grid[g];
      VariantRuns v;
      v.intervention = name;
      v.name = t == 0 ? name : (a == 0 ? "" : name + "+") + "lr=" + value_text(t);
      v.axes = {{"train.lr", value_text(t)}};
      for (int64_t k = 0; k < n[a]; ++k) {
        ReportRun r;
        r.run_id = v.name + "-" + std::to_string(k);
        r.status = RunState::done;
        r.init_seed = r.data_seed = k + 1;
        const size_t i = static_cast<size_t>(k);
        const double rise = s.curvature * std::pow(t - arms[a].centre, 2) * (t > arms[a].centre ? arms[a].steep_above : 1);
        r.value = arms[a].depth + rise +
                  s.sigma * (s.rho * d.shared[i] + own * d.arm_seed[a][i]) + s.run_sigma * d.run[a][g][i];
        v.runs.push_back(r);
      }
      in.variants.push_back(std::move(v));
    }
  }
  return in;
}

// The arm a variant of tuned_study belongs to: "baseline" and "lr=…" are arm 0, "i3" and "i3+lr=…" arm 3.
size_t arm_of(const std::string& variant) {
  return variant.rfind('i', 0) == 0 ? static_cast<size_t>(std::stoll(variant.substr(1))) : 0;
}

struct Scenario {
  std::string name;
  double shift = 0;   // arms' centre − the baseline's, in doublings
  double deeper = 0;  // arms' depth below the baseline's, in multiples of δ
  bool random_centre = true;  // the baseline's centre drawn in [0, 1] per study; else at 1 (twice the base value)
  bool asymmetric = false;    // every arm's bowl `asymmetry` times steeper above its minimum
};

// Tallies of one scenario in one design.
struct TunedTally {
  VerdictTally verdicts;
  int64_t base_better = 0, confounded = 0, extend = 0, covered = 0;
  int64_t best_judged = 0, best_covered = 0;  // arms with a best value's CI; those covering the true best
  double seeds = 0, best_width = 0;
  TunedCalibrationRow row;

  void add(const Analysis& a, const std::vector<int64_t>& n, const std::vector<Arm>& truth) {
    for (const auto& v : a.tuned->at_best) {
      if (v.is_baseline) {
        continue;
      }
      verdicts.add(v.verdict, row.truth, v.better_by);
      covered += v.ci_low <= row.truth && row.truth <= v.ci_high;
    }
    verdicts.end_study();
    for (const auto& arm : a.tuned->arms) {
      const OptimumFit& f = arm.fit;
      if (f.fitted && std::isfinite(f.ci_low) && std::isfinite(f.ci_high)) {
        const double best = value_of(truth[arm_of(arm.arm)].centre);
        ++best_judged;
        best_covered += f.ci_low <= best && best <= f.ci_high;
        best_width += std::log2(f.ci_high / f.ci_low);
      }
      if (arm.at_base == Verdict::baseline) {
        continue;
      }
      extend += arm.outcome == TunedOutcome::extend_grid;
      if (arm.at_base == Verdict::better) {
        ++base_better;
        confounded += arm.outcome == TunedOutcome::confounded || arm.outcome == TunedOutcome::extend_grid;
      }
    }
    for (const int64_t x : n) {
      seeds += static_cast<double>(x) / static_cast<double>(n.size());
    }
  }

  TunedCalibrationRow finish() const {
    TunedCalibrationRow r = row;
    static_cast<VerdictShares&>(r) = verdicts.shares();
    const double j = static_cast<double>(std::max<int64_t>(1, r.judged));
    r.base_better = static_cast<double>(base_better) / j;
    r.confounded_when_base_better = base_better > 0 ? static_cast<double>(confounded) / static_cast<double>(base_better) : std::nan("");
    r.extend = static_cast<double>(extend) / j;
    r.coverage = static_cast<double>(covered) / j;
    r.best_judged = best_judged;
    const double b = static_cast<double>(std::max<int64_t>(1, best_judged));
    r.best_coverage = static_cast<double>(best_covered) / b;
    r.best_width = best_width / b;
    r.seeds = seeds / static_cast<double>(std::max<int64_t>(1, verdicts.studies()));
    return r;
  }
};

}  // namespace

std::vector<TunedCalibrationRow> calibrate_tuned(const TunedCalibrationSetup& s) {
  if (!(s.sigma > 0) || !(s.min_effect > 0) || s.seeds < 2 || s.interventions < 1 || s.replicates < 1 ||
      !(s.rho > -1 && s.rho < 1) || !(s.run_sigma >= 0) || !(s.curvature > 0) || !(s.asymmetry >= 1) || s.grid.size() < 3 ||
      std::find(s.grid.begin(), s.grid.end(), 0.0) == s.grid.end() || (s.max_seeds != 0 && s.max_seeds < s.seeds)) {
    throw Error("calibrate --tune: needs σ > 0, a min_effect > 0, 2 or more seeds (and --max-seeds at or above them), "
                "an intervention, a replicate, −1 < ρ < 1, a run σ ≥ 0, a curvature > 0, an asymmetry ≥ 1 and 3 or more values with "
                "the base value among them",
                Exit::bad_input);
  }
  std::vector<double> sorted = s.grid;
  std::sort(sorted.begin(), sorted.end());
  if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end()) {
    throw Error("calibrate --tune: the value " + format_number("%g", *twice) +
                    " is in the grid twice — list each value tried once (log2 of it ÷ the base value)",
                Exit::bad_input);
  }
  if (s.max_seeds > 0 && (s.max_seeds + s.seeds - 1) / s.seeds > SeedDesign::k_max_looks) {
    throw Error("calibrate --tune: --max-seeds " + std::to_string(s.max_seeds) + " gives more than " +
                    std::to_string(SeedDesign::k_max_looks) + " looks of " + std::to_string(s.seeds) +
                    " seeds: pass more --seeds or a lower --max-seeds",
                Exit::bad_input);
  }
  const std::string steeper = ", " + format_number("%g", s.asymmetry) + "× steeper above the best";
  const std::vector<Scenario> scenarios{
      {"the baseline's bowl", 0, 0, true},
      {"moved a doubling down, to the base value", -1, 0, false},
      {"deeper by δ", 0, 1, true},
      {"deeper by 2δ", 0, 2, true},
      {"the baseline's bowl" + steeper, 0, 0, true, true},
      {"moved a doubling down" + steeper, -1, 0, false, true},
      {"moved half a doubling down" + steeper, -0.5, 0, true, true},
      {"deeper by 2δ" + steeper, 0, 2, true, true},
  };
  SeedDesign fixed;
  fixed.first = s.seeds;
  fixed.min_effect = s.min_effect;
  fixed.better_by = s.better_by;
  fixed.better_by_alpha = s.better_by_alpha;
  SeedDesign sequential = fixed;
  sequential.max_seeds = s.max_seeds;
  sequential.spending = s.spending;
  const auto arms_n = static_cast<size_t>(s.interventions + 1);
  std::vector<TunedCalibrationRow> rows;
  int64_t scenario = -1;
  for (const auto& sc : scenarios) {
    ++scenario;
    std::mt19937_64 rng(s.seed);  // the same noise in every scenario
    std::uniform_real_distribution<double> centre(0, 1);
    TunedTally fixed_tally, until;
    fixed_tally.row.scenario = until.row.scenario = sc.name;
    fixed_tally.row.truth = until.row.truth = sc.deeper * s.min_effect;
    fixed_tally.row.design = "fixed, " + std::to_string(s.seeds) + " seeds";
    until.row.design = "until decided (" + to_string(s.spending) + "), " + std::to_string(s.seeds) + " to " +
                       std::to_string(s.max_seeds) + " seeds";
    for (int64_t r = 0; r < s.replicates; ++r) {
      if (s.progress) {  // the studies done before this one
        s.progress(scenario * s.replicates + r, static_cast<int64_t>(scenarios.size()) * s.replicates);
      }
      const double c = sc.random_centre ? centre(rng) : 1.0;
      const double steep = sc.asymmetric ? s.asymmetry : 1;
      std::vector<Arm> arms{{3.0, c, steep}};
      for (int64_t i = 0; i < s.interventions; ++i) {
        arms.push_back({3.0 - fixed_tally.row.truth, c + sc.shift, steep});
      }
      const Draws d = draw(s, arms.size(), rng);
      std::vector<int64_t> n(arms_n, s.seeds);
      fixed_tally.add(analyze(tuned_study(s, arms, d, n, fixed)), n, arms);
      if (s.max_seeds > 0) {
        // --until-decided: the runner's loop, on the report's own next_round
        const Analysis a = run_until_decided(
            n, [&](const std::vector<int64_t>& seeds) { return analyze(tuned_study(s, arms, d, seeds, sequential)); },
            arm_of);
        until.add(a, n, arms);
      }
    }
    rows.push_back(fixed_tally.finish());
    if (s.max_seeds > 0) {
      rows.push_back(until.finish());
    }
  }
  return rows;
}

std::string tuned_calibration_header(const TunedCalibrationSetup& s) {
  std::string grid;
  for (const double t : s.grid) {
    grid += (grid.empty() ? "" : ", ") + format_number("%g", std::exp2(t)) + "×";
  }
  return "Synthetic studies with a tune axis (values " + grid + " the base value): a baseline and " +
                    plural(s.interventions, "arm") + ", each a bowl in log2(value) rising " + format_number("%g", s.curvature) +
                    " per doubling² (in the asymmetric rows, " + format_number("%g", s.asymmetry) +
                    " times that above the minimum), seed noise σ = " + format_number("%g", s.sigma) + " (ρ = " + format_number("%g", s.rho) +
                    " between arms at a seed), each run's own noise " + format_number("%g", s.run_sigma) + ", δ = " +
                    format_number("%g", s.min_effect) + ", " + plural(s.seeds, "seed") + ", alpha " + format_number("%g", s.alpha) +
                    ", " + std::to_string(s.replicates) + " studies per row, seed " + std::to_string(s.seed) +
                    ". The baseline's best lies at a random place between the base value and twice it (at twice it in the "
                    "sideways row, where the arms' best is the base value). Verdicts at each arm's best:\n\n";
}

std::string tuned_calibration_markdown(const TunedCalibrationSetup& s, const std::vector<TunedCalibrationRow>& rows) {
  std::string out = tuned_calibration_header(s);
  out += "| arms' bowl | true difference | design | seeds per arm | better | worse | equivalent | undecided | any false better/worse (per study) "
         "| 95% CI covers it | better at the base value | of those, lr-confounded | extend the grid "
         "| best value's 95% CI covers the true best | its mean width (doublings) |\n"
         "|:--|--:|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const auto& r : rows) {
    const double n = static_cast<double>(std::max<int64_t>(1, r.judged));
    const double half = binomial_half(r.coverage, n);
    out += "| " + r.scenario + " | " + format_number("%g", r.truth) + " | " + r.design + " | " +
           format_number("%.2f", r.seeds) + " | " + format_number("%.3f", r.better) + " | " +
           format_number("%.3f", r.worse) + " | " + format_number("%.3f", r.equivalent) + " | " +
           format_number("%.3f", r.undecided) + " | " + format_number("%.3f", r.any_false) + " | " +
           format_number("%.3f", r.coverage) + " ± " + format_number("%.3f", half) + " | " +
           format_number("%.3f", r.base_better) + " | " +
           (std::isfinite(r.confounded_when_base_better) ? format_number("%.3f", r.confounded_when_base_better) : "-") +
           " | " + format_number("%.3f", r.extend) + " | " + format_number("%.3f", r.best_coverage) + " | " +
           format_number("%.2f", r.best_width) + " |\n";
  }
  if (s.better_by > 0) {
    out += "\nCalled better by more than m = " + format_number("%g", s.better_by) + " at its best (better_by, one-sided at " +
           format_number("%g", s.better_by_alpha) + ": Holm-adjusted in a fixed design, a repeated bound under "
           "--until-decided), per arm and per study, with 95% binomial intervals — false where the true difference is m or "
           "less:\n\n";
    for (const auto& r : rows) {
      const double n = static_cast<double>(std::max<int64_t>(1, r.judged));
      const double studies = static_cast<double>(s.replicates);
      const double half = binomial_half(r.better_by, n), half_any = binomial_half(r.any_better_by, studies);
      out += "- " + r.scenario + ", true difference " + format_number("%g", r.truth) + (r.truth <= s.better_by ? " (≤ m)" : " (> m)") +
             ", " + r.design + ": " + format_number("%.4f", r.better_by) + " ± " + format_number("%.4f", half) + " per arm, " +
             format_number("%.4f", r.any_better_by) + " ± " + format_number("%.4f", half_any) + " per study\n";
    }
  }
  return out;
}

}  // namespace sweep
