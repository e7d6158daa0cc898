#include "report/eliminate/live.h"

#include <cmath>

#include "report/curves.h"
#include "util/text.h"

namespace sweep {

EliminationRule rule_of(const SeedDesign& design) {
  EliminationRule rule;
  if (design.eliminate) {
    static_cast<EliminationSettings&>(rule) = design.eliminate->settings;
  }
  rule.delta = design.min_effect;
  return rule;
}

std::optional<int64_t> look_step(const RunConfig& c, double fraction) {
  const int64_t total = planned_steps(c), every = c.eval.every;
  if (every <= 0 || total <= 0) {
    return std::nullopt;
  }
  const auto at = static_cast<int64_t>(std::ceil(fraction * static_cast<double>(total) - 1e-9));
  const int64_t step = (at + every - 1) / every * every;  // the first validation point at or after it
  return step < total ? std::optional<int64_t>(step) : std::nullopt;
}

std::string look_problem(const RunConfig& c, const EliminationRule& rule) {
  const int64_t total = planned_steps(c), every = c.eval.every;
  const std::string of = "(eval.every " + std::to_string(every) + " of its " + std::to_string(total) + " steps)";
  for (const double fraction : rule.looks) {
    const double before = (fraction - rule.span) * static_cast<double>(total);
    if (every <= 0 || static_cast<double>(every) > before) {
      return "its first validation point after step 0 comes after " + percent_of_training(fraction - rule.span) +
             " of training, where its look at " + percent_of_training(fraction) + " reads its curve " + of +
             " — a smaller eval.every, or later --looks";
    }
    if (!look_step(c, fraction)) {
      return "it has no validation point after its look at " + percent_of_training(fraction) +
             " before the end of training " + of + " — a smaller eval.every, or earlier --looks";
    }
  }
  return "";
}

std::vector<std::pair<std::string, Elimination>> judge_looks(const ReportInput& in, const EliminationRule& rule,
                                                             size_t looks) {
  const VariantRuns* base = find_variant(in, in.baseline);
  std::vector<std::string> names;
  std::vector<ArmLooks> arms;
  for (const VariantRuns& v : in.variants) {
    if (base == nullptr || v.name == in.baseline) {
      continue;
    }
    names.push_back(v.name);
    arms.push_back(arm_looks(paired_delta_points(base->runs, v.runs, /*unfinished=*/true), rule,
                             static_cast<double>(v.end_tokens), looks));
  }
  const std::vector<Elimination> judged = eliminate_study(arms, rule);
  std::vector<std::pair<std::string, Elimination>> out;
  for (size_t i = 0; i < judged.size(); ++i) {
    if (judged[i].stopped) {
      out.emplace_back(names[i], judged[i]);
    }
  }
  return out;
}

void apply_eliminations(const ReportInput& in, std::vector<VariantStats>& variants, std::vector<std::string>& notes) {
  if (!in.design.eliminate || in.design.eliminate->stopped.empty()) {
    return;
  }
  double planned = 0, saved = 0;  // tokens: every run's budget, and what the stopped runs did not train
  for (const VariantRuns& v : in.variants) {
    const bool stopped = in.design.eliminate->stopped.count(v.name) > 0;
    for (const ReportRun& r : v.runs) {
      planned += static_cast<double>(v.end_tokens);
      if (stopped && !finished(r.status)) {
        saved += static_cast<double>(std::max<int64_t>(0, v.end_tokens - r.tokens));
      }
    }
  }
  std::vector<std::string> stopped_now, finished_later;
  for (VariantStats& s : variants) {
    const auto it = in.design.eliminate->stopped.find(s.name);
    if (it == in.design.eliminate->stopped.end()) {
      continue;
    }
    const Elimination& e = it->second;
    const std::string where = "stopped at " + percent_of_training(e.fraction) + " of training";
    if (s.runs > 0 && s.finished == s.runs) {  // trained to the end since: judged on its results
      finished_later.push_back("`" + s.name + "` (" + where + ")");
      continue;
    }
    stopped_now.push_back("`" + s.name + "`");
    s.verdict = Verdict::worse;
    s.method = Method::paired;
    s.seeds = e.seeds;
    s.improvement = e.mean;
    s.ci_high = e.upper;
    s.ci_low = 2 * e.mean - e.upper;  // the look's interval, symmetric about Δ there
    s.p = s.p_holm = s.p_equivalence = s.p_equivalence_holm = s.p_better_by = s.p_better_by_holm = std::nan("");
    s.below_min_effect = false;
    s.stopped = where + ": Δ " + format_number("%+.4f", e.mean) + ", bound " + format_number("%+.4f", e.upper) +
                " < " + format_number("%+.4f", e.threshold);
  }
  const EliminationRule rule = rule_of(in.design);
  std::string looks;
  for (size_t j = 0; j < rule.looks.size(); ++j) {
    looks += (j ? ", " : "") + percent_of_training(rule.looks[j]) + " (kept " + format_number("%g", rule.kept[j]) + ")";
  }
  if (!stopped_now.empty()) {
    notes.push_back("--eliminate stopped " + join(stopped_now, ", ") +
                    " before the end of training: shown worse than −δ/kept at a look (looks at " + looks +
                    ", false-elimination probability " + format_number("%g", rule.alpha) + " over the study, δ = " +
                    format_number("%g", rule.delta) +
                    "); the interval is the look's; in Holm's step-down over the other arms a stopped arm counts as "
                    "shown worse; its runs keep their checkpoints (`sweep run` without --eliminate finishes them). " +
                    format_count(saved) + " of the sweep's " + format_count(planned) + " tokens (" +
                    format_number("%.1f", planned > 0 ? 100 * saved / planned : 0) + "%) not trained");
  }
  if (!finished_later.empty()) {
    notes.push_back("--eliminate stopped " + join(finished_later, ", ") +
                    ", trained to the end since: judged on its finished runs");
  }
}

}  // namespace sweep
