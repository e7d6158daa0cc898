// --eliminate (docs/verdicts.md#eliminate): the settings of the rule that stops an arm before the
// end of training once it is shown worse than −δ, and the record of the arms it stopped — what a
// sweep's design keeps (the database's sweeps.design, the results folder's sweeps/NAME.eliminated),
// what `sweep run` goes on with and what the report reads. The rule itself is report/eliminate/rule.h.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sweep {

struct EliminationSettings {
  std::vector<double> looks{0.3, 0.5, 0.75};  // fractions of each run's tokens, ascending, in (0, 1)
  std::vector<double> kept{0.2, 0.2, 0.4};    // per look: the least share of its deficit an arm keeps to the end
  double span = 0.05;                         // the deficit must not shrink over this span of training before a look
  double alpha = 0.05;                        // the study's false-elimination probability
};

// An arm judged by the rule: stopped or not, and if so at which look, its paired improvement Δ
// there (baseline − arm, over its seeds), the upper bound that stopped it and the threshold −δ/kept;
// in a live sweep's record, the runs it judged and the arm's name then.
struct Elimination {
  bool stopped = false;
  size_t look = 0;
  double fraction = 0;
  double mean = 0, upper = 0, threshold = 0;
  int64_t seeds = 0;
  std::vector<std::string> runs;  // the arm's run ids when it was stopped, sorted
  std::string arm{};              // its name then (a stop follows its runs: a name is only said)
};

// A sweep run --eliminate: its settings and δ, the study its looks judge (every run id of the sweep
// when it began, sorted), the looks decided so far, the stops. A stop is a set of run ids with the
// look that stopped them: it follows its runs whatever their arm is named now (docs/verdicts.md
// #eliminate); an arm that holds runs of a stop and runs it did not judge is refused by the planning
// step (config/elimination_check.h). A stopped run keeps its checkpoint: `sweep run` without
// --eliminate finishes it.
struct EliminationDesign {
  EliminationSettings settings;
  double delta = 0;               // the min_effect its looks judge by
  std::vector<std::string> runs;  // the study's run ids, sorted
  // its baseline's, sorted: what each Δ was judged against (an older record: none)
  std::vector<std::string> baseline_runs;
  size_t looks_taken = 0;
  std::vector<Elimination> stopped;  // in the order the looks stopped them

  // The stop that judged run `run_id` (null: none) — the one answer to "is this run stopped" that
  // the runner, the report, status, plan and ingest read.
  const Elimination* stop_of(const std::string& run_id) const;

  nlohmann::json to_json() const;
  // Throws nlohmann::json::exception on a record that is not one (the stops as a list, or as the
  // object of arm names an older record wrote).
  static EliminationDesign from_json(const nlohmann::json& j);
};

// A look's place in training as the rule's lines say it: 0.3 → "30%".
std::string percent_of_training(double fraction);

// Why the settings and δ cannot be used ("" when they can): looks out of (0, 1) or not ascending, a
// kept share per look out of (0, 1], a span that reaches before the start, no δ, α out of (0, 0.5).
std::string rule_problem(const EliminationSettings& settings, double delta);

}  // namespace sweep
