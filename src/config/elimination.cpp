#include "config/elimination.h"

namespace sweep {

nlohmann::json EliminationDesign::to_json() const {
  nlohmann::json stopped_arms = nlohmann::json::object();
  for (const auto& [variant, e] : stopped) {
    stopped_arms[variant] = {{"look", e.look},   {"fraction", e.fraction},   {"delta", e.mean}, {"upper", e.upper},
                             {"threshold", e.threshold}, {"seeds", e.seeds}, {"runs", e.runs}};
  }
  return {{"looks", settings.looks}, {"kept", settings.kept}, {"span", settings.span},
          {"alpha", settings.alpha}, {"min_effect", delta},   {"runs", runs},
          {"looks_taken", looks_taken}, {"stopped", stopped_arms}};
}

EliminationDesign EliminationDesign::from_json(const nlohmann::json& j) {
  EliminationDesign d;
  d.settings.looks = j.at("looks").get<std::vector<double>>();
  d.settings.kept = j.at("kept").get<std::vector<double>>();
  d.settings.span = j.at("span").get<double>();
  d.settings.alpha = j.at("alpha").get<double>();
  d.delta = j.at("min_effect").get<double>();
  d.runs = j.at("runs").get<std::vector<std::string>>();
  d.looks_taken = j.at("looks_taken").get<size_t>();
  for (const auto& [variant, e] : j.at("stopped").items()) {
    d.stopped[variant] = {true,
                          e.at("look").get<size_t>(),
                          e.at("fraction").get<double>(),
                          e.at("delta").get<double>(),
                          e.at("upper").get<double>(),
                          e.at("threshold").get<double>(),
                          e.at("seeds").get<int64_t>(),
                          e.at("runs").get<std::vector<std::string>>()};
  }
  return d;
}

}  // namespace sweep
