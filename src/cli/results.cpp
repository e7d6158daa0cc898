#include "cli/results.h"

#include <algorithm>

#include "sched/lifecycle.h"
#include "util/error.h"
#include "util/fs.h"

namespace sweep::commands {

std::string StudiesSeen::same_runs_as(const ReportInput& in) {
  std::set<std::string> runs;
  for (const auto& v : in.variants) {
    for (const auto& r : v.runs) {
      runs.insert(r.run_id);
    }
  }
  return same_runs_as(runs, in.sweep);
}

std::string StudiesSeen::same_runs_as(const std::set<std::string>& runs, const std::string& name) {
  const auto [first, added] = m_first.emplace(runs, name);
  return added || runs.empty() ? "" : first->second;
}

std::optional<fs::path> report_path(const std::string& arg) {
  if (arg.find('/') == std::string::npos && !arg.ends_with(".json")) {
    return std::nullopt;
  }
  std::error_code ec;
  const fs::path path = fs::is_directory(arg, ec) ? fs::path(arg) / "report.json" : fs::path(arg);
  if (!fs::is_regular_file(path, ec)) {
    throw Error(path.string() + ": no such report — name a report.json that `sweep report --out` wrote, or its folder "
                                "(a sweep in the results is named without a '/')",
                Exit::bad_input);
  }
  return path;
}

std::vector<StudyArg> studies_named(const std::vector<std::string>& names, const std::string& results,
                                    std::unique_ptr<Store>& store, std::vector<std::string>& twice) {
  std::vector<StudyArg> out;
  std::set<std::string> seen;
  for (const std::string& n : names) {
    StudyArg a{n, report_path(n)};
    if (!seen.insert(a.report ? fs::weakly_canonical(*a.report).string() : n).second) {
      twice.push_back(n);
      continue;
    }
    out.push_back(std::move(a));
  }
  if (names.empty() || std::any_of(out.begin(), out.end(), [](const StudyArg& a) { return !a.report; })) {
    store = open_results(results);  // reports alone need no results folder
  }
  if (names.empty()) {
    for (const auto& s : store->sweeps()) {
      out.push_back({s.name, std::nullopt});
    }
  }
  return out;
}

std::string report_folder_hint(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    std::error_code ec;
    if (!report_path(n) && fs::is_regular_file(fs::path(n) / "report.json", ec)) {
      return " — to read the report in the folder " + n + ", write ./" + n;
    }
  }
  return "";
}

nlohmann::json read_report(const fs::path& path) {
  try {
    return nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string() + ": not JSON (" + e.what() + ") — name the report.json that `sweep report --out` wrote",
                Exit::bad_input);
  }
}

std::set<std::string> finished_runs(const SweepSpec& spec, const std::string& db) {
  std::set<std::string> done;
  if (fs::exists(db)) {
    Store recorded(db, Store::Access::read);
    for (const auto& r : spec.runs) {
      if (const std::optional<RunRow> row = recorded.run(r.run_id); row && finished(plan_state(*row))) {
        done.insert(r.run_id);
      }
    }
  }
  return done;
}

std::unique_ptr<Store> open_results(const std::string& results) {
  const std::string db = database_path(results);
  if (!fs::exists(db)) {
    throw Error("no database at " + db + " — run a sweep first (`sweep run FILE`) or pass --results DIR",
                Exit::bad_input);
  }
  if (empty_database(db)) {  // nothing to read, and a reader writes nothing
    throw empty_database_error(db);
  }
  return std::make_unique<Store>(db, Store::Access::read);
}

std::string sweep_to_read(const std::string& results, std::string sweep, std::unique_ptr<Store>& store) {
  store = open_results(results);
  if (sweep.empty()) {
    const auto all = store->sweeps();
    if (all.empty()) {
      throw Error("the database " + database_path(results) + " holds no sweep yet", Exit::bad_input);
    }
    sweep = all.front().name;
  }
  return sweep;
}

}  // namespace sweep::commands
