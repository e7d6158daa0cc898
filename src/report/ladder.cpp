// A scale ladder's report: every rung judged as a study of its own (its variants against the
// baseline at the rung, report/analysis.cpp), then, per intervention, how the improvement
// changes with the rung's training compute — a line through every seed's paired improvement
// against log10(training FLOPs), its slope tested (the intervention × scale interaction), its
// value extrapolated to the sweep's target, and a verdict on the trend.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "report/analysis.h"
#include "report/backtest.h"
#include "report/tables.h"
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

std::string flops_text(double flops) { return format_number("%.3g", flops); }

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

Trend fit_trend(const std::vector<double>& x, const std::vector<std::vector<double>>& d, double min_effect,
                double x_target, double level, int64_t min_rungs, double new_seeds) {
  Trend t;
  t.mean = t.slope = t.slope_low = t.slope_high = t.df = t.p = t.p_holm = t.change = k_nan;
  t.p_holds = t.p_holds_holm = t.low_end = t.low_end_lo = t.low_end_hi = t.high_end = t.high_end_lo = k_nan;
  t.high_end_hi = t.crossover = t.crossover_low = t.crossover_high = t.tau = k_nan;
  t.at_target = t.target_low = t.target_high = k_nan;
  // The pairs, and the rungs that have them.
  double n = 0, sum_x = 0, sum_d = 0, x_min = std::numeric_limits<double>::infinity(), x_max = -x_min;
  for (size_t r = 0; r < x.size(); ++r) {
    if (d[r].empty() || !std::isfinite(x[r])) {
      continue;
    }
    ++t.rungs;
    x_min = std::min(x_min, x[r]);
    x_max = std::max(x_max, x[r]);
    for (double v : d[r]) {
      n += 1;
      sum_x += x[r];
      sum_d += v;
    }
  }
  t.pairs = static_cast<int64_t>(n);
  if (t.rungs < min_rungs || t.rungs < 2) {
    t.verdict = TrendVerdict::no_result;
    t.why = "a trend needs paired results at " + std::to_string(min_rungs) + " rungs; " + std::to_string(t.rungs) + " have them";
    return t;
  }
  const double x_bar = sum_x / n, d_bar = sum_d / n;
  double sxx = 0, sxd = 0;
  for (size_t r = 0; r < x.size(); ++r) {
    for (double v : d[r]) {
      sxx += (x[r] - x_bar) * (x[r] - x_bar);
      sxd += (x[r] - x_bar) * (v - d_bar);
    }
  }
  t.mean = d_bar;
  t.slope = sxd / sxx;
  auto line = [&](double at) { return d_bar + t.slope * (at - x_bar); };
  // Residuals about the line: within the rungs (seed noise) and of the rungs' means (lack of fit).
  double ss_res = 0, ss_within = 0, ss_lack = 0;
  for (size_t r = 0; r < x.size(); ++r) {
    if (d[r].empty()) {
      continue;
    }
    double rung_mean = 0;
    for (double v : d[r]) {
      rung_mean += v / static_cast<double>(d[r].size());
    }
    for (double v : d[r]) {
      ss_res += (v - line(x[r])) * (v - line(x[r]));
      ss_within += (v - rung_mean) * (v - rung_mean);
    }
    ss_lack += static_cast<double>(d[r].size()) * (rung_mean - line(x[r])) * (rung_mean - line(x[r]));
  }
  t.df = n - 2;
  const double s2 = t.df > 0 ? ss_res / t.df : k_nan;
  const double se_slope = std::sqrt(s2 / sxx);
  const Comparison slope = t_estimate(t.slope, se_slope, t.df, level);
  t.slope_low = slope.ci_low;
  t.slope_high = slope.ci_high;
  t.p = slope.p;
  const double span = x_max - x_min;
  t.change = t.slope * span;
  if (min_effect > 0) {
    Comparison change;
    change.improvement = t.change;
    change.se = se_slope * span;
    change.df = t.df;
    t.p_holds = tost_p(change, min_effect);
  }
  const double q = t.df > 0 ? t_quantile(level, t.df) : k_nan;
  auto se_line = [&](double at) { return std::sqrt(s2 * (1 / n + (at - x_bar) * (at - x_bar) / sxx)); };
  t.low_end = line(x_min);
  t.low_end_lo = t.low_end - q * se_line(x_min);
  t.low_end_hi = t.low_end + q * se_line(x_min);
  t.high_end = line(x_max);
  t.high_end_lo = t.high_end - q * se_line(x_max);
  t.high_end_hi = t.high_end + q * se_line(x_max);
  // Where the line is 0, and Fieller's interval for it: the x whose line's t interval holds 0.
  if (t.slope != 0) {
    t.crossover = std::pow(10.0, x_bar - d_bar / t.slope);
    const double g = t.slope * t.slope - q * q * s2 / sxx;
    const double disc = d_bar * d_bar * t.slope * t.slope - g * (d_bar * d_bar - q * q * s2 / n);
    if (g > 0 && disc >= 0) {  // bounded only when the slope itself is shown to be non-zero
      const double a = (-d_bar * t.slope - std::sqrt(disc)) / g, b = (-d_bar * t.slope + std::sqrt(disc)) / g;
      t.crossover_low = std::pow(10.0, x_bar + std::min(a, b));
      t.crossover_high = std::pow(10.0, x_bar + std::max(a, b));
    }
  }
  // The rungs' scatter about the line beyond what their seeds explain (a random effect per rung,
  // by the method of moments): a new size deviates from the line by as much. With one seed per
  // rung the two cannot be told apart and all the residual counts as scatter.
  const double df_within = n - static_cast<double>(t.rungs), df_lack = static_cast<double>(t.rungs) - 2;
  const double tau2 = df_within > 0 && df_lack > 0
                          ? std::max(0.0, (ss_lack / df_lack - ss_within / df_within) / (n / static_cast<double>(t.rungs)))
                          : s2;
  t.tau = std::sqrt(tau2);
  if (std::isfinite(x_target)) {
    t.at_target = line(x_target);
    // new_seeds: the mean of that many new seeds there, with their own noise (the rungs' within-rung variance)
    const double seed_var = df_within > 0 ? ss_within / df_within : s2;
    const double half = q * std::sqrt(se_line(x_target) * se_line(x_target) + tau2 + (new_seeds > 0 ? seed_var / new_seeds : 0));
    t.target_low = t.at_target - half;
    t.target_high = t.at_target + half;
  }
  return t;
}

