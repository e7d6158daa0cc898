// The results folder as the commands open it: its database, and the sweep a command reads.
// Internal to src/cli.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "config/sweep_spec.h"
#include "report/input.h"
#include "store/results_folder.h"
#include "store/store.h"
#include "util/fs.h"

namespace sweep::commands {

// One study under two names (a sweep file copied and run again): backtest and pool count it once.
class StudiesSeen {
 public:
  // The name these runs were first seen under; "" the first time (a study without runs is no copy).
  std::string same_runs_as(const ReportInput& in);
  // The same for a study read from elsewhere (a report): its run ids and its name.
  std::string same_runs_as(const std::set<std::string>& runs, const std::string& name);

 private:
  std::map<std::set<std::string>, std::string> m_first;  // a study's run ids -> its first name
};

// An argument naming a report rather than a sweep (`sweep pool`, `sweep replay`): one written as a
// path — a '/' in it, or a name ending in .json — is its report.json, or the folder holding one; an
// Error (bad input) when there is none. nullopt: a sweep's name.
std::optional<fs::path> report_path(const std::string& arg);
// A study named on the command line (`sweep pool`, `sweep replay`): a sweep in the results, or a
// report by path.
struct StudyArg {
  std::string name;                // as given
  std::optional<fs::path> report;  // its report.json; nullopt: a sweep's name
};
// The studies `names` names, each once — a name given twice, or two paths to one report, said in
// `twice` — or every sweep in the results when it names none; `store` opened when one is a sweep.
std::vector<StudyArg> studies_named(const std::vector<std::string>& names, const std::string& results,
                                    std::unique_ptr<Store>& store, std::vector<std::string>& twice);

// Where `names` holds a word that is no path but a folder with a report.json in it (`sweep pool
// ladder` run in reports/): what to write to read that report instead (" — to read …"); else "".
std::string report_folder_hint(const std::vector<std::string>& names);
// The report at `path`, parsed; an Error (bad input) naming it when it is not JSON.
nlohmann::json read_report(const fs::path& path);

// The runs of `spec` the database `db` holds finished (read only; none when there is no database).
std::set<std::string> finished_runs(const SweepSpec& spec, const std::string& db);

// The results database, read-only. Throws Error (bad input) when there is none.
std::unique_ptr<Store> open_results(const std::string& results);

// The results database, opened read-only into `store`, and the sweep named (default: the
// latest). Throws Error (bad input) when there is no database or no sweep in it.
std::string sweep_to_read(const std::string& results, std::string sweep, std::unique_ptr<Store>& store);

}  // namespace sweep::commands
