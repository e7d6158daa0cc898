#include "report/eliminate/replay.h"

#include <cmath>
#include <map>

#include "report/pool/from_report.h"
#include "report/render/tables.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

using json = nlohmann::json;

ReplayStudy study_of(const Analysis& a, const std::string& name) {
  ReplayStudy s;
  s.name = name;
  s.delta = a.design.min_effect;
  for (const VariantStats& v : a.variants) {
    s.tokens += v.tokens * static_cast<double>(v.finished);
    if (!a.design.sequential() && !v.stopped.empty()) {  // --until-decided's `stopped` says its looks, not this
      s.stopped_live.push_back(v.name);
    }
  }
  for (const DeltaCurve& d : a.deltas) {
    const auto v = std::find_if(a.variants.begin(), a.variants.end(),
                                [&](const VariantStats& x) { return x.name == d.variant; });
    if (v == a.variants.end() || d.points.empty()) {
      continue;
    }
    ReplayArm arm;
    arm.name = d.variant;
    arm.curve = d.points;
    arm.improvement = v->improvement;
    arm.ci_low = v->ci_low;
    arm.ci_high = v->ci_high;
    arm.verdict = verdict_name(*v);
    arm.tokens = v->tokens * static_cast<double>(v->finished);
    s.arms.push_back(std::move(arm));
  }
  return s;
}

}  // namespace

std::vector<ReplayStudy> replay_studies(const Analysis& a, const std::string& sweep) {
  std::vector<ReplayStudy> out;
  if (a.ladder) {
    for (size_t k = 0; k < a.rungs.size() && k < a.ladder->rungs.size(); ++k) {
      out.push_back(study_of(a.rungs[k], sweep + "/" + a.ladder->rungs[k].name));
      out.back().delta = a.design.min_effect;
    }
  } else {
    out.push_back(study_of(a, sweep));
  }
  return out;
}

std::vector<ReplayStudy> replay_studies(const json& report, const std::string& where) {
  const std::string sweep = report.is_object() ? report_string(report, "sweep") : "";
  if (sweep.empty() || !report.contains("variants") || !report["variants"].is_array()) {
    throw Error(where + ": not a sweep report (no \"sweep\" and \"variants\") — name the report.json that `sweep "
                        "report --out` wrote, or its folder",
                Exit::bad_input);
  }
  if (!report.contains("delta_curves") || !report["delta_curves"].is_array()) {
    throw Error(where + ": its report has no Δ curves (\"delta_curves\") — report the sweep again with `sweep report`",
                Exit::bad_input);
  }
  const double delta = report.contains("design") ? report_number(report["design"], "min_effect") : k_nan;
  std::vector<ReplayStudy> out;
  std::map<std::string, size_t> by_rung;
  std::map<std::string, const json*> variants;
  for (const json& v : report["variants"]) {
    if (!v.is_object()) {
      continue;
    }
    const std::string rung = report_string(v, "rung");
    if (!by_rung.count(rung)) {
      by_rung[rung] = out.size();
      out.push_back({rung.empty() ? sweep : sweep + "/" + rung, delta, 0, {}, {}});
    }
    out[by_rung[rung]].tokens += report_number(v, "tokens") * report_number(v, "finished");
    variants[report_string(v, "name")] = &v;
    const bool sequential = report.contains("design") && report["design"].is_object() &&
                            report["design"].value("sequential", false) == true;
    if (!sequential && !report_string(v, "stopped").empty()) {
      out[by_rung[rung]].stopped_live.push_back(report_string(v, "name"));
    }
  }
  for (const json& d : report["delta_curves"]) {
    const auto v = variants.find(report_string(d, "variant"));
    if (v == variants.end() || !d.contains("points") || !d["points"].is_array()) {
      continue;
    }
    ReplayArm arm;
    arm.name = v->first;
    for (const json& p : d["points"]) {
      const double n = report_number(p, "seeds"), lo = report_number(p, "ci_low"), hi = report_number(p, "ci_high");
      Summary s;
      s.n = std::isfinite(n) ? static_cast<int64_t>(n) : 0;
      s.mean = report_number(p, "improvement");
      // the report keeps the 95% t interval: the seeds' standard deviation from its half-width
      s.sd = s.n >= 2 ? (hi - lo) / 2 / t_quantile(0.95, static_cast<double>(s.n - 1)) *
                            std::sqrt(static_cast<double>(s.n))
                      : k_nan;
      s.ci_low = lo;
      s.ci_high = hi;
      arm.curve.push_back({static_cast<int64_t>(report_number(p, "tokens")), s});
    }
    const json& stats = *v->second;
    arm.improvement = report_number(stats, "improvement");
    arm.ci_low = report_number(stats, "ci_low");
    arm.ci_high = report_number(stats, "ci_high");
    arm.verdict = report_string(stats, "verdict");
    arm.tokens = report_number(stats, "tokens") * report_number(stats, "finished");
    out[by_rung[report_string(stats, "rung")]].arms.push_back(std::move(arm));
  }
  return out;
}

