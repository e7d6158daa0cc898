// A scale ladder's report: every rung judged as a study of its own (its variants against the
// baseline at the rung, report/analysis.cpp), then, per intervention, how the improvement
// changes with the rung's training compute — a line through every seed's paired improvement
// against log10(training FLOPs), its slope tested (the intervention × scale interaction), its
// value extrapolated to the sweep's target, and a verdict on the trend.
#include "report/ladder/ladder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "report/ladder/backtest.h"
#include "report/ladder/prediction.h"
#include "report/ladder/trend.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

// The rung a variant runs at ("" when it has none).
std::string rung_of(const VariantRuns& v) {
  const auto it = v.axes.find("scale");
  if (it == v.axes.end()) {
    return "";
  }
  const nlohmann::json value = nlohmann::json::parse(it->second, nullptr, false);
  return value.is_string() ? value.get<std::string>() : "";
}

// The rungs' notes, each once: a note every rung has as it is, the others led by their rungs.
void merge_notes(const std::vector<Analysis>& rungs, const std::vector<std::string>& names,
                 std::vector<std::string>& notes) {
  std::vector<std::pair<std::string, std::vector<std::string>>> seen;  // note -> its rungs, in order
  for (size_t k = 0; k < rungs.size(); ++k) {
    for (const auto& n : rungs[k].notes) {
      auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == n; });
      if (it == seen.end()) {
        seen.push_back({n, {}});
        it = seen.end() - 1;
      }
      it->second.push_back(names[k]);
    }
  }
  for (const auto& [note, where] : seen) {
    if (std::find(notes.begin(), notes.end(), note) != notes.end()) {
      continue;  // the ladder's own (loading's) notes
    }
    notes.push_back(where.size() == rungs.size() ? note : "rung " + join(where, ", ") + ": " + note);
  }
}

}  // namespace

ReportInput rung_input(const ReportInput& in, const std::string& rung) {
  ReportInput out = in;
  out.variants.clear();
  for (const auto& v : in.variants) {
    if (rung_of(v) == rung) {
      out.variants.push_back(v);
    }
  }
  out.baseline = in.baseline + "+" + rung;
  out.axes.clear();
  out.ladder.reset();
  out.notes.clear();
  return out;
}