void judge_trend(Trend& t, double alpha, double min_effect) {
  if (!std::isfinite(t.p)) {
    if (t.why.empty()) {  // else fit_trend said why
      t.verdict = TrendVerdict::no_result;
      t.why = "no test: fewer than 3 paired results";
    }
    return;
  }
  const std::string ends = "from " + format_number("%+.4f", t.low_end) + " at the smallest rung to " +
                           format_number("%+.4f", t.high_end) + " at the largest";
  if (t.p_holm < alpha) {
    const bool flips = (t.low_end_lo > 0 && t.high_end_hi < 0) || (t.low_end_hi < 0 && t.high_end_lo > 0);
    const std::string crossing =
        std::isfinite(t.crossover)
            ? "; the line crosses 0 at " + flops_text(t.crossover) + " FLOPs" +
                  (std::isfinite(t.crossover_low)
                       ? " [" + flops_text(t.crossover_low) + ", " + flops_text(t.crossover_high) + "]"
                       : std::string(" (its interval unbounded)"))
            : "";
    // where the line reaches 0 toward the larger sizes: inside the ladder, or ahead of it
    const std::string ahead = flips || std::abs(t.high_end) < std::abs(t.low_end) ? crossing : "";
    if (flips) {
      t.verdict = TrendVerdict::flips_sign;
      t.why = (t.low_end > 0 ? "better" : "worse") + std::string(" at the smallest rung, ") +
              (t.high_end > 0 ? "better" : "worse") + " at the largest (both ends' 95% CI exclude 0)" + crossing;
    } else {
      t.verdict = std::abs(t.high_end) > std::abs(t.low_end) ? TrendVerdict::grows : TrendVerdict::shrinks;
      t.why = ends + ahead;
    }
  } else if (min_effect > 0 && t.p_holds_holm < alpha) {
    t.verdict = TrendVerdict::holds;
    t.why = "changes by " + format_number("%+.4f", t.change) + " across the ladder, shown within ±" +
            format_number("%g", min_effect);
  } else {
    t.verdict = TrendVerdict::undecided;
    t.why = min_effect > 0 ? "not shown to change with scale, nor to stay within ±" + format_number("%g", min_effect) +
                                 " across the ladder"
                           : "not shown to change with scale; declare min_effect to test whether it holds";
  }
}

namespace {

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
    Trend t = fit_trend(x, d, in.design.min_effect, x_target);
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
    s.line = fit_trend(x, d, 0, x_target);
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
