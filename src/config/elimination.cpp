#include "config/elimination.h"

#include <algorithm>

#include "util/text.h"

namespace sweep {

const Elimination* EliminationDesign::stop_of(const std::string& run_id) const {
  for (const Elimination& e : stopped) {
    if (std::binary_search(e.runs.begin(), e.runs.end(), run_id)) {
      return &e;
    }
  }
  return nullptr;
}

nlohmann::json EliminationDesign::to_json() const {
  nlohmann::json stops = nlohmann::json::array();
  for (const Elimination& e : stopped) {
    stops.push_back({{"arm", e.arm},          {"look", e.look},   {"fraction", e.fraction},
                     {"delta", e.mean},       {"upper", e.upper}, {"threshold", e.threshold},
                     {"seeds", e.seeds},      {"runs", e.runs}});
  }
  return {{"looks", settings.looks}, {"kept", settings.kept}, {"span", settings.span},
          {"alpha", settings.alpha}, {"min_effect", delta},   {"runs", runs},
          {"baseline_runs", baseline_runs}, {"looks_taken", looks_taken}, {"stopped", stops}};
}

EliminationDesign EliminationDesign::from_json(const nlohmann::json& j) {
  EliminationDesign d;
  d.settings.looks = j.at("looks").get<std::vector<double>>();
  d.settings.kept = j.at("kept").get<std::vector<double>>();
  d.settings.span = j.at("span").get<double>();
  d.settings.alpha = j.at("alpha").get<double>();
  d.delta = j.at("min_effect").get<double>();
  d.runs = j.at("runs").get<std::vector<std::string>>();
  d.baseline_runs = j.value("baseline_runs", std::vector<std::string>{});
  d.looks_taken = j.at("looks_taken").get<size_t>();
  const auto stop = [](const nlohmann::json& e, const std::string& arm) {
    Elimination s{true,
                  e.at("look").get<size_t>(),
                  e.at("fraction").get<double>(),
                  e.at("delta").get<double>(),
                  e.at("upper").get<double>(),
                  e.at("threshold").get<double>(),
                  e.at("seeds").get<int64_t>(),
                  e.at("runs").get<std::vector<std::string>>(),
                  arm};
    std::sort(s.runs.begin(), s.runs.end());
    return s;
  };
  const nlohmann::json& stops = j.at("stopped");
  if (stops.is_object()) {  // an older record: the arms' names as keys
    for (const auto& [arm, e] : stops.items()) {
      d.stopped.push_back(stop(e, arm));
    }
  } else {
    for (const nlohmann::json& e : stops) {
      d.stopped.push_back(stop(e, e.at("arm").get<std::string>()));
    }
  }
  return d;
}

std::string percent_of_training(double fraction) { return format_number("%g", 100 * fraction) + "%"; }

std::string rule_problem(const EliminationSettings& r, double delta) {
  if (r.looks.empty() || r.kept.size() != r.looks.size()) {
    return "one kept share per look (" + plural(static_cast<int64_t>(r.looks.size()), "look") + ", " +
           plural(static_cast<int64_t>(r.kept.size()), "kept share") + ") — give --kept one share per look";
  }
  for (size_t j = 0; j < r.looks.size(); ++j) {
    if (!(r.looks[j] > 0 && r.looks[j] < 1) || (j > 0 && !(r.looks[j] > r.looks[j - 1]))) {
      std::vector<std::string> given;
      for (const double f : r.looks) {
        given.push_back(format_number("%g", f));
      }
      return "looks must be fractions of training between 0 and 1, ascending (given: " + join(given, ",") +
             ") — e.g. 0.3,0.5,0.75";
    }
    if (!(r.kept[j] > 0 && r.kept[j] <= 1)) {
      return "a kept share must be in (0, 1], not " + format_number("%g", r.kept[j]) + " (look " +
             std::to_string(j + 1) + ")";
    }
  }
  if (!(r.span > 0 && r.span < r.looks.front())) {
    return "the first look must come after " + percent_of_training(r.span) +
           " of training (the span before a look over which a deficit must not shrink)";
  }
  if (!(delta > 0)) {
    return "an arm is stopped only when shown worse than −δ: it needs min_effect (δ)";
  }
  if (!(r.alpha > 0 && r.alpha < 0.5)) {
    return "the false-elimination probability must be in (0, 0.5)";
  }
  return "";
}

}  // namespace sweep
