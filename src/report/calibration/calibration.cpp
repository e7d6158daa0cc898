#include "report/calibration/calibration.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "report/analyze.h"
#include "report/until_decided.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

// One synthetic study's draws, enough for the most seeds any design gives it.
struct Draws {
  std::vector<double> shared;              // z, per seed
  std::vector<std::vector<double>> own;    // w, per intervention and seed
};

Draws draw(const CalibrationSetup& s, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  Draws d;
  for (int64_t k = 0; k < s.max_seeds; ++k) {
    d.shared.push_back(normal(rng));
  }
  d.own.resize(static_cast<size_t>(s.interventions));
  for (auto& w : d.own) {
    for (int64_t k = 0; k < s.max_seeds; ++k) {
      w.push_back(normal(rng));
    }
  }
  return d;
}

// The study as the report would load it: variant 0 the baseline, n[v] seeds each.
ReportInput study(const CalibrationSetup& s, const std::vector<double>& effects, const Draws& d,
                  const std::vector<int64_t>& n, const SeedDesign& design) {
  ReportInput in;
  in.sweep = "calibration";
  in.baseline = "baseline";
  in.metric = Metric{Metric::Kind::test_loss};
  in.alpha = s.alpha;
  in.design = design;
  in.min_effect_source = MinEffectSource::simulation;
  in.power = false;
  const double mu = 3.0, own = std::sqrt(std::max(0.0, 1 - s.rho * s.rho));
  for (size_t v = 0; v < n.size(); ++v) {
    VariantRuns vr;
    vr.name = v == 0 ? "baseline" : "i" + std::to_string(v);
    for (int64_t k = 0; k < n[v]; ++k) {
      ReportRun r;
      r.run_id = vr.name + "-" + std::to_string(k);
      r.status = RunState::done;
      r.init_seed = r.data_seed = k + 1;
      const double z = d.shared[static_cast<size_t>(k)];
      r.value = v == 0 ? mu + s.sigma * z
                       : mu - effects[v - 1] + s.sigma * (s.rho * z + own * d.own[v - 1][static_cast<size_t>(k)]);
      vr.runs.push_back(r);
    }
    in.variants.push_back(std::move(vr));
  }
  return in;
}

bool correct(const VariantStats& v, double effect, double delta) {
  if (effect == 0) {
    return v.verdict == Verdict::equivalent;
  }
  if (effect < delta) {
    return v.verdict == Verdict::equivalent || v.verdict == Verdict::better;
  }
  return v.verdict == Verdict::better && !v.below_min_effect;  // "better (< δ)" would claim it smaller than δ
}

// A claim of no effect that matters (equivalent, or "(< δ)") about an effect of δ or more.
bool false_equivalence(const VariantStats& v, double effect, double delta) {
  return effect >= delta && (v.verdict == Verdict::equivalent || v.below_min_effect);
}

// Tallies of one design at one effect.
struct Tally {
  VerdictTally verdicts;
  int64_t correct = 0, false_equivalent = 0, studies_false_equivalent = 0;
  double seeds = 0;

  void add(const Analysis& a, const std::vector<double>& effects, double delta, double seeds_per_variant) {
    bool any_false_equivalent = false;
    for (const auto& v : a.variants) {
      if (v.is_baseline) {
        continue;
      }
      const double effect = effects[static_cast<size_t>(std::stoll(v.name.substr(1))) - 1];
      verdicts.add(v.verdict, effect, v.better_by);
      correct += sweep::correct(v, effect, delta);
      const bool claimed = sweep::false_equivalence(v, effect, delta);
      false_equivalent += claimed;
      any_false_equivalent |= claimed;
    }
    verdicts.end_study();
    studies_false_equivalent += any_false_equivalent;
    seeds += seeds_per_variant;
  }

  CalibrationRow row(double effect, const std::string& design) const {
    const double j = static_cast<double>(std::max<int64_t>(1, verdicts.judged()));
    const double studies = static_cast<double>(std::max<int64_t>(1, verdicts.studies()));
    CalibrationRow r;
    static_cast<VerdictShares&>(r) = verdicts.shares();
    r.effect = effect;
    r.design = design;
    r.mixed = std::isnan(effect);
    r.correct = static_cast<double>(correct) / j;
    r.false_equivalent = static_cast<double>(false_equivalent) / j;
    r.any_false_equivalent = static_cast<double>(studies_false_equivalent) / studies;
    r.seeds = seeds / studies;
    return r;
  }
};

}  // namespace

