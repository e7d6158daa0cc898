#include "sched/run_folder.h"

#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/sweep_spec.h"
#include "protocol/events.h"
#include "protocol/json_line.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace {

namespace field = events::field;

// The start events of a folder's events.jsonl, as objects (a line that is none is no start).
std::vector<nlohmann::json> start_events(const fs::path& events) {
  std::vector<nlohmann::json> starts;
  if (!fs::exists(events)) {
    return starts;
  }
  for_each_line(events, events::k_max_json_line, [&](const std::string& line) {
    if (line.find("\"start\"") == std::string::npos) {
      return;  // cheap: most lines are train events
    }
    nlohmann::json ev = events::parse_json_line(line);
    if (ev.is_object() && ev.value(field::event, nlohmann::json()) == events::start) {
      starts.push_back(std::move(ev));
    }
  });
  return starts;
}

std::optional<int64_t> whole(const nlohmann::json& ev, const char* key) {
  const auto it = ev.find(key);
  return it != ev.end() && it->is_number_integer() ? std::optional<int64_t>(it->get<int64_t>()) : std::nullopt;
}

}  // namespace

std::string run_folder_problem(const fs::path& dir, RunConfig* loaded) {
  const std::string name = dir.filename().string();
  // files, not a FIFO, a device or a folder, which a read would hang on or never finish
  for (const char* file : {"config.yaml", "events.jsonl"}) {
    const fs::path at = dir / file;
    std::error_code ec;
    if ((fs::exists(at, ec) || fs::is_symlink(at, ec)) && !fs::is_regular_file(at, ec)) {
      // what the path (a link: what it points to) is
      const std::string kind = !fs::exists(at, ec)         ? "nothing"
                               : fs::is_directory(at, ec) ? "a folder"
                                                          : "a FIFO, a socket or a device";
      return std::string("its ") + file + " is not a file (" +
             (fs::is_symlink(at, ec) ? "a link to " + fs::read_symlink(at, ec).string() + ", which is " + kind : kind) +
             ") — restore it, or move the folder away";
    }
  }
  RunConfig config;
  try {
    config = load_run_config((dir / "config.yaml").string());
  } catch (const Error& e) {
    return "its config.yaml does not load: " + first_line(e.what());
  }
  const std::vector<nlohmann::json> starts = start_events(dir / "events.jsonl");
  // The numerics versions it may have been trained under: this core's, and those its workers said.
  std::set<std::optional<int64_t>> numerics{std::nullopt};
  for (const auto& ev : starts) {
    if (const auto n = whole(ev, field::numerics)) {
      numerics.insert(*n);
    }
  }
  // the config's run id at repeat 0 under the numerics its name matched ("": none matched)
  std::string identity;
  for (auto n = numerics.begin(); n != numerics.end() && identity.empty(); ++n) {
    const nlohmann::json at = identity_at(config, *n);
    for (int64_t repeat = 0; repeat <= 1000; ++repeat) {  // seeds.repeat: at most 1000
      if (run_id_of_identity(at, repeat) == name) {
        identity = run_id_of_identity(at, 0);
        break;
      }
    }
  }
  if (identity.empty()) {
    return "its config.yaml is not the run its name says (it hashes to " + run_id_of(config, 0) +
           "): the config was edited after the run, or the folder renamed — restore it, or move the folder away";
  }
  for (const auto& ev : starts) {
    const auto stamped = ev.find(field::identity);
    if (stamped != ev.end() && stamped->is_string() && *stamped != identity) {
      return "its events.jsonl holds a start of run " + stamped->get<std::string>() + ", not of its config (" + identity +
             "): the events of another run — restore the folder's own, or move it away";
    }
    if (config.trainer) {
      continue;  // a trainer of your own decides its steps
    }
    // as its worker trains it: a run of resources.ranks: N takes steps of N ranks' batches
    const int64_t steps = planned_steps(config), tokens_per_step = planned_tokens_per_step(config);
    const auto total = whole(ev, field::total_steps), per_step = whole(ev, field::tokens_per_step);
    if ((total && *total != steps) || (per_step && *per_step != tokens_per_step)) {
      return "its events.jsonl holds a start of " + std::to_string(total.value_or(0)) + " steps of " +
             std::to_string(per_step.value_or(0)) + " tokens, its config.yaml " + std::to_string(steps) +
             " of " + std::to_string(tokens_per_step) +
             ": the events of another run — restore the folder's own, or move it away";
    }
  }
  if (loaded != nullptr) {
    *loaded = std::move(config);
  }
  return "";
}

bool holds_checkpoint(const std::filesystem::path& dir, bool own) {
  std::error_code ec;
  if (own) {
    return std::filesystem::is_directory(dir / "checkpoint", ec) && !std::filesystem::is_empty(dir / "checkpoint", ec);
  }
  return std::filesystem::exists(dir / "checkpoint" / "ckpt.pt") ||
         std::filesystem::exists(dir / "checkpoint" / "ckpt.prev.pt");
}

}  // namespace sweep
