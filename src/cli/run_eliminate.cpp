#include "cli/run_eliminate.h"

#include <algorithm>
#include <map>
#include <set>

#include "cli/results.h"
#include "config/branch.h"
#include "cli/validators.h"
#include "report/eliminate/live.h"
#include "report/load.h"
#include "store/results_folder.h"
#include "util/text.h"

namespace sweep::commands {

namespace {

std::vector<std::string> run_ids(const SweepSpec& spec, const std::string& variant = "") {
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

// Why --eliminate cannot run on `spec` as it is ("" when it can).
std::string sweep_problem(const SweepSpec& spec, const EliminationRule& rule) {
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
  if (!(spec.design.min_effect > 0)) {
    return head + "an arm is stopped only when shown worse than −δ: " + spec.file +
           " has no min_effect — add one (e.g. `min_effect: 0.005`, the smallest change in test loss that matters)";
  }
  if (const std::string problem = rule_problem(rule); !problem.empty()) {
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
    if (const std::string problem = look_problem(run.config, rule); !problem.empty()) {
      return head + "variant '" + run.variant + "': " + problem;
    }
  }
  return "";
}

// Why the folder's record cannot go on under `spec` ("" when it can): its looks judged another δ,
// or other runs (the sweep file changed since).
std::string record_problem(const RunOptions& o, const SweepSpec& spec, const EliminationDesign& record) {
  const std::string where = " (" + saved_file(o.results, spec.name, ".eliminated").string() + ")";
  const std::string fix = " — go on in another --results folder, or run it without --eliminate (the fixed design)";
  if (record.delta != spec.design.min_effect) {
    return "--eliminate: sweep " + spec.name + "'s looks judged by min_effect " + format_number("%g", record.delta) +
           where + ", and " + spec.file + " says " + format_number("%g", spec.design.min_effect) + fix;
  }
  if (record.runs != run_ids(spec)) {
    std::vector<std::string> changed;
    std::set<std::string> recorded(record.runs.begin(), record.runs.end());
    for (const Variant& v : spec.variants) {
      const std::vector<std::string> now = run_ids(spec, v.name);
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

class EliminationLooks : public Looks {
 public:
  EliminationLooks(const RunOptions& o, const SweepSpec& spec, Store& store)
      : m_results(o.results), m_store(store), m_design(*spec.design.eliminate) {
    for (const Variant& v : spec.variants) {
      if (v.name != spec.baseline) {
        m_arms.insert(v.name);
      }
    }
  }

  std::optional<int64_t> pause_at(const PlannedRun& run) const override {
    const bool arm_left = std::any_of(m_arms.begin(), m_arms.end(),
                                      [&](const std::string& arm) { return !m_design.stopped.count(arm); });
    if (!arm_left || m_design.looks_taken >= m_design.settings.looks.size()) {
      return std::nullopt;  // no look left, or no arm left to judge
    }
    return look_step(run.config, m_design.settings.looks[m_design.looks_taken]);
  }
  bool stopped(const PlannedRun& run) const override { return m_design.stopped.count(run.variant) > 0; }
  std::string take(SweepSpec& spec) override {
    const std::string said = take_elimination_look(m_store, spec);
    m_design = *spec.design.eliminate;
    save_elimination(m_results, spec.name, m_design);
    return said;
  }

 private:
  std::string m_results;
  Store& m_store;
  EliminationDesign m_design;
  std::set<std::string> m_arms;  // every variant but the baseline
};

}  // namespace

void prepare_elimination(const RunOptions& o, SweepSpec& spec) {
  spec.design.eliminate = read_saved_elimination(o.results, spec.name);
  const std::optional<EliminationDesign>& record = spec.design.eliminate;
  if (record && (o.until_decided || spec.design.sequential())) {
    throw Error("--until-decided: sweep " + spec.name + " was run --eliminate (" +
                    saved_file(o.results, spec.name, ".eliminated").string() +
                    "): adding seeds to arms it judged is another design — run it in another --results folder",
                Exit::bad_input);
  }
  if (!o.eliminate) {
    const std::set<std::string> done = finished_runs(spec, database_path(o.results));
    std::vector<std::string> left;  // stopped arms with runs to finish
    for (const auto& [variant, how] : record ? record->stopped : std::map<std::string, Elimination>{}) {
      const std::vector<std::string> ids = run_ids(spec, variant);
      const bool unfinished =
          std::any_of(ids.begin(), ids.end(), [&](const std::string& id) { return !done.count(id); });
      if (how.runs == ids && unfinished) {
        left.push_back(variant);
      }
    }
    if (!left.empty()) {
      std::printf("sweep %s was run --eliminate, which stopped %s: this run trains %s to the end (a fixed design; "
                  "--eliminate keeps %s stopped)\n",
                  spec.name.c_str(), join(left, ", ").c_str(), left.size() == 1 ? "it" : "them",
                  left.size() == 1 ? "it" : "them");
    }
    return;
  }
  if (o.until_decided || spec.design.sequential()) {
    throw Error(std::string("--eliminate: ") +
                    (o.until_decided ? "not with --until-decided"
                                     : "sweep " + spec.name + " was run --until-decided (its seeds added round by "
                                                              "round)") +
                    " — seeds added to an arm and arms stopped are two designs: choose one, or another --results",
                Exit::bad_input);
  }
  EliminationSettings asked;
  if (!o.looks.empty()) {
    asked.looks = validate::number_list("--looks", o.looks, "0.3,0.5,0.75 (fractions of training)");
  }
  if (!o.kept.empty()) {
    asked.kept = validate::number_list("--kept", o.kept, "0.2,0.2,0.4 (one share per look)");
  }
  if (record) {
    if ((!o.looks.empty() || !o.kept.empty()) && !same_settings(asked, record->settings)) {
      throw Error("--eliminate: sweep " + spec.name + " was run --eliminate with " + settings_text(record->settings) +
                      " (" + saved_file(o.results, spec.name, ".eliminated").string() +
                      ") — go on with those (leave out --looks and --kept), or use another --results",
                  Exit::bad_input);
    }
    if (const std::string problem = record_problem(o, spec, *record); !problem.empty()) {
      throw Error(problem, Exit::bad_input);
    }
  } else {
    spec.design.eliminate = EliminationDesign{asked, spec.design.min_effect, run_ids(spec), 0, {}};
  }
  if (const std::string problem = sweep_problem(spec, rule_of(spec.design)); !problem.empty()) {
    throw Error(problem, Exit::bad_input);
  }
}

std::shared_ptr<Looks> elimination_looks(const RunOptions& o, const SweepSpec& spec, Store& store) {
  if (!o.eliminate) {
    return nullptr;
  }
  save_elimination(o.results, spec.name, *spec.design.eliminate);
  return std::make_shared<EliminationLooks>(o, spec, store);
}

}  // namespace sweep::commands