CalibrationSetup setup_from(const Analysis& a, const ReportInput& in) {
  CalibrationSetup s;
  s.alpha = in.alpha;
  s.sigma = a.noise.sigma;
  const auto baseline = std::find_if(in.variants.begin(), in.variants.end(),
                                     [&](const VariantRuns& v) { return v.name == in.baseline; });
  if (baseline == in.variants.end()) {
    throw Error("sweep " + in.sweep + " has no variant named " + in.baseline + " (its baseline) to take the noise from",
                Exit::bad_input);
  }
  const auto base = seed_values(baseline->runs);
  std::vector<double> sd_differences;
  for (const auto& v : in.variants) {
    if (v.name == in.baseline) {
      continue;
    }
    std::vector<double> d;
    for (const auto& [seed, value] : seed_values(v.runs)) {
      if (const auto it = base.find(seed); it != base.end()) {
        d.push_back(it->second - value);
      }
    }
    if (d.size() >= 2) {
      sd_differences.push_back(summarize(d).sd);
    }
  }
  if (!(s.sigma > 0) || sd_differences.empty()) {
    throw Error("sweep " + in.sweep + " cannot give the noise of a simulation: it needs 2 or more finished seeds of "
                "its baseline and of an intervention on the same seeds",
                Exit::bad_input);
  }
  const double sd_d = percentile(sd_differences, 0.5);
  const double implied = 1 - sd_d * sd_d / (2 * s.sigma * s.sigma);  // from var(d) = 2σ²(1 − ρ)
  s.rho = std::clamp(implied, -0.99, 0.9999);
  s.min_effect = in.design.min_effect > 0 ? in.design.min_effect : a.suggested_min_effect;
  s.better_by = in.design.better_by;
  s.better_by_alpha = in.design.better_by_alpha;
  s.seeds = in.design.first > 0 ? in.design.first : std::max<int64_t>(2, a.noise.seeds);
  s.max_seeds = in.design.sequential() ? in.design.max_seeds : 4 * s.seeds;
  s.interventions = static_cast<int64_t>(in.variants.size()) - 1;
  s.source = "sweep " + in.sweep + ": σ = " + format_number("%.4g", s.sigma) + " (its baseline's seeds), the median sd of an "
             "intervention's paired differences " + format_number("%.4g", sd_d) + " (ρ = " + format_number("%.4f", s.rho) +
             (s.rho != implied ? ", held in [−0.99, 0.9999]: the two imply " + format_number("%.3g", implied) +
                                     " — the interventions' seeds vary more than the baseline's; pass --sigma and --rho"
                               : "") +
             ")";
  return s;
}

