#include "cli/run_eliminate.h"

#include <map>
#include <set>

#include "cli/validators.h"
#include "report/eliminate/live.h"
#include "report/load.h"
#include "store/results_folder.h"
#include "util/text.h"

namespace sweep::commands {

namespace {

// Why --eliminate cannot run on `spec` as it is ("" when it can).
std::string sweep_problem(const RunOptions& o, const SweepSpec& spec, const EliminationRule& rule) {
  const std::string head = "--eliminate: ";
  if (o.until_decided) {
    return head + "not with --until-decided (seeds added to an arm and arms stopped are two designs) — choose one";
  }
  if (spec.trainer) {
    return head + "a trainer of your own cannot be paused at a look — run the sweep without --eliminate";
  }
  if (!spec.axes.empty()) {
    return head + "each arm is judged against the one baseline: a sweep with " + to_string(spec.axes.front().kind) +
           " axes is not supported — run it without --eliminate";
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
  EliminationLooks(const RunOptions& o, Store& store, EliminationDesign design)
      : m_results(o.results), m_store(store), m_design(std::move(design)) {}

  std::optional<int64_t> pause_at(const PlannedRun& run) const override {
    if (m_design.looks_taken >= m_design.settings.looks.size()) {
      return std::nullopt;
    }
    return look_step(run.config, m_design.settings.looks[m_design.looks_taken]);
  }
  bool stopped(const PlannedRun& run) const override { return m_design.stopped.count(run.variant) > 0; }
  std::string take(SweepSpec& spec) override {
    const std::string said = take_elimination_look(m_store, spec);
    keep(spec);
    return said;
  }
  std::string abandon(SweepSpec& spec) override {
    spec.design.eliminate->looks_taken = spec.design.eliminate->settings.looks.size();
    keep(spec);
    return "--eliminate: no more looks — some runs failed or were skipped, an arm's seeds would be missing; the "
           "runs left train to their end (`sweep run --retry-failed` for the failed ones)";
  }

 private:
  void keep(const SweepSpec& spec) {
    m_design = *spec.design.eliminate;
    save_elimination(m_results, spec.name, m_design);
  }
  std::string m_results;
  Store& m_store;
  EliminationDesign m_design;
};

}  // namespace

void prepare_elimination(const RunOptions& o, SweepSpec& spec) {
  spec.design.eliminate = read_saved_elimination(o.results, spec.name);
  if (!o.eliminate) {
    if (spec.design.eliminate && !spec.design.eliminate->stopped.empty()) {
      std::printf("sweep %s was run --eliminate: %s stopped — this run trains them to the end (a fixed design; "
                  "--eliminate keeps them stopped)\n",
                  spec.name.c_str(),
                  plural(static_cast<int64_t>(spec.design.eliminate->stopped.size()), "arm").c_str());
    }
    return;
  }
  EliminationSettings asked;
  if (!o.looks.empty()) {
    asked.looks = validate::number_list("--looks", o.looks, "0.3,0.5,0.75 (fractions of training)");
  }
  if (!o.kept.empty()) {
    asked.kept = validate::number_list("--kept", o.kept, "0.2,0.2,0.4 (one share per look)");
  }
  if (spec.design.eliminate && (!o.looks.empty() || !o.kept.empty()) &&
      !same_settings(asked, spec.design.eliminate->settings)) {
    throw Error("--eliminate: sweep " + spec.name + " was run --eliminate with " +
                    settings_text(spec.design.eliminate->settings) + " (" +
                    saved_file(o.results, spec.name, ".eliminated").string() +
                    ") — go on with those (leave out --looks and --kept), or use another --results",
                Exit::bad_input);
  }
  if (!spec.design.eliminate) {
    spec.design.eliminate = EliminationDesign{asked, 0, {}};
  }
  if (const std::string problem = sweep_problem(o, spec, rule_of(spec.design)); !problem.empty()) {
    throw Error(problem, Exit::bad_input);
  }
}

std::shared_ptr<Looks> elimination_looks(const RunOptions& o, const SweepSpec& spec, Store& store) {
  if (!o.eliminate) {
    return nullptr;
  }
  save_elimination(o.results, spec.name, *spec.design.eliminate);
  return std::make_shared<EliminationLooks>(o, store, *spec.design.eliminate);
}

}  // namespace sweep::commands
