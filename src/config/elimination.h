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
// in a live sweep's record, the runs it judged.
struct Elimination {
  bool stopped = false;
  size_t look = 0;
  double fraction = 0;
  double mean = 0, upper = 0, threshold = 0;
  int64_t seeds = 0;
  std::vector<std::string> runs;  // the arm's run ids when it was stopped, sorted
};

// A sweep run --eliminate: its settings and δ, the study its looks judge (every run id of the sweep
// when it began, sorted), the looks decided so far, the arms stopped (variant name → how). A stopped
// arm's runs keep their checkpoints: `sweep run` without --eliminate finishes them. A stop applies
// to its arm while the arm's runs are the ones it judged (the sweep file unchanged).
struct EliminationDesign {
  EliminationSettings settings;
  double delta = 0;               // the min_effect its looks judge by
  std::vector<std::string> runs;  // the study's run ids, sorted
  size_t looks_taken = 0;
  std::map<std::string, Elimination> stopped;

  nlohmann::json to_json() const;
  // Throws nlohmann::json::exception on a record that is not one.
  static EliminationDesign from_json(const nlohmann::json& j);
};

}  // namespace sweep