std::vector<CalibrationRow> calibrate(const CalibrationSetup& s) {
  if (!(s.sigma > 0) || !(s.min_effect > 0) || s.seeds < 2 || s.max_seeds < s.seeds || s.interventions < 1 ||
      s.replicates < 1 || !(s.rho > -1 && s.rho < 1)) {
    throw Error("calibrate: needs σ > 0, a min_effect > 0, 2 ≤ --seeds ≤ --max-seeds, an intervention, a replicate "
                "and −1 < ρ < 1",
                Exit::bad_input);
  }
  if ((s.max_seeds + s.seeds - 1) / s.seeds > SeedDesign::k_max_looks) {
    throw Error("calibrate: --max-seeds " + std::to_string(s.max_seeds) + " gives more than " +
                    std::to_string(SeedDesign::k_max_looks) + " looks of " + std::to_string(s.seeds) +
                    " seeds: pass more --seeds or a lower --max-seeds",
                Exit::bad_input);
  }
  if (s.effects.empty() || !std::all_of(s.effects.begin(), s.effects.end(), [](double e) { return std::isfinite(e); })) {
    throw Error("calibrate: --effects must list finite multiples of δ, e.g. --effects 0,0.5,1,2", Exit::bad_input);
  }
  std::vector<CalibrationRow> rows;
  const auto m = static_cast<size_t>(s.interventions);
  SeedDesign fixed;
  fixed.min_effect = s.min_effect;
  fixed.better_by = s.better_by;
  fixed.better_by_alpha = s.better_by_alpha;
  SeedDesign sequential = fixed;
  sequential.first = s.seeds;
  sequential.max_seeds = s.max_seeds;
  sequential.spending = s.spending;
  // One row group per effect shared by every intervention; then, with several effects and
  // interventions, one where intervention i has the i-th effect (cyclically): a study of mixed
  // truths, where a fixed design must buy every intervention the seeds of the hardest.
  std::vector<std::vector<double>> scenarios;
  for (double multiple : s.effects) {
    scenarios.emplace_back(m, multiple * s.min_effect);
  }
  if (s.effects.size() > 1 && m > 1) {
    std::vector<double> mixed;
    for (size_t i = 0; i < m; ++i) {
      mixed.push_back(s.effects[i % s.effects.size()] * s.min_effect);
    }
    scenarios.push_back(mixed);
  }
  for (size_t k = 0; k < scenarios.size(); ++k) {
    const std::vector<double>& effects = scenarios[k];
    const double effect = k < s.effects.size() ? effects.front() : std::nan("");  // NaN: mixed
    std::mt19937_64 rng(s.seed);  // the same studies for every effect and design
    std::vector<Tally> by_n(static_cast<size_t>(s.max_seeds + 1));  // fixed designs, by seeds
    Tally until;
    for (int64_t r = 0; r < s.replicates; ++r) {
      const Draws d = draw(s, rng);
      for (int64_t n = 2; n <= s.max_seeds; ++n) {
        by_n[static_cast<size_t>(n)].add(analyze(study(s, effects, d, std::vector<int64_t>(m + 1, n), fixed)), effects,
                                         s.min_effect, static_cast<double>(n));
      }
      if (s.progress) {
        s.progress(static_cast<int64_t>(k) * s.replicates + r + 1, static_cast<int64_t>(scenarios.size()) * s.replicates);
      }
      // --until-decided: the runner's loop, on the report's own next_round.
      std::vector<int64_t> n(m + 1, s.seeds);
      const Analysis a = run_until_decided(
          n, [&](const std::vector<int64_t>& seeds) { return analyze(study(s, effects, d, seeds, sequential)); },
          [](const std::string& name) {
            return name == "baseline" ? 0 : static_cast<size_t>(std::stoll(name.substr(1)));  // "i3": 3
          });
      double total = 0;
      for (int64_t x : n) {
        total += static_cast<double>(x);
      }
      until.add(a, effects, s.min_effect, total / static_cast<double>(n.size()));
    }
    rows.push_back(by_n[static_cast<size_t>(s.seeds)].row(effect, "fixed, " + std::to_string(s.seeds) + " seeds"));
    rows.push_back(by_n[static_cast<size_t>(s.max_seeds)].row(effect, "fixed, " + std::to_string(s.max_seeds) + " seeds"));
    CalibrationRow u = until.row(effect, "until decided (" + to_string(s.spending) + "), " + std::to_string(s.seeds) +
                                             " to " + std::to_string(s.max_seeds) + " seeds");
    // As often: within the 95% binomial error of the sequential design's rate.
    const double judged = static_cast<double>(u.judged);
    const double as_often = u.correct - binomial_half(u.correct, judged);
    for (int64_t n = 2; n <= s.max_seeds; ++n) {
      if (by_n[static_cast<size_t>(n)].row(effect, "").correct >= as_often) {
        u.fixed_same = n;
        break;
      }
    }
    rows.push_back(u);
  }
  return rows;
}

std::string calibration_header(const CalibrationSetup& s) {
  return "Synthetic studies: a baseline and " + std::to_string(s.interventions) +
                    (s.interventions == 1 ? " intervention with" : " interventions sharing") + " one true improvement, σ = " + format_number("%.4g", s.sigma) + ", ρ = " +
                    format_number("%.4f", s.rho) + (s.source.empty() ? "" : " (" + s.source + ")") + ", δ = " +
                    format_number("%g", s.min_effect) + ", alpha " + format_number("%g", s.alpha) + ", " + std::to_string(s.replicates) +
                    " studies per row (the same studies in every row), seed " + std::to_string(s.seed) + ".\n\n";
}

