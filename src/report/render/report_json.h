// The analysis as JSON: one writer per struct, so that report.json, its ladder section and
// `sweep serve`'s pages spell every field alike (docs/formats.md, report.json).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "report/analysis.h"
#include "report/ladder/backtest.h"

namespace sweep {

nlohmann::ordered_json json_of(const Summary& s);  // mean, ci_low, ci_high, seeds
nlohmann::ordered_json json_of(const ReferenceScore& r);
nlohmann::ordered_json json_of(const NoiseSummary& n);
nlohmann::ordered_json json_of(const MetricSignal& m);
nlohmann::ordered_json json_of(const ReportRun& r);     // one of a variant's runs (runs_detail)
nlohmann::ordered_json json_of(const VariantStats& v);  // its statistics and verdict, without its runs
// Its test of superiority by the design's better_by margin: added to its row where one is declared.
nlohmann::ordered_json margin_json(const VariantStats& v);
nlohmann::ordered_json json_of(const Response& r);
nlohmann::ordered_json json_of(const Additivity& x);
nlohmann::ordered_json json_of(const TokensToTarget& t);
nlohmann::ordered_json json_of(const ComputeMatch& m);
nlohmann::ordered_json json_of(const DeltaCurve& d);
nlohmann::ordered_json json_of(const RungInfo& r);
nlohmann::ordered_json json_of(const Trend& t);
nlohmann::ordered_json json_of(const SpeedupTrend& s);
nlohmann::ordered_json json_of(const BacktestPrediction& p);
nlohmann::ordered_json json_of(const BacktestRow& r);
nlohmann::ordered_json json_of(const BacktestPooled& p);
nlohmann::ordered_json json_of(const LadderSummary& l);
nlohmann::ordered_json json_of(const TunedArm& t);
nlohmann::ordered_json json_of(const TunedSummary& t);
// The design as the analysis applied it: min_effect (and its source), the suggested one, the seeds.
nlohmann::ordered_json design_json(const Analysis& a);

template <typename T>
nlohmann::ordered_json json_array(const std::vector<T>& items) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& x : items) {
    out.push_back(json_of(x));
  }
  return out;
}

}  // namespace sweep
