// A study `sweep pool` reads from its report.json (`sweep report --out`) rather than from its runs:
// a committed report, or one from a results folder that is not at hand. The report holds what a
// setting's measurement needs — each variant's paired improvement, its standard error over seeds,
// its seeds and the ids of its finished runs (so the same runs read twice count once).
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "report/metric.h"
#include "report/pool/pool.h"

namespace sweep {

// The settings of the report `report`, read from `where` (named in errors and notes). A report on
// another metric than `metric`, or one that is no sweep report, is an Error (bad input). Reports
// written before they named each variant's intervention: a ladder's "name+rung" is read as "name",
// and every variant is taken as at the baseline's grid point.
Measured measure_report(const nlohmann::json& report, const std::string& where, const Metric& metric);

// A report's field: the string or the number at `key`; "" or NaN where it is missing or of another
// type (a report by hand, or an older one). Every reader of a report.json reads its fields so.
std::string report_string(const nlohmann::json& j, const char* key);
double report_number(const nlohmann::json& j, const char* key);

// The ids of every run the report lists, finished or not: the same study read twice (its report and
// its runs, or two copies of a report) is pooled once.
std::set<std::string> report_runs(const nlohmann::json& report);

}  // namespace sweep
