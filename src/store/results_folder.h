// A results folder's layout, one home for every module that reads or writes it:
//   sweep.db                the database (store.h)
//   sweeps/NAME.yaml        each sweep file as `sweep run` last ran it, and beside it what the
//                           folder records of the sweep: NAME.device, NAME.rounds, NAME.eliminated,
//                           NAME.trainer, NAME.file (below)
//   runs/<run_id>/          each run's folder: config.yaml, events.jsonl, checkpoint/, worker.log
// docs/reference.md ("the results folder and its database") documents it for users.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/choices.h"
#include "config/sweep_spec.h"
#include "config/trainer.h"

namespace sweep {

inline constexpr const char* k_runs_folder = "runs";

std::string database_path(const std::string& results);  // results/sweep.db
std::filesystem::path sweeps_folder(const std::string& results);  // results/sweeps
// results/sweeps/SWEEP + extension (".yaml": the saved sweep file)
std::filesystem::path saved_file(const std::string& results, const std::string& sweep, const std::string& extension);
std::filesystem::path runs_folder(const std::string& results);  // results/runs
// A run's folder relative to the results folder (runs/<id>): the database stores it so, and a
// moved results folder still finds its runs.
std::string run_folder_of(const std::string& run_id);

// What a results folder records of a sweep's design: the rounds --until-decided added.
struct RecordedRounds {
  int64_t max_seeds = 0;
  Spending spending = Spending::pocock;
  std::map<std::string, int64_t> seeds;  // variant -> seeds it has in all
  std::string file;                      // where it was read
};

// The results folder's record of a sweep beside its saved file: sweeps/NAME.device (the kind of
// device its runs trained on) and sweeps/NAME.rounds (RecordedRounds, as JSON; a fixed design:
// none). `added`: the runs a round is about to add to `spec`'s.
std::string saved_device_file(const std::string& results, const std::string& sweep);
void save_device(const std::string& results, const std::string& sweep, const std::string& kind);
std::string read_saved_device(const std::string& results, const std::string& sweep);  // "" when none
void save_rounds(const std::string& results, const SweepSpec& spec, const std::vector<PlannedRun>& added = {});
// nullopt when there is none; throws Error naming the file when it cannot be read.
std::optional<RecordedRounds> read_saved_rounds(const std::string& results, const std::string& sweep);
// sweeps/NAME.eliminated: --eliminate's record of the sweep (config/elimination.h, as JSON): written
// when `sweep run --eliminate` starts and after each look; read back by every `sweep run` (so that
// one without --eliminate keeps the record while it finishes the stopped arms) and by `sweep ingest`.
// Read: nullopt when there is none; throws Error naming the file when it cannot be read.
void save_elimination(const std::string& results, const std::string& sweep, const EliminationDesign& design);
std::optional<EliminationDesign> read_saved_elimination(const std::string& results, const std::string& sweep);
// sweeps/NAME.trainer: a trainer of your own as the sweep ran with it (config/trainer.h, TrainerRecord),
// its folder relative to the results folder's. Read: nullopt when there is none (a sweep of sweep's
// own core), a record without hashes from an older folder's NAME.trainer-dir; throws Error naming
// the file when it cannot be read.
void save_trainer(const std::string& results, const SweepSpec& spec);
std::optional<TrainerRecord> read_saved_trainer(const std::string& results, const std::string& sweep);
// sweeps/NAME.file: the sweep file's name as `sweep run` was given it, which the report shows
// ("" when none was saved: a folder of an older sweep), and on its second line the file's path.
void save_file_name(const std::string& results, const SweepSpec& spec);
std::string read_saved_file_name(const std::string& results, const std::string& sweep);
// The path of another file whose sweep has `spec`'s name here — another path and another text than
// `spec`'s —, which `spec` would take the name from (its variants gone from ls, report and
// reports/NAME, its runs left behind); "" when the name is `spec`'s file's, or none recorded a path.
std::string name_taken(const std::string& results, const SweepSpec& spec);

}  // namespace sweep