void replay(std::vector<ReplayStudy>& studies, EliminationRule rule) {
  for (ReplayStudy& s : studies) {
    if (s.arms.empty()) {
      continue;  // a baseline alone (a noise study): nothing to stop
    }
    if (!(s.delta > 0)) {
      throw Error(s.name + ": its design has no positive min_effect (δ) — an arm is stopped only when shown worse "
                           "than −δ: set min_effect in its sweep file and report it again",
                  Exit::bad_input);
    }
    rule.delta = s.delta;
    std::vector<ArmLooks> looks;
    for (const ReplayArm& a : s.arms) {
      looks.push_back(arm_looks(a.curve, rule));
    }
    const std::vector<Elimination> out = eliminate_study(looks, rule);
    for (size_t i = 0; i < s.arms.size(); ++i) {
      s.arms[i].elimination = out[i];
      for (size_t j = 0; j < rule.looks.size(); ++j) {
        if (!looks[i].at[j] || !looks[i].before[j]) {  // no point with 2 seeds there, or none before it
          s.arms[i].unjudged.push_back(rule.looks[j]);
        }
      }
    }
  }
}

nlohmann::ordered_json replay_json(const std::vector<ReplayStudy>& studies, const EliminationRule& rule) {
  using ojson = nlohmann::ordered_json;
  const auto number = [](double x) { return std::isfinite(x) ? ojson(x) : ojson(nullptr); };
  ojson out{{"rule",
             {{"looks", rule.looks}, {"kept", rule.kept}, {"span", rule.span}, {"alpha", rule.alpha}}},
            {"studies", ojson::array()}};
  int64_t arms = 0, stopped = 0, not_worse = 0, false_eliminations = 0;
  double saved = 0, total = 0;
  for (const ReplayStudy& s : studies) {
    ojson study{{"study", s.name},
                {"min_effect", number(s.delta)},
                {"tokens", s.tokens},
                {"arms", ojson::array()},
                {"stopped_live", s.stopped_live}};
    total += s.tokens;
    for (const ReplayArm& a : s.arms) {
      const Elimination& e = a.elimination;
      const double arm_saved = e.stopped ? (1 - e.fraction) * a.tokens : 0;
      ++arms;
      stopped += e.stopped;
      not_worse += e.stopped && a.verdict != "worse";
      false_eliminations += e.stopped && a.improvement >= -s.delta;
      saved += arm_saved;
      ojson arm{{"arm", a.name},
                {"stopped", e.stopped},
                {"at", e.stopped ? ojson(e.fraction) : ojson(nullptr)},
                {"delta_there", e.stopped ? number(e.mean) : ojson(nullptr)},
                {"upper", e.stopped ? number(e.upper) : ojson(nullptr)},
                {"threshold", e.stopped ? number(e.threshold) : ojson(nullptr)},
                {"improvement", number(a.improvement)},
                {"ci", {number(a.ci_low), number(a.ci_high)}},
                {"verdict", a.verdict},
                {"tokens", a.tokens},
                {"tokens_saved", arm_saved},
                {"unjudged_looks", a.unjudged}};
      study["arms"].push_back(std::move(arm));
    }
    out["studies"].push_back(std::move(study));
  }
  out["summary"] = {{"arms", arms},
                    {"stopped", stopped},
                    {"stopped_not_worse", not_worse},
                    {"false_eliminations", false_eliminations},
                    {"tokens_saved", saved},
                    {"tokens", total}};
  return out;
}

