#include "report/pool/from_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "report/seeds.h"
#include "report/stats.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

using json = nlohmann::json;

// The variant's runs: those with a value (finished), or all.
std::set<std::string> runs_of(const json& variant, bool finished_only) {
  std::set<std::string> ids;
  const auto runs = variant.is_object() ? variant.find("runs_detail") : variant.end();
  for (size_t i = 0; runs != variant.end() && runs->is_array() && i < runs->size(); ++i) {
    const json& r = (*runs)[i];
    const std::string id = r.is_object() ? report_string(r, "run_id") : "";
    if (!id.empty() && (!finished_only || std::isfinite(report_number(r, "value")))) {
      ids.insert(id);
    }
  }
  return ids;
}

// The variant's per-seed values (a seed's repeats averaged), as its report lists its finished runs.
std::map<SeedKey, double> values_of(const json& variant) {
  std::vector<ReportRun> runs;
  const auto listed = variant.is_object() ? variant.find("runs_detail") : variant.end();
  for (size_t i = 0; listed != variant.end() && listed->is_array() && i < listed->size(); ++i) {
    const json& r = (*listed)[i];
    const double value = r.is_object() ? report_number(r, "value") : k_nan;
    const double init = r.is_object() ? report_number(r, "init_seed") : k_nan;
    const double data = r.is_object() ? report_number(r, "data_seed") : k_nan;
    if (std::isfinite(value) && std::isfinite(init) && std::isfinite(data)) {
      ReportRun run;
      run.init_seed = static_cast<int64_t>(init);
      run.data_seed = static_cast<int64_t>(data);
      run.value = value;
      runs.push_back(run);
    }
  }
  return seed_values(runs);
}

// A count the report gives (0 where it gives none, or no count).
int64_t count_of(const json& v, const char* key) {
  const double n = report_number(v, key);
  return std::isfinite(n) && n > 0 && n < 1e9 ? static_cast<int64_t>(n) : 0;
}

// Where --eliminate stopped the arm ("" where it did not): the report says it in "stopped", which
// --until-decided also fills for each arm it looked at, beside its "looks".
std::string eliminated_of(const json& v) {
  const auto looks = v.find("looks");
  const bool sequential = looks != v.end() && looks->is_array() && !looks->empty();
  return sequential ? "" : report_string(v, "stopped");
}

bool is_baseline(const json& v) {
  const auto it = v.find("baseline");
  return it != v.end() && it->is_boolean() && it->get<bool>();
}

// The variant's intervention: as the report names it, or (an older report) its name less the rung.
std::string intervention_of(const json& v, const std::string& rung) {
  if (std::string named = report_string(v, "intervention"); !named.empty()) {
    return named;
  }
  const std::string name = report_string(v, "name");
  const std::string suffix = "+" + rung;
  if (!rung.empty() && name.size() > suffix.size() && name.ends_with(suffix)) {
    return name.substr(0, name.size() - suffix.size());
  }
  return name;
}

}  // namespace

std::string report_string(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

double report_number(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : k_nan;
}

std::set<std::string> report_runs(const json& report) {
  std::set<std::string> ids;
  const auto variants = report.is_object() ? report.find("variants") : report.end();
  for (size_t i = 0; variants != report.end() && variants->is_array() && i < variants->size(); ++i) {
    const std::set<std::string> runs = runs_of((*variants)[i], false);
    ids.insert(runs.begin(), runs.end());
  }
  return ids;
}

Measured measure_report(const json& report, const std::string& where, const Metric& metric) {
  const auto variants = report.is_object() ? report.find("variants") : report.end();
  const std::string sweep = report.is_object() ? report_string(report, "sweep") : "";
  if (!report.is_object() || variants == report.end() || !variants->is_array() || sweep.empty()) {
    throw Error(where + ": not a sweep report (no \"sweep\" and \"variants\") — name the report.json that "
                        "`sweep report --out` wrote, or its folder",
                Exit::bad_input);
  }
  if (const std::string measured = report_string(report, "metric"); measured != metric.name()) {
    throw Error(where + ": its report compares the variants on " +
                    (measured.empty() ? "no metric it names" : measured) +
                    ", not " + metric.name() + " — " +
                    (measured.empty() ? "report it again with `sweep report`"
                                      : "pool with --metric " + measured + " (every setting must share it)") +
                    ", or leave it out",
                Exit::bad_input);
  }
  const bool tuned = report.contains("tuned") && !report["tuned"].is_null();
  std::map<std::string, const json*> baselines;  // rung ("" for none) -> its baseline
  std::vector<std::string> rungs;
  for (const json& v : *variants) {
    const std::string rung = v.is_object() ? report_string(v, "rung") : "";
    if (std::find(rungs.begin(), rungs.end(), rung) == rungs.end()) {
      rungs.push_back(rung);
    }
    if (v.is_object() && is_baseline(v)) {
      baselines[rung] = &v;
    }
  }
  Measured out;
  if (rungs.empty()) {
    out.notes.push_back(sweep + " (" + where + "): no variant — nothing to pool");
  }
  for (const std::string& rung : rungs) {
    const std::string setting = rung.empty() ? sweep : sweep + "/" + rung;
    const auto base = baselines.find(rung);
    if (base == baselines.end() || !(report_number(*base->second, "seeds") > 0)) {
      out.notes.push_back(setting + ": no finished baseline run — left out");
      continue;
    }
    const json& baseline = *base->second;
    if (const int64_t diverged = count_of(baseline, "diverged"); diverged > 0) {
      out.notes.push_back(baseline_diverged(setting, diverged, count_of(baseline, "runs")));
      continue;
    }
    out.settings.push_back(setting);
    for (const json& v : *variants) {
      if (!v.is_object() || is_baseline(v) || report_string(v, "rung") != rung ||
          (!tuned && v.value("axes", json::object()) != baseline.value("axes", json::object()))) {
        continue;
      }
      if (report_string(v, "name").empty()) {
        out.notes.push_back(setting + ": a variant without a name — left out");
        continue;
      }
      PoolSetting s{setting,
                    intervention_of(v, rung),
                    report_string(v, "name"),
                    report_number(v, "improvement"),
                    report_number(v, "seed_se"),
                    count_of(v, "seeds"),
                    runs_of(v, true),
                    runs_of(baseline, true)};
      s.values = values_of(v);
      s.baseline_values = values_of(baseline);
      s.runs_planned = count_of(v, "runs");
      s.diverged = count_of(v, "diverged");
      s.eliminated = eliminated_of(v);
      if (const std::string why = unpoolable(s); !why.empty()) {
        out.notes.push_back(why);
        continue;
      }
      out.measured.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace sweep
