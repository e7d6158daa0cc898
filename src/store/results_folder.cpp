#include "store/results_folder.h"

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

std::string database_path(const std::string& results) { return (fs::path(results) / "sweep.db").string(); }

fs::path sweeps_folder(const std::string& results) { return fs::path(results) / "sweeps"; }

fs::path saved_file(const std::string& results, const std::string& sweep, const std::string& extension) {
  return sweeps_folder(results) / (sweep + extension);
}

fs::path runs_folder(const std::string& results) { return fs::path(results) / k_runs_folder; }

std::string run_folder_of(const std::string& run_id) { return (fs::path(k_runs_folder) / run_id).string(); }

std::string saved_device_file(const std::string& results, const std::string& sweep) {
  return saved_file(results, sweep, ".device").string();
}

void save_device(const std::string& results, const std::string& sweep, const std::string& kind) {
  write_file_atomic(saved_device_file(results, sweep), kind + "\n");
}

std::string read_saved_device(const std::string& results, const std::string& sweep) {
  const std::string file = saved_device_file(results, sweep);
  if (!fs::exists(file)) {
    return "";
  }
  const std::string kind = trim(read_file(file));
  if (kind != "cpu" && kind != "cuda") {
    throw Error(file + " says '" + kind.substr(0, 40) + "', not cpu or cuda");
  }
  return kind;
}

void save_rounds(const std::string& results, const SweepSpec& spec, const std::vector<PlannedRun>& added) {
  const fs::path file = saved_file(results, spec.name, ".rounds");
  if (!spec.design.sequential()) {
    fs::remove(file);
    return;
  }
  std::map<std::string, int64_t> seeds;
  for (const auto* runs : {&spec.runs, &added}) {
    for (const auto& r : *runs) {
      seeds[r.variant]++;
    }
  }
  const nlohmann::json j{{"max_seeds", spec.design.max_seeds}, {"spending", spec.design.spending}, {"seeds", seeds}};
  write_file_atomic(file, j.dump() + "\n");
}

std::optional<RecordedRounds> read_saved_rounds(const std::string& results, const std::string& sweep) {
  const fs::path file = saved_file(results, sweep, ".rounds");
  if (!fs::exists(file)) {
    return std::nullopt;
  }
  RecordedRounds r;
  r.file = file.string();
  try {
    const nlohmann::json j = nlohmann::json::parse(read_file(file));
    r.max_seeds = j.at("max_seeds").get<int64_t>();
    const std::string spending = j.at("spending").get<std::string>();
    const std::optional<Spending> known = parse_choice<Spending>(spending);
    if (!known) {
      throw Error(file.string() + ": not a saved seed design (spending \"" + spending + "\": expected " +
                  join(choice_names<Spending>(), " or ") + ")");
    }
    r.spending = *known;
    r.seeds = j.at("seeds").get<std::map<std::string, int64_t>>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(file.string() + ": not a saved seed design (" + first_line(e.what()) + ")");
  }
  return r;
}

void save_elimination(const std::string& results, const std::string& sweep, const EliminationDesign& design) {
  write_file_atomic(saved_file(results, sweep, ".eliminated"), design.to_json().dump() + "\n");
}

std::optional<EliminationDesign> read_saved_elimination(const std::string& results, const std::string& sweep) {
  const fs::path file = saved_file(results, sweep, ".eliminated");
  if (!fs::exists(file)) {
    return std::nullopt;
  }
  try {
    return EliminationDesign::from_json(nlohmann::json::parse(read_file(file)));
  } catch (const nlohmann::json::exception& e) {
    throw Error(file.string() + ": not a saved --eliminate record (" + first_line(e.what()) +
                    ") — restore it from a copy, or delete it to drop the record (the arms it stopped then train to "
                    "the end, a fixed design)",
                Exit::bad_input);
  }
}

void save_trainer(const std::string& results, const SweepSpec& spec) {
  if (!spec.trainer) {
    return;
  }
  const OwnTrainer& t = spec.trainer->trainer;
  const fs::path root = fs::absolute(results).lexically_normal();
  nlohmann::json j{{"name", t.name}, {"dir", fs::path(t.dir).lexically_relative(root).string()}, {"files", t.files}};
  if (!t.env.empty()) {
    j["env"] = t.env;
  }
  write_file_atomic(saved_file(results, spec.name, ".trainer"), j.dump() + "\n");
  fs::remove(saved_file(results, spec.name, ".trainer-dir"));  // an older sweep's record of it
}

std::optional<TrainerRecord> read_saved_trainer(const std::string& results, const std::string& sweep) {
  const fs::path file = saved_file(results, sweep, ".trainer"), older = saved_file(results, sweep, ".trainer-dir");
  TrainerRecord r;
  if (fs::exists(file)) {
    try {
      const nlohmann::json j = nlohmann::json::parse(read_file(file));
      r.dir = (fs::absolute(results) / j.at("dir").get<std::string>()).lexically_normal().string();
      r.files = j.at("files").get<std::map<std::string, std::string>>();
      r.name = j.value("name", "");
      r.env = j.value("env", std::map<std::string, std::string>{});
    } catch (const nlohmann::json::exception& e) {
      throw Error(file.string() + ": not a saved trainer record (" + first_line(e.what()) + ")");
    }
    return r;
  }
  if (fs::exists(older)) {
    r.dir = trim(read_file(older));
    return r;
  }
  return std::nullopt;
}

namespace {

// The path a sweep file is known by: absolute, its links resolved where it exists.
std::string file_path_of(const std::string& file) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(fs::absolute(file), ec);
  return ec ? fs::absolute(file).lexically_normal().string() : canonical.string();
}

// NAME.file's lines: the name as given, then (since it was kept) the file's path.
std::vector<std::string> saved_file_lines(const std::string& results, const std::string& sweep) {
  const fs::path file = saved_file(results, sweep, ".file");
  return fs::exists(file) ? split(trim(read_file(file)), '\n') : std::vector<std::string>{};
}

}  // namespace

void save_file_name(const std::string& results, const SweepSpec& spec) {
  write_file_atomic(saved_file(results, spec.name, ".file"), spec.file + "\n" + file_path_of(spec.file) + "\n");
}

std::string read_saved_file_name(const std::string& results, const std::string& sweep) {
  const std::vector<std::string> lines = saved_file_lines(results, sweep);
  return lines.empty() ? "" : trim(lines.front());
}

std::string name_taken(const std::string& results, const SweepSpec& spec) {
  const std::vector<std::string> lines = saved_file_lines(results, spec.name);
  const fs::path saved = saved_file(results, spec.name, ".yaml");
  if (lines.size() < 2 || trim(lines[1]) == file_path_of(spec.file) || !fs::exists(saved) ||
      read_file(saved) == spec.text) {
    return "";  // its own file (edited, or run from elsewhere), a copy of its text, or a folder from before the record
  }
  return trim(lines[1]);
}

}  // namespace sweep