std::string calibration_markdown(const CalibrationSetup& s, const std::vector<CalibrationRow>& rows) {
  std::string out = calibration_header(s);
  out += "| true improvement | design | better | worse | equivalent | undecided | decided correctly | seeds per variant "
         "| fixed seeds for as many correct |\n|--:|:--|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const auto& r : rows) {
    std::string mix;
    for (size_t i = 0; r.mixed && i < s.effects.size(); ++i) {
      mix += (i ? ", " : "") + format_number("%g", s.effects[i]) + "δ";
    }
    out += "| " + (r.mixed ? "mixed: " + mix : format_number("%g", r.effect) + " (" + format_number("%g", r.effect / s.min_effect) + "δ)") +
           " | " + r.design + " | " +
           format_number("%.3f", r.better) + " | " + format_number("%.3f", r.worse) + " | " + format_number("%.3f", r.equivalent) + " | " +
           format_number("%.3f", r.undecided) + " | " + format_number("%.3f", r.correct) + " | " + format_number("%.2f", r.seeds) + " | " +
           (r.design.rfind("until", 0) == 0 ? (r.fixed_same < 0 ? "more than " + std::to_string(s.max_seeds)
                                                                 : std::to_string(r.fixed_same))
                                            : std::string("-")) +
           " |\n";
  }
  bool null_header = false;
  for (const auto& r : rows) {
    if (r.mixed || r.effect != 0) {
      continue;
    }
    if (!null_header) {
      out += "\nUnder no effect (true improvement 0), per intervention and per study (any of its interventions "
             "called better or worse), with 95% binomial intervals:\n\n";
      null_header = true;
    }
    const double n = static_cast<double>(r.judged), p = r.better + r.worse;
    const double half = binomial_half(p, n);
    const double studies = static_cast<double>(s.replicates);
    const double half_any = binomial_half(r.any_false, studies);
    out += "- " + r.design + ": false better/worse " + format_number("%.4f", p) + " ± " + format_number("%.4f", half) + " per intervention, " +
           format_number("%.4f", r.any_false) + " ± " + format_number("%.4f", half_any) + " per study (alpha " + format_number("%g", s.alpha) + ")\n";
  }
  bool header = false;
  for (const auto& r : rows) {
    if (r.mixed || r.effect != s.min_effect) {
      continue;
    }
    if (!header) {
      out += "\nAt a true improvement of exactly δ, the claims of no effect that matters (equivalent, or (< δ)) — "
             "false there — per intervention and per study:\n\n";
      header = true;
    }
    const double n = static_cast<double>(r.judged), studies = static_cast<double>(s.replicates);
    const double half = binomial_half(r.false_equivalent, n);
    const double half_any = binomial_half(r.any_false_equivalent, studies);
    out += "- " + r.design + ": " + format_number("%.4f", r.false_equivalent) + " ± " + format_number("%.4f", half) + " per intervention, " +
           format_number("%.4f", r.any_false_equivalent) + " ± " + format_number("%.4f", half_any) + " per study (alpha " +
           format_number("%g", s.alpha) + ")\n";
  }
  if (s.better_by > 0) {
    const double studies = static_cast<double>(s.replicates);
    out += "\nCalled better by more than m = " + format_number("%g", s.better_by) + " (better_by, one-sided at " +
           format_number("%g", s.better_by_alpha) + ": Holm-adjusted in a fixed design, a repeated bound under "
           "--until-decided), per intervention and per study — false where the true improvement is m or less:\n\n";
    for (const auto& r : rows) {
      if (r.mixed) {
        continue;
      }
      const double n = static_cast<double>(r.judged);
      const double half = binomial_half(r.better_by, n), half_any = binomial_half(r.any_better_by, studies);
      out += "- true improvement " + format_number("%g", r.effect) + (r.effect <= s.better_by ? " (≤ m)" : " (> m)") +
             ", " + r.design + ": " + format_number("%.4f", r.better_by) + " ± " + format_number("%.4f", half) +
             " per intervention, " + format_number("%.4f", r.any_better_by) + " ± " + format_number("%.4f", half_any) +
             " per study\n";
    }
  }
  return out;
}

}  // namespace sweep
