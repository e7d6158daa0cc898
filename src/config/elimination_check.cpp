#include "config/elimination_check.h"

#include <algorithm>
#include <map>
#include <set>

#include "config/branch.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

std::optional<int64_t> look_step(const RunConfig& c, double fraction) { return validation_step_at(c, fraction); }

std::string look_problem(const RunConfig& c, const EliminationSettings& settings) {
  const int64_t total = planned_steps(c), every = c.eval.every;
  const std::string of = "(eval.every " + std::to_string(every) + " of its " + std::to_string(total) + " steps)";
  for (const double fraction : settings.looks) {
    const double before = (fraction - settings.span) * static_cast<double>(total);
    if (every <= 0 || static_cast<double>(every) > before) {
      return "its first validation point after step 0 comes after " + percent_of_training(fraction - settings.span) +
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

std::vector<std::string> run_ids_of(const SweepSpec& spec, const std::string& variant) {
  std::vector<std::string> ids;
  for (const PlannedRun& run : spec.runs) {
    if (variant.empty() || run.variant == variant) {
      ids.push_back(run.run_id);
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

namespace {

// Why --eliminate cannot run on `spec` as it is ("" when it can).
std::string sweep_problem(const SweepSpec& spec, const EliminationSettings& settings, double delta) {
  const std::string head = "--eliminate: ";
  if (spec.trainer) {
    return head + "a trainer of your own cannot be paused at a look — run the sweep without --eliminate";
  }
  if (any_branched(spec)) {
    return head + "a sweep whose interventions branch from the baseline's checkpoint (`branch:`) is not supported "
                  "yet — run it without --eliminate";
  }
  if (spec.ladder) {
    return head + "a scale ladder's rungs are studies of their own, each against its own baseline — run it "
                  "without --eliminate";
  }
  if (!spec.axes.empty()) {
    return head + "each arm is judged against the one baseline: a sweep with " + to_string(spec.axes.front().kind) +
           " axes is not supported — run it without --eliminate";
  }
  if (spec.variants.size() < 2) {
    return head + spec.file + " has no arm but its baseline — nothing to stop";
  }
  if (!(delta > 0)) {
    return head + "an arm is stopped only when shown worse than −δ: " + spec.file +
           " has no min_effect — add one (e.g. `min_effect: 0.005`, the smallest change in test loss that matters)";
  }
  if (const std::string problem = rule_problem(settings, delta); !problem.empty()) {
    return head + problem;
  }
  std::map<std::string, std::set<std::pair<int64_t, int64_t>>> seeds;
  for (const PlannedRun& run : spec.runs) {
    seeds[run.variant].insert({run.config.seeds.init, run.config.seeds.data});
  }
  for (const auto& [variant, s] : seeds) {
    if (s.size() < 2) {
      return head + "each arm's paired Δ is tested over its seeds: variant '" + variant + "' has " +
             plural(static_cast<int64_t>(s.size()), "seed") + " — give the sweep 2 or more (`seeds: [1, 2, 3]`)";
    }
  }
  for (const PlannedRun& run : spec.runs) {
    if (const std::string problem = look_problem(run.config, settings); !problem.empty()) {
      return head + "variant '" + run.variant + "': " + problem;
    }
  }
  return "";
}

// Why the record cannot go on under `spec` ("" when it can): its looks judged another δ, or other
// runs (the sweep file changed since). A rename, or two arms' names swapped, changes no run: the
// stops follow their runs.
std::string record_problem(const SweepSpec& spec, const EliminationDesign& record, const std::string& file) {
  const std::string where = " (" + file + ")";
  const std::string fix = " — go on in another --results folder, or run it without --eliminate (the fixed design)";
  if (record.delta != spec.design.min_effect) {
    return "--eliminate: sweep " + spec.name + "'s looks judged by min_effect " + format_number("%g", record.delta) +
           where + ", and " + spec.file + " says " + format_number("%g", spec.design.min_effect) + fix;
  }
  // the baseline each Δ was judged against: another one (the file's baseline: renamed to an arm, or
  // to the stopped arm) makes every stop a comparison with something else
  const std::vector<std::string> baseline = run_ids_of(spec, spec.baseline);
  const bool stopped_baseline =
      std::any_of(baseline.begin(), baseline.end(), [&](const std::string& id) { return record.stop_of(id); });
  if ((!record.baseline_runs.empty() && record.baseline_runs != baseline) || stopped_baseline) {
    return "--eliminate: sweep " + spec.name + "'s looks judged each arm against the baseline it had then, and " +
           spec.file + "'s baseline '" + spec.baseline + "' is " +
           (stopped_baseline ? "an arm a look stopped" : "another variant's runs") + where +
           " — give the file its baseline back" + fix;
  }
  if (record.runs != run_ids_of(spec)) {
    std::vector<std::string> changed;
    const std::set<std::string> recorded(record.runs.begin(), record.runs.end());
    for (const Variant& v : spec.variants) {
      const std::vector<std::string> now = run_ids_of(spec, v.name);
      if (std::any_of(now.begin(), now.end(), [&](const std::string& id) { return !recorded.count(id); })) {
        changed.push_back(v.name);
      }
    }
    return "--eliminate: sweep " + spec.name + "'s looks judged other runs than " + spec.file + " gives it now" +
           (changed.empty() ? std::string(" (runs were removed)") : " (new runs of " + join(changed, ", ") + ")") +
           where + fix;
  }
  return "";
}

bool same_settings(const EliminationSettings& a, const EliminationSettings& b) {
  return a.looks == b.looks && a.kept == b.kept && a.span == b.span && a.alpha == b.alpha;
}

std::string settings_text(const EliminationSettings& s) {
  std::vector<std::string> looks, kept;
  for (size_t j = 0; j < s.looks.size(); ++j) {
    looks.push_back(format_number("%g", s.looks[j]));
    kept.push_back(format_number("%g", s.kept[j]));
  }
  return "--looks " + join(looks, ",") + " --kept " + join(kept, ",");
}

}  // namespace

void admit_elimination(SweepSpec& spec, const EliminationRequest& request) {
  const std::optional<EliminationDesign>& record = spec.design.eliminate;
  if (record && (request.until_decided || spec.design.sequential())) {
    throw Error("--until-decided: sweep " + spec.name + " was run --eliminate (" + request.record_file +
                    "): adding seeds to arms it judged is another design — run it in another --results folder",
                Exit::bad_input);
  }
  if (!request.eliminate) {
    return;  // a fixed design: every run trains to its end; the record, if any, says how some were stopped
  }
  if (request.until_decided || spec.design.sequential()) {
    throw Error(std::string("--eliminate: ") +
                    (request.until_decided ? "not with --until-decided"
                                           : "sweep " + spec.name +
                                                 " was run --until-decided (its seeds added round by round)") +
                    " — seeds added to an arm and arms stopped are two designs: choose one, or another --results",
                Exit::bad_input);
  }
  const EliminationSettings asked = request.asked.value_or(EliminationSettings{});
  if (record) {
    if (request.asked && !same_settings(asked, record->settings)) {
      throw Error("--eliminate: sweep " + spec.name + " was run --eliminate with " + settings_text(record->settings) +
                      " (" + request.record_file + ") — go on with those (leave out --looks and --kept), or use "
                      "another --results",
                  Exit::bad_input);
    }
    if (const std::string problem = record_problem(spec, *record, request.record_file); !problem.empty()) {
      throw Error(problem, Exit::bad_input);
    }
  } else {
    spec.design.eliminate =
        EliminationDesign{asked, spec.design.min_effect, run_ids_of(spec), run_ids_of(spec, spec.baseline), 0, {}};
  }
  const EliminationDesign& design = *spec.design.eliminate;
  if (const std::string problem = sweep_problem(spec, design.settings, design.delta); !problem.empty()) {
    throw Error(problem, Exit::bad_input);
  }
}

}  // namespace sweep
