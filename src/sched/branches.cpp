#include "sched/branches.h"

#include "config/branch.h"
#include "protocol/events.h"
#include "protocol/json_line.h"
#include "sched/run_folder.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace {

// `from` put at `to` as a hard link (the parent's next save renames a new file over its own name,
// so the link keeps these bytes), else copied; atomically.
void link_or_copy(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  const fs::path tmp = to.string() + ".tmp";
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_hard_link(from, tmp, ec);
  if (ec) {
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing);
  }
  fs::rename(tmp, to);
}

// The step of the last checkpoint a run's events say it wrote (-1: none): what its ckpt.pt holds.
int64_t last_checkpoint(const fs::path& run_dir) {
  int64_t step = -1;
  std::error_code ec;
  if (!fs::exists(run_dir / "events.jsonl", ec)) {
    return step;
  }
  for (const std::string& line : split(read_file(run_dir / "events.jsonl"), '\n')) {
    if (line.find(events::checkpoint) == std::string::npos) {
      continue;
    }
    const nlohmann::json ev = events::parse_json_line(line);
    if (ev.is_object() && ev.value("event", "") == events::checkpoint && ev.contains("step") &&
        ev["step"].is_number_integer()) {
      step = ev["step"].get<int64_t>();
    }
  }
  return step;
}

}  // namespace

Branches::Branches(const std::vector<const PlannedRun*>& runs, Store& store) : m_store(store) {
  for (const PlannedRun* run : runs) {
    m_by_id[run->run_id] = run;
  }
  for (const PlannedRun* run : runs) {
    if (run->config.branch.on() && m_by_id.count(run->config.branch.from)) {
      m_children[run->config.branch.from].push_back(run);
    }
  }
}

const PlannedRun* Branches::parent_of(const PlannedRun& branch) const {
  const auto it = branch.config.branch.on() ? m_by_id.find(branch.config.branch.from) : m_by_id.end();
  return it == m_by_id.end() ? nullptr : it->second;
}

bool Branches::has_start(const PlannedRun& run) const {
  if (!run.config.branch.on()) {
    return true;
  }
  const std::optional<RunRow> row = m_store.run(run.run_id);  // (none: not recorded yet, as `sweep plan` sees it)
  return row && (holds_checkpoint(row->run_dir) || fs::exists(branch_checkpoint(row->run_dir)));
}

std::optional<int64_t> Branches::pause_at(const PlannedRun& parent) const {
  const auto children = m_children.find(parent.run_id);
  if (children == m_children.end()) {
    return std::nullopt;
  }
  const int64_t trained = m_store.run(parent.run_id)->steps;
  std::optional<int64_t> at;
  for (const PlannedRun* child : children->second) {
    const int64_t step = child->config.branch.step;
    if (!finished(m_store.run(child->run_id)->status) && !has_start(*child) && step >= trained) {
      at = at ? std::min(*at, step) : step;
    }
  }
  return at;
}

std::vector<const PlannedRun*> Branches::give_start(const PlannedRun& parent, int64_t step) const {
  std::vector<const PlannedRun*> given;
  const auto children = m_children.find(parent.run_id);
  if (children == m_children.end()) {
    return given;
  }
  const fs::path parent_dir = m_store.run(parent.run_id)->run_dir, ckpt = parent_dir / "checkpoint" / "ckpt.pt";
  if (last_checkpoint(parent_dir) != step) {  // (a parent killed between its step and the checkpoint there)
    return given;
  }
  for (const PlannedRun* child : children->second) {
    if (child->config.branch.step != step || has_start(*child) || finished(m_store.run(child->run_id)->status)) {
      continue;
    }
    const std::string dir = m_store.run(child->run_id)->run_dir;
    try {
      link_or_copy(ckpt, branch_checkpoint(dir));
    } catch (const fs::filesystem_error& e) {
      throw Error("the start of branch " + child->run_id + " could not be put in " + dir + " from " + ckpt.string() +
                      ": " + e.code().message(),
                  Exit::io_error);
    }
    given.push_back(child);
  }
  return given;
}

std::string Branches::orphaned(const PlannedRun& branch) const {
  const PlannedRun* parent = parent_of(branch);
  if (parent == nullptr) {
    return "its parent, run " + branch.config.branch.from + ", is not a run of this sweep";
  }
  const RunRow row = *m_store.run(parent->run_id);
  const std::string step = std::to_string(branch.config.branch.step);
  if (row.status == RunState::failed || row.status == RunState::oom || row.status == RunState::diverged) {
    return "its parent, the baseline's run " + parent->run_id + ", " + to_string(row.status) +
           " before step " + step + " (`sweep run --retry-failed` trains it again)";
  }
  if (row.steps > branch.config.branch.step || row.status == RunState::done) {
    const std::optional<RunRow> own = m_store.run(branch.run_id);
    return "its parent, the baseline's run " + parent->run_id + ", has trained past step " + step +
           " without this branch's start in its folder (" +
           (own ? branch_checkpoint(own->run_dir) : std::string("checkpoint/branch.pt")) +
           ": the branch planned after its parent passed the step, or its start removed), and its checkpoint "
           "there is gone — run the sweep in another --results folder, or train this intervention from scratch "
           "(`branch: none`)";
  }
  return "";
}

}  // namespace sweep