namespace {

// Each line read at the target, its interval allowing for a bend and each rung's own noise
// (report/ladder/prediction.h); the lines of one ladder share them. x_target NaN: no target.
void predict_targets(const std::vector<Trend*>& lines, const std::vector<double>& x, double x_target) {
  std::vector<std::vector<std::vector<double>>> paired;
  for (const Trend* t : lines) {
    paired.push_back(t->paired);
  }
  const LadderNoise noise = ladder_noise(x, paired, x.size());
  for (Trend* t : lines) {
    const Prediction p =
        std::isfinite(x_target) ? predict_at(x, t->paired, x_target, noise, 0) : Prediction{k_nan, k_nan, k_nan};
    t->at_target = p.at;
    t->target_low = p.low;
    t->target_high = p.high;
  }
}

// Holm across the lines' slope tests (and their holds tests), then each line judged.
void judge_trends(const std::vector<Trend*>& lines, double alpha, double min_effect) {
  std::vector<double> ps, holds;
  for (const Trend* t : lines) {
    ps.push_back(t->p);
    holds.push_back(t->p_holds);
  }
  const std::vector<double> ps_holm = holm_adjust(ps), holds_holm = holm_adjust(holds);
  for (size_t i = 0; i < lines.size(); ++i) {
    lines[i]->p_holm = ps_holm[i];
    lines[i]->p_holds_holm = holds_holm[i];
    judge_trend(*lines[i], alpha, min_effect);
  }
}

// Each rung as a study of its own (its input, its analysis, its baseline's size), gathered into
// the ladder's analysis: every rung's variants, targets, compute matches and Δ curves, the notes
// merged, the largest rung's noise, the suggested min_effect and the code versions.
std::vector<ReportInput> analyze_rungs(const ReportInput& in, Analysis& a, LadderSummary& summary) {
  const Ladder& ladder = *in.ladder;
  std::vector<ReportInput> inputs;
  for (const auto& rung : ladder.rungs) {
    inputs.push_back(rung_input(in, rung));
    const ReportInput& sub = inputs.back();
    Analysis r = analyze_plain(sub);  // throws when the rung's baseline is missing
    RungInfo info;
    info.name = rung;
    for (const auto& v : sub.variants) {
      if (v.name == sub.baseline) {
        info.params = v.params;
        info.tokens = static_cast<double>(v.train_tokens);
        info.flops = v.flops_per_token * static_cast<double>(v.train_tokens);
      }
    }
    summary.rungs.push_back(info);
    a.variants.insert(a.variants.end(), r.variants.begin(), r.variants.end());
    // where the effects happen and at equal compute, every rung's (report.json; the tables show the rungs' verdicts)
    a.targets.insert(a.targets.end(), r.targets.begin(), r.targets.end());
    a.matched.insert(a.matched.end(), r.matched.begin(), r.matched.end());
    a.deltas.insert(a.deltas.end(), r.deltas.begin(), r.deltas.end());
    a.rungs.push_back(std::move(r));
  }
  merge_notes(a.rungs, ladder.rungs, a.notes);
  a.noise = a.rungs.back().noise;
  std::vector<double> suggested;
  std::vector<std::string> codes;
  for (const auto& r : a.rungs) {
    suggested.push_back(r.suggested_min_effect);
    if (std::find(codes.begin(), codes.end(), r.code) == codes.end()) {
      codes.push_back(r.code);
    }
  }
  a.suggested_min_effect = percentile(suggested, 0.5);
  a.code = join(codes, "; ");
  return inputs;
}

// The rungs' places on the trend's axis (log10 training FLOPs; NaN where unknown, with a note) and
// the target's (NaN: none), in FLOPs or through the rungs' FLOPs against their parameters.
std::pair<std::vector<double>, double> place_rungs_and_target(const Ladder& ladder, LadderSummary& summary,
                                                              std::vector<std::string>& notes) {
  std::vector<double> x;  // log10 training FLOPs per rung
  for (const auto& r : summary.rungs) {
    x.push_back(r.flops > 0 ? std::log10(r.flops) : k_nan);
    if (!(r.flops > 0)) {
      notes.push_back("rung " + r.name + ": its training FLOPs are unknown — a trainer of your own says its size as "
                        "`params` in its start event (sweep takes 6 × params × tokens); without it the rung has no "
                        "place on the trend");
    }
  }
  for (size_t k = 1; k < summary.rungs.size(); ++k) {
    if (summary.rungs[k].flops > 0 && summary.rungs[k - 1].flops > 0 && summary.rungs[k].flops <= summary.rungs[k - 1].flops) {
      notes.push_back("rung " + summary.rungs[k].name + " trained no more FLOPs than rung " + summary.rungs[k - 1].name +
                        " (as its trainer reported them): the ladder does not grow there");
    }
  }
  double x_target = k_nan;
  summary.target_flops = summary.target_factor = k_nan;
  if (ladder.target_unit == TargetUnit::flops) {
    x_target = std::log10(ladder.target);
    summary.target_factor = ladder.target / summary.rungs.back().flops;
  } else if (ladder.target_unit == TargetUnit::params) {
    // FLOPs against parameters over the rungs, a line in log–log (exact when tokens grow in
    // proportion to parameters and attention's share stays put)
    std::vector<double> lp, lf;
    for (size_t k = 0; k < summary.rungs.size(); ++k) {
      if (summary.rungs[k].params > 0 && std::isfinite(x[k])) {
        lp.push_back(std::log10(summary.rungs[k].params));
        lf.push_back(x[k]);
      }
    }
    if (lp.size() >= 2) {
      const double mp = summarize(lp).mean, mf = summarize(lf).mean;
      double sxy = 0, sxx = 0;
      for (size_t k = 0; k < lp.size(); ++k) {
        sxy += (lp[k] - mp) * (lf[k] - mf);
        sxx += (lp[k] - mp) * (lp[k] - mp);
      }
      const double power = sxy / sxx;
      x_target = mf + power * (std::log10(ladder.target) - mp);
      summary.target_rule = "training FLOPs grow as parameters^" + format_number("%.2f", power) +
                            " over the rungs (a line in log–log): " + format_count(ladder.target) + " parameters ≈ " +
                            flops_text(std::pow(10.0, x_target)) + " FLOPs";
    }
    summary.target_factor = ladder.target / summary.rungs.back().params;
  }
  summary.target_flops = std::isfinite(x_target) ? std::pow(10.0, x_target) : k_nan;
  if (std::isfinite(summary.target_factor) && summary.target_factor <= 1 && summary.rungs.front().flops > 0 &&
      (ladder.target_unit == TargetUnit::flops ? ladder.target <= summary.rungs.front().flops
                                     : ladder.target <= summary.rungs.front().params)) {
    notes.push_back("the target lies at or below the smallest rung: the value there is the line read back, not an "
                      "extrapolation");
  }
  summary.far = std::isfinite(summary.target_factor) && summary.target_factor > ladder.beyond;
  return {x, x_target};
}

// Per intervention: its paired improvements at each rung and the line through them; then Holm
// across the interventions, for the interaction test and for "holds" alike, and the verdicts.
void fit_trends(const ReportInput& in, const std::vector<ReportInput>& inputs, const std::vector<double>& x,
                double x_target, LadderSummary& summary) {
  const Ladder& ladder = *in.ladder;
  std::vector<std::string> interventions;
  for (const auto& v : inputs.front().variants) {
    if (v.name != inputs.front().baseline) {
      interventions.push_back(v.intervention);
    }
  }
  for (size_t i = 0; i < interventions.size(); ++i) {
    std::vector<std::vector<double>> d(ladder.rungs.size());
    std::vector<std::string> names(ladder.rungs.size());
    for (size_t k = 0; k < inputs.size(); ++k) {
      const VariantRuns* base = nullptr;
      const VariantRuns* mine = nullptr;
      for (const auto& v : inputs[k].variants) {
        base = v.name == inputs[k].baseline ? &v : base;
        mine = v.intervention == interventions[i] && v.name != inputs[k].baseline ? &v : mine;
      }
      if (!base || !mine) {
        continue;
      }
      names[k] = mine->name;
      const auto b = seed_values(base->runs), m = seed_values(mine->runs);
      for (const auto& [seed, value] : m) {
        if (const auto it = b.find(seed); it != b.end()) {
          d[k].push_back(it->second - value);
        }
      }
    }
    Trend t = fit_trend(x, d, in.design.min_effect);
    t.paired = d;
    t.intervention = interventions[i];
    t.position = static_cast<int>(i + 1);
    t.rung_variants = names;
    summary.trends.push_back(t);
  }
  std::vector<Trend*> lines;
  for (auto& t : summary.trends) {
    lines.push_back(&t);
  }
  predict_targets(lines, x, x_target);
  judge_trends(lines, in.alpha, in.design.min_effect);
}

std::string speedup_text(double ln_speedup) { return factor_text(std::exp(ln_speedup)); }

// Per intervention: its FLOPs speed-up to the baseline's final validation loss at each rung (every
// rung's tokens-to-target, per seed) and the line through their logarithms; Holm across them.
void fit_speedups(const std::vector<Analysis>& rungs, const std::vector<double>& x, double x_target, double alpha,
                  LadderSummary& summary) {
  for (const auto& trend : summary.trends) {
    SpeedupTrend s;
    s.intervention = trend.intervention;
    s.rung_variants = trend.rung_variants;
    std::vector<std::vector<double>> d(rungs.size());
    for (size_t k = 0; k < rungs.size(); ++k) {
      const auto t = std::find_if(rungs[k].targets.begin(), rungs[k].targets.end(),
                                  [&](const TokensToTarget& t) { return t.variant == trend.rung_variants[k]; });
      const bool found = !trend.rung_variants[k].empty() && t != rungs[k].targets.end();
      s.seeds.push_back(found ? t->seeds : 0);
      s.reached.push_back(found ? static_cast<int64_t>(t->flops_speedups.size()) : 0);
      for (double v : found ? t->flops_speedups : std::vector<double>{}) {
        d[k].push_back(std::log(v));
      }
      s.at_rung.push_back(d[k].empty() ? k_nan : std::exp(summarize(d[k]).mean));
    }
    s.line = fit_trend(x, d, 0);
    s.line.intervention = trend.intervention;
    s.line.position = trend.position;
    s.line.rung_variants = trend.rung_variants;
    s.line.paired = d;
    summary.speedups.push_back(std::move(s));
  }
  std::vector<Trend*> lines;
  for (auto& s : summary.speedups) {
    lines.push_back(&s.line);
  }
  predict_targets(lines, x, x_target);
  judge_trends(lines, alpha, 0);
  for (auto& s : summary.speedups) {  // the reason in speed-ups rather than in the metric's units
    Trend& t = s.line;
    if (!std::isfinite(t.p)) {
      continue;
    }
    const std::string ends = "from " + speedup_text(t.low_end) + " at the smallest rung to " + speedup_text(t.high_end) +
                             " at the largest, ×" + format_number("%.3g", std::exp(t.slope)) + " per 10× FLOPs";
    switch (t.verdict) {
      case TrendVerdict::flips_sign:
        t.why = ends + ": " + (t.low_end > 0 ? "faster" : "slower") + " at the smallest rung, " +
                (t.high_end > 0 ? "faster" : "slower") + " at the largest (both ends' 95% CI exclude 1×)";
        break;
      case TrendVerdict::grows:
      case TrendVerdict::shrinks:
        t.why = ends;
        break;
      default:
        t.why = "not shown to change with scale (" + ends + ")";
    }
  }
}

}  // namespace

Analysis analyze_ladder(const ReportInput& in) {
  Analysis a = analysis_header(in);
  LadderSummary summary;
  summary.ladder = *in.ladder;
  const std::vector<ReportInput> inputs = analyze_rungs(in, a, summary);
  const auto [x, x_target] = place_rungs_and_target(*in.ladder, summary, a.notes);
  fit_trends(in, inputs, x, x_target, summary);
  fit_speedups(a.rungs, x, x_target, in.alpha, summary);
  summary.backtest = backtest_ladder(summary, in.sweep);
  a.ladder = summary;
  return a;
}

}  // namespace sweep
