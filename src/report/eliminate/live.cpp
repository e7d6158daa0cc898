#include "report/eliminate/live.h"

#include <algorithm>
#include <cmath>

#include "report/curves.h"
#include "util/text.h"

namespace sweep {

EliminationRule rule_of(const SeedDesign& design) {
  EliminationRule rule;
  rule.delta = design.min_effect;
  if (design.eliminate) {
    static_cast<EliminationSettings&>(rule) = design.eliminate->settings;
    rule.delta = design.eliminate->delta;
  }
  return rule;
}

namespace {

std::vector<std::string> run_ids(const VariantRuns& v) {
  std::vector<std::string> ids;
  for (const ReportRun& r : v.runs) {
    ids.push_back(r.run_id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool any_diverged(const VariantRuns& v) {
  return std::any_of(v.runs.begin(), v.runs.end(), [](const ReportRun& r) { return r.status == RunState::diverged; });
}

bool all_finished(const VariantRuns& v) {
  return !v.runs.empty() &&
         std::all_of(v.runs.begin(), v.runs.end(), [](const ReportRun& r) { return finished(r.status); });
}

// Whether the record's looks judged the arms against the sweep's baseline as it is now (an older
// record does not say: taken as so).
bool same_baseline(const ReportInput& in) {
  const VariantRuns* base = find_variant(in, in.baseline);
  return in.design.eliminate->baseline_runs.empty() ||
         (base != nullptr && in.design.eliminate->baseline_runs == run_ids(*base));
}

// The record's stop of one of `v`'s runs (null: none of them was stopped, or `v` is the baseline).
const Elimination* stop_among(const ReportInput& in, const VariantRuns& v) {
  if (!in.design.eliminate || v.name == in.baseline) {
    return nullptr;
  }
  for (const ReportRun& r : v.runs) {
    if (const Elimination* e = in.design.eliminate->stop_of(r.run_id)) {
      return e;
    }
  }
  return nullptr;
}

// The record's stop of `v` when its runs are the ones it judged, against the baseline it has now; else null.
const Elimination* recorded_stop(const ReportInput& in, const VariantRuns& v) {
  const Elimination* e = stop_among(in, v);
  return e != nullptr && e->runs == run_ids(v) && same_baseline(in) ? e : nullptr;
}

// "`B`", or "`B` (stopped as `A`)" when the arm was renamed since.
std::string arm_named(const VariantRuns& v, const Elimination& e) {
  return "`" + v.name + "`" + (e.arm.empty() || e.arm == v.name ? "" : " (stopped as `" + e.arm + "`)");
}

}  // namespace

const Elimination* stop_of(const ReportInput& in, const VariantRuns& v) {
  return all_finished(v) ? nullptr : recorded_stop(in, v);
}

LookJudgement judge_look(const ReportInput& in, const EliminationRule& rule, size_t look) {
  LookJudgement out;
  const VariantRuns* base = find_variant(in, in.baseline);
  const bool base_diverged = base != nullptr && any_diverged(*base);
  std::vector<const VariantRuns*> judged;
  std::vector<ArmLooks> arms;
  for (const VariantRuns& v : in.variants) {
    if (base == nullptr || v.name == in.baseline) {
      continue;
    }
    ArmLooks a;  // empty at every look but this one; an arm not judged stays empty (counted in the level)
    a.at.assign(rule.looks.size(), std::nullopt);
    a.before.assign(rule.looks.size(), std::nullopt);
    const bool stopped_before = stop_among(in, v) != nullptr;
    if (!stopped_before && all_finished(v) && any_diverged(v)) {  // ended already: named, as every arm not judged
      out.unjudged.push_back(v.name + " (it has a diverged run)");
    } else if (!stopped_before && !all_finished(v)) {
      if (base_diverged || any_diverged(v)) {
        out.unjudged.push_back(v.name + " (" + (base_diverged ? "the baseline has" : "it has") + " a diverged run)");
      } else {
        const auto curve = paired_delta_points(base->runs, v.runs, /*unfinished=*/true);
        const auto end = static_cast<double>(v.end_tokens);
        a.at[look] = delta_at(curve, rule.looks[look], end);
        a.before[look] = delta_at(curve, rule.looks[look] - rule.span, end);
        if (!a.at[look] || !a.before[look]) {
          out.unjudged.push_back(v.name + " (no point with 2 seeds there)");
        }
      }
    }
    judged.push_back(&v);
    arms.push_back(std::move(a));
  }
  const std::vector<Elimination> verdicts = eliminate_study(arms, rule);
  for (size_t i = 0; i < verdicts.size(); ++i) {
    if (verdicts[i].stopped) {
      Elimination e = verdicts[i];
      e.runs = run_ids(*judged[i]);
      e.arm = judged[i]->name;
      out.stopped.push_back(std::move(e));
    }
  }
  return out;
}

void apply_eliminations(const ReportInput& in, std::vector<VariantStats>& variants, std::vector<std::string>& notes) {
  if (!in.design.eliminate || in.design.eliminate->stopped.empty()) {
    return;
  }
  const EliminationDesign& design = *in.design.eliminate;
  double planned = 0, saved = 0;  // tokens: every run's budget, and what the stopped runs did not train
  std::vector<std::string> stopped_now, finished_later, other_runs;
  for (const VariantRuns& v : in.variants) {
    const bool applies = stop_of(in, v) != nullptr;
    for (const ReportRun& r : v.runs) {
      planned += static_cast<double>(v.end_tokens);
      if (applies) {
        saved += static_cast<double>(std::max<int64_t>(0, v.end_tokens - r.tokens));
      }
    }
    const Elimination* recorded = stop_among(in, v);
    if (recorded == nullptr) {
      continue;
    }
    const Elimination& e = *recorded;
    const std::string where = "stopped at " + percent_of_training(e.fraction) + " of training";
    if (!recorded_stop(in, v)) {
      other_runs.push_back(arm_named(v, e));
      continue;
    }
    if (!applies) {  // trained to the end since: judged on its results
      finished_later.push_back(arm_named(v, e) + " (" + where + ")");
      continue;
    }
    stopped_now.push_back(arm_named(v, e));
    const auto s =
        std::find_if(variants.begin(), variants.end(), [&](const VariantStats& x) { return x.name == v.name; });
    if (s == variants.end()) {
      continue;
    }
    s->verdict = Verdict::worse;
    s->method = Method::paired;
    s->seeds = e.seeds;
    s->summary = Summary{};  // no final value: its runs stopped at the look
    s->improvement = e.mean;
    s->ci_high = e.upper;
    s->ci_low = 2 * e.mean - e.upper;  // the look's interval, symmetric about Δ there
    s->p = s->p_holm = s->p_equivalence = s->p_equivalence_holm = s->p_better_by = s->p_better_by_holm = std::nan("");
    s->correlation = s->prob_improvement = std::nan("");
    s->below_min_effect = false;
    s->seeds_needed = -1;
    s->stopped = where + ": Δ " + format_number("%+.4f", e.mean) + ", bound " + format_number("%+.4f", e.upper) +
                 " < " + format_number("%+.4f", e.threshold);
  }
  std::string looks;
  for (size_t j = 0; j < design.settings.looks.size(); ++j) {
    looks += (j ? ", " : "") + percent_of_training(design.settings.looks[j]) + " (kept " +
             format_number("%g", design.settings.kept[j]) + ")";
  }
  if (!stopped_now.empty()) {
    notes.push_back("--eliminate stopped " + join(stopped_now, ", ") +
                    " before the end of training: shown worse than −δ/kept at a look on the validation loss "
                    "(looks at " + looks + ", false-elimination probability " +
                    format_number("%g", design.settings.alpha) + " over the study, δ = " +
                    format_number("%g", design.delta) +
                    "); its interval is the look's Δ and bound; in Holm's step-down over the other arms a stopped arm "
                    "counts as shown worse; `sweep run` without --eliminate trains it to the end (from its "
                    "checkpoints, where the folder has them). " +
                    format_count(saved) + " of the sweep's " + format_count(planned) + " tokens (" +
                    format_number("%.1f", planned > 0 ? 100 * saved / planned : 0) + "%) not trained");
  }
  if (!finished_later.empty()) {
    notes.push_back("--eliminate stopped " + join(finished_later, ", ") +
                    ", trained to the end since: judged on its finished runs");
  }
  if (!other_runs.empty()) {
    notes.push_back("--eliminate's record stopped runs of " + join(other_runs, ", ") +
                    (same_baseline(in) ? ", which the sweep file now gives other runs beside them"
                                       : ", judged against another baseline than the sweep file's now") +
                    ": not applied, judged on its results");
  }
}

}  // namespace sweep
