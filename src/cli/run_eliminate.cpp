#include "cli/run_eliminate.h"

#include <algorithm>
#include <set>

#include "cli/results.h"
#include "cli/validators.h"
#include "config/elimination_check.h"
#include "report/eliminate/live.h"
#include "report/load.h"
#include "store/results_folder.h"
#include "util/text.h"

namespace sweep::commands {

namespace {

class EliminationLooks : public Looks {
 public:
  EliminationLooks(const RunOptions& o, const SweepSpec& spec, Store& store)
      : m_results(o.results), m_store(store), m_design(*spec.design.eliminate) {
    for (const PlannedRun& run : spec.runs) {
      if (run.variant != spec.baseline) {
        m_arm_runs.insert(run.run_id);
      }
    }
  }

  std::optional<int64_t> pause_at(const PlannedRun& run) const override {
    const bool arm_left = std::any_of(m_arm_runs.begin(), m_arm_runs.end(),
                                      [&](const std::string& id) { return m_design.stop_of(id) == nullptr; });
    if (!arm_left || m_design.looks_taken >= m_design.settings.looks.size()) {
      return std::nullopt;  // no look left, or no arm left to judge
    }
    return look_step(run.config, m_design.settings.looks[m_design.looks_taken]);
  }
  bool stopped(const PlannedRun& run) const override { return m_design.stop_of(run.run_id) != nullptr; }
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
  std::set<std::string> m_arm_runs;  // the runs of every variant but the baseline
};

std::string numbers_text(const std::vector<double>& v) {
  std::vector<std::string> parts;
  for (const double x : v) {
    parts.push_back(format_number("%g", x));
  }
  return join(parts, ",");
}

}  // namespace

std::pair<CLI::Option*, CLI::Option*> add_elimination_options(CLI::App* cmd, EliminationOptions& o) {
  const EliminationSettings defaults;
  const CLI::Validator listed(
      [](std::string& text) {
        return text.empty() ? std::string("give a comma-separated list, e.g. 0.3,0.5,0.75") : std::string();
      },
      "LIST");
  CLI::Option* looks =
      cmd->add_option("--looks", o.looks,
                      "--eliminate: the looks, fractions of training, comma-separated (default " +
                          numbers_text(defaults.looks) + ")")
          ->check(listed);
  CLI::Option* kept = cmd->add_option("--kept", o.kept,
                                      "--eliminate: per look, the least share of its deficit a worse arm keeps to "
                                      "the end (default " +
                                          numbers_text(defaults.kept) + ")")
                          ->check(listed);
  return {looks, kept};
}

EliminationSettings elimination_settings(const EliminationOptions& o) {
  EliminationSettings s;
  if (!o.looks.empty()) {
    s.looks = validate::number_list("--looks", o.looks, numbers_text(s.looks) + " (fractions of training)");
  }
  if (!o.kept.empty()) {
    s.kept = validate::number_list("--kept", o.kept, numbers_text(s.kept) + " (one share per look)");
  }
  return s;
}

void prepare_elimination(const RunOptions& o, SweepSpec& spec) {
  EliminationRequest request;
  request.eliminate = o.eliminate;
  request.until_decided = o.until_decided;
  if (!o.elimination.looks.empty() || !o.elimination.kept.empty()) {
    request.asked = elimination_settings(o.elimination);
  }
  request.record_file = saved_file(o.results, spec.name, ".eliminated").string();
  admit_elimination(spec, request);
  if (o.eliminate || !spec.design.eliminate) {
    return;
  }
  const std::set<std::string> done = finished_runs(spec, database_path(o.results));
  std::vector<std::string> left;  // arms with stopped runs to finish
  for (const Variant& v : spec.variants) {
    const std::vector<std::string> ids = run_ids_of(spec, v.name);
    if (std::any_of(ids.begin(), ids.end(), [&](const std::string& id) {
          return spec.design.eliminate->stop_of(id) != nullptr && !done.count(id);
        })) {
      left.push_back(v.name);
    }
  }
  if (!left.empty()) {
    std::printf("sweep %s was run --eliminate, which stopped %s: this run trains %s to the end (a fixed design; "
                "--eliminate keeps %s stopped)\n",
                spec.name.c_str(), join(left, ", ").c_str(), left.size() == 1 ? "it" : "them",
                left.size() == 1 ? "it" : "them");
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