std::string replay_text(const std::vector<ReplayStudy>& studies, const EliminationRule& rule) {
  std::string looks, kept;
  for (size_t j = 0; j < rule.looks.size(); ++j) {
    looks += (j ? ", " : "") + percent_of_training(rule.looks[j]);
    kept += (j ? ", " : "") + format_number("%g", rule.kept[j]);
  }
  std::string out = "Replayed through --eliminate: looks at " + looks + " of training, kept shares " + kept +
                    ", false elimination " + format_number("%g", rule.alpha) + " per study.\n\n";
  out += "| study | arm | stopped | Δ there | its bound | threshold | final Δ | 95% CI | full design | tokens saved |\n"
         "|:--|:--|--:|--:|--:|--:|--:|--:|:--|--:|\n";
  int64_t arms = 0, stopped = 0, not_worse = 0, false_eliminations = 0;
  double saved = 0, total = 0, worse_tokens = 0, worse_saved = 0;
  std::vector<std::string> unjudged, live;
  for (const ReplayStudy& s : studies) {
    total += s.tokens;
    for (const std::string& name : s.stopped_live) {
      live.push_back(s.name + " `" + name + "`");
    }
    for (const ReplayArm& a : s.arms) {
      ++arms;
      std::string at;
      for (const double f : a.unjudged) {
        at += (at.empty() ? "" : ", ") + percent_of_training(f);
      }
      if (!at.empty()) {
        unjudged.push_back(s.name + " `" + a.name + "` at " + at);
      }
      const Elimination& e = a.elimination;
      const double arm_saved = e.stopped ? (1 - e.fraction) * a.tokens : 0;
      saved += arm_saved;
      if (a.verdict == "worse") {
        worse_tokens += a.tokens;
        worse_saved += arm_saved;
      }
      if (!e.stopped) {
        continue;
      }
      ++stopped;
      not_worse += a.verdict != "worse";
      false_eliminations += a.improvement >= -s.delta;
      out += "| " + s.name + " | `" + a.name + "` | " + format_number("%g", 100 * e.fraction) + "% | " +
             format_number("%+.4f", e.mean) + " | " + format_number("%+.4f", e.upper) + " | " +
             format_number("%+.4f", e.threshold) + " | " + format_number("%+.4f", a.improvement) + " | [" +
             format_number("%+.4f", a.ci_low) + ", " + format_number("%+.4f", a.ci_high) + "] | " + a.verdict + " | " +
             format_number("%.0f", arm_saved) + " |\n";
    }
  }
  out += "\n" + std::to_string(stopped) + " of " + plural(arms, "arm") + " stopped; " + std::to_string(not_worse) +
         " of them not \"worse\" in the full design, " + std::to_string(false_eliminations) +
         " with a final improvement ≥ −δ (a false elimination). Tokens saved: " +
         (worse_tokens > 0
              ? format_number("%.1f", 100 * worse_saved / worse_tokens) + "% of the arms that ended worse, "
              : std::string("no arm ended worse; ")) +
         (total > 0 ? format_number("%.1f", 100 * saved / total) : "-") + "% of every run's.\n";
  if (!live.empty()) {
    out += "\nStopped live by --eliminate, not replayed (their runs did not finish): " + join(live, "; ") + ".\n";
  }
  if (!unjudged.empty()) {
    out += "\nNot judged at every look (their curves have no point with 2 seeds there, or none " +
           format_number("%g", 100 * rule.span) + "% of training before): " +
           join(unjudged, "; ") + ".\n";
  }
  return out;
}

}  // namespace sweep
