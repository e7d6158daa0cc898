// `sweep replay --eliminate`: a finished study replayed through the elimination rule
// (report/eliminate/rule.h) as if it were live — each arm's paired Δ curve read at the looks, the
// arms the rule would have stopped and when, set against what the full design found (its verdict
// and final improvement) and the tokens the stops would have saved. From a sweep's runs (its
// analysis) or from its report.json; a ladder's rungs are studies each. No training.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "report/analysis.h"
#include "report/eliminate/rule.h"

namespace sweep {

struct ReplayArm {
  std::string name;
  std::vector<std::pair<int64_t, Summary>> curve;  // its paired Δ curve
  double improvement = 0, ci_low = 0, ci_high = 0;  // the full design's final improvement
  std::string verdict;                               // and verdict
  double tokens = 0;                                 // its runs' tokens, all together
  Elimination elimination;
  std::vector<double> unjudged;  // the looks it could not be judged at
};

struct ReplayStudy {
  std::string name;  // the sweep, "sweep/rung" for a ladder's rung
  double delta = 0;
  double tokens = 0;  // every run's, the baseline's included
  std::vector<ReplayArm> arms;
  std::vector<std::string> stopped_live;  // arms a live --eliminate stopped: not replayed (their runs did not finish)
};

// A study's arms with their curves, from its analysis or its report.json (δ: the design's min_effect,
// NaN when it has none). An arm without a paired Δ curve is left out.
std::vector<ReplayStudy> replay_studies(const Analysis& a, const std::string& sweep);
std::vector<ReplayStudy> replay_studies(const nlohmann::json& report, const std::string& where);

// Each study's arms judged by `rule` (its δ the study's); a study without δ is an Error (bad input).
void replay(std::vector<ReplayStudy>& studies, EliminationRule rule);

// The stopped arms as a Markdown table, then a sentence of counts and the arms not judged at every look.
std::string replay_text(const std::vector<ReplayStudy>& studies, const EliminationRule& rule);
// Every arm, stopped or not, with the rule and the same counts.
nlohmann::ordered_json replay_json(const std::vector<ReplayStudy>& studies, const EliminationRule& rule);

}  // namespace sweep
