// `sweep ls` (the sweeps in the database) and `sweep status [SWEEP]` (a sweep's runs and their state).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "cli/sweep_commands.h"
#include "sched/lifecycle.h"
#include "util/text.h"

namespace sweep {

using namespace commands;


CLI::App* setup_ls(CLI::App& app, std::string& results) {
  CLI::App* ls = app.add_subcommand("ls", "Sweeps in the database with their runs per state");
  ls->add_option("--results", results, "Output root")->capture_default_str();
  return ls;
}

Exit run_ls(const std::string& results) {
  const std::unique_ptr<Store> store = open_results(results);
  std::printf("%-24s %-40s %s\n", "sweep", "file", "runs");
  for (const auto& s : store->sweeps()) {
    std::map<std::string, int> counts;  // by plan state: a run left 'running' by a dead scheduler is resumable
    const std::optional<SweepInfo> info = store->sweep_info(s.name);
    for (const auto& r : store->sweep_runs(s.name)) {
      counts[state_label(plan_state(r.run), info ? info->design.eliminate : std::nullopt, r.run.run_id)]++;
    }
    std::printf("%-24s %-40s %s\n", s.name.c_str(), s.file.c_str(), join_counts(counts).c_str());
  }
  return Exit::ok;
}

CLI::App* setup_status(CLI::App& app, StatusOptions& o) {
  CLI::App* status = app.add_subcommand("status", "Runs of a sweep and their state (default: the latest sweep)");
  status->add_option("sweep", o.sweep, "Sweep name");
  status->add_option("--results", o.results, "Output root")->capture_default_str();
  return status;
}

Exit run_status(const StatusOptions& o) {
  std::unique_ptr<Store> opened;
  const std::string name = sweep_to_read(o.results, o.sweep, opened);
  Store& store = *opened;
  const auto rows = store.sweep_runs(name);
  if (rows.empty()) {
    throw Error("no sweep named '" + name + "' — `sweep ls` lists them", Exit::bad_input);
  }
  const bool jobs = std::any_of(rows.begin(), rows.end(), [](const SweepRunRow& r) { return !r.run.job.empty(); });
  std::printf("sweep %s\n%-32s %-14s %-16s %-10s %-8s %11s %9s %9s %8s %11s  %-30s %s%s\n", name.c_str(), "variant",
              "seed", "run", "state", "device", "step", "loss", "test", "attempts", "last event", "code (latest start)",
              jobs ? "slurm task         " : "", "error");
  const double unix_now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::optional<SweepInfo> info = store.sweep_info(name);
  const std::optional<EliminationDesign> eliminate = info ? info->design.eliminate : std::nullopt;
  for (const auto& r : rows) {
    const std::string seeds = seeds_in_column(r.run.init_seed, r.run.data_seed, r.run.repeat);
    const std::string step = std::to_string(r.run.steps) + "/" + std::to_string(r.run.total_steps);
    char loss[32], test[32];
    std::snprintf(loss, sizeof loss, "%s", format_number("%.4f", r.run.last_loss.value_or(NAN)).c_str());
    std::snprintf(test, sizeof test, "%s", format_number("%.4f", r.run.test_loss.value_or(NAN)).c_str());
    const std::string job = jobs ? r.run.job + " " + r.run.job_state : "";
    // Which code trained it: the commit and numerics version of its latest start.
    const std::vector<Segment> segments = store.segments(r.run.run_id);
    const std::string code = segments.empty() ? "-" : segments.back().code_label();
    // How long ago a running run's worker last sent an event (the watchdog's measure).
    const PlanState state = plan_state(r.run);
    const std::string heard = state == PlanState::running && !segments.empty()
                                  ? format_duration(std::max(0.0, unix_now - segments.back().last_event)) + " ago"
                                  : "-";
    // where its latest start trained (a run from before the device was recorded: the kind its config names)
    const std::string device = r.run.device.empty() ? "-" : r.run.device;
    std::printf("%-32s %-14s %-16s %-10s %-8s %11s %9s %9s %8lld %11s  %-30s %s%s\n", r.variant.c_str(), seeds.c_str(),
                r.run.run_id.c_str(), state_label(state, eliminate, r.run.run_id).c_str(), device.c_str(), step.c_str(),
                loss, test,
                static_cast<long long>(r.run.attempts), heard.c_str(), code.c_str(),
                jobs ? (job + std::string(19 - std::min<size_t>(19, job.size()), ' ')).c_str() : "",
                first_line(r.run.error).c_str());
  }
  return Exit::ok;
}

}  // namespace sweep
