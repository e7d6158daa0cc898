#include "sched/lifecycle.h"

#include <signal.h>

#include <algorithm>
#include <set>

#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep {

std::string state_label(PlanState state, const std::optional<EliminationDesign>& eliminate, const std::string& run_id) {
  const bool waiting = state == PlanState::resumable || state == PlanState::pending;
  return waiting && eliminate && eliminate->stop_of(run_id) != nullptr ? "stopped" : to_string(state);
}

PlanState plan_state(const RunRow& row, bool worker_alive) {
  switch (row.status) {
    case RunState::done: return PlanState::done;
    case RunState::diverged: return PlanState::diverged;
    case RunState::failed: return PlanState::failed;
    case RunState::oom: return PlanState::oom;
    case RunState::interrupted:
    case RunState::preempted: return PlanState::resumable;
    case RunState::running: return !row.job.empty() || worker_alive ? PlanState::running : PlanState::resumable;
    case RunState::pending: return PlanState::pending;
  }
  return PlanState::pending;
}

PlanState plan_state(const RunRow& row) {
  return plan_state(row, row.status == RunState::running && row.job.empty() && worker_alive(row));
}

bool worker_alive(const RunRow& row) {
  if (row.pid <= 0 || !process_alive(static_cast<pid_t>(row.pid))) {
    return false;
  }
  std::string cmdline = read_file("/proc/" + std::to_string(row.pid) + "/cmdline");
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  return cmdline.find(" worker ") != std::string::npos && cmdline.find(row.run_dir) != std::string::npos;
}

ToDo runs_to_do(const std::vector<const PlannedRun*>& runs,
                const std::function<PlanState(const std::string&)>& state_of, bool retry_failed) {
  ToDo todo;
  std::set<std::string> seen;
  for (const PlannedRun* run : runs) {
    if (!seen.insert(run->run_id).second) {
      continue;
    }
    const PlanState state = state_of(run->run_id);
    if (finished(state)) {
      ++todo.finished_before;
    } else if (failed(state) && !retry_failed) {
      ++todo.failed_before;
    } else {
      todo.runs.push_back(run);
    }
  }
  todo.total = seen.size();
  return todo;
}

double estimated_flops(const PlannedRun& run) {
  if (run.config.trainer) {
    return 0;
  }
  return model_size(run.config.model).flops_per_token * static_cast<double>(run.config.train.tokens);
}

void longest_first(std::vector<const PlannedRun*>& runs) {
  std::stable_sort(runs.begin(), runs.end(), [](const PlannedRun* a, const PlannedRun* b) {
    return estimated_flops(*a) > estimated_flops(*b);
  });
}

Outcome classify_end(const EndFacts& f) {
  const std::string stopped_by_user = "stopped with the sweep; `sweep run` again resumes it";
  // Its end event said done or diverged: that is its result, however the worker ended after it
  // (the first end event is the run's: protocol/event_order.h)
  if (finished(f.recorded)) {
    const bool clean = f.stalled.empty() && (!f.exit_code || *f.exit_code == static_cast<int>(Exit::ok) ||
                                             (f.recorded == RunState::diverged && *f.exit_code == static_cast<int>(Exit::diverged)));
    std::string note = f.recorded_error;
    if (!clean) {
      note += std::string(note.empty() ? "" : "; ") + "after its end event \"" + to_string(f.recorded) + "\" the worker " +
              (!f.stalled.empty() ? "stalled (" + f.stalled + ") and was killed" : "exited " + std::to_string(*f.exit_code)) +
              ": the result stands";
    }
    return {f.recorded, Then::finished, note};
  }
  if (!f.stalled.empty()) {  // killed by the watchdog: a crash, never out of memory
    if (f.stopping) {
      return {RunState::interrupted, Then::stopped, stopped_by_user};
    }
    const bool retry = f.crashes < f.retries;
    return {RunState::failed, retry ? Then::retry : Then::give_up,
            "stalled: " + f.stalled + " — killed" +
                (retry ? "; retried from its checkpoint" : "; it resumes from its checkpoint with --retry-failed")};
  }
  // A batch task's exit is unknown: its events say how it ended. One that checkpointed and stopped
  // on SIGTERM (a cancel by an earlier `sweep run` that this one found still completing, say)
  // said "preempted": that is exit 75.
  if (!f.exit_code && f.recorded != RunState::preempted) {
    if (f.stopping) {
      return {RunState::interrupted, Then::stopped, stopped_by_user};
    }
    return {RunState::failed, Then::give_up, f.detail + "\n" + f.log_tail};
  }
  const int code = f.exit_code.value_or(static_cast<int>(Exit::preempted));
  if (code == static_cast<int>(Exit::diverged)) {
    return {RunState::diverged, Then::finished, f.recorded_error};
  }
  // 75: checkpointed and stopped; 143/130: the signal came before the worker had installed its
  // handler (still starting), so there is nothing to lose either.
  if (code == static_cast<int>(Exit::preempted) || code == 128 + SIGTERM || code == 128 + SIGINT) {
    if (f.paused_at && f.recorded == RunState::preempted && f.steps >= *f.paused_at) {
      return {RunState::preempted, Then::paused,
              "paused at step " + std::to_string(*f.paused_at) + " for " + f.paused_for};
    }
    if (f.stopping) {
      return {RunState::interrupted, Then::stopped, stopped_by_user};
    }
    if (f.preemptions >= f.max_preemptions) {  // something keeps stopping it: say so, do not loop
      return {RunState::failed, Then::give_up,
              "stopped by SIGTERM " + std::to_string(f.preemptions + 1) + " times (--max-preemptions " +
                  std::to_string(f.max_preemptions) + "); it resumes from its checkpoint with --retry-failed"};
    }
    return {RunState::preempted, Then::requeue, "stopped by SIGTERM; re-queued"};
  }
  if (f.stopping && code == 128 + SIGKILL) {  // the second Ctrl-C: its last checkpoint stands
    return {RunState::interrupted, Then::stopped, "killed with the sweep; `sweep run` again resumes it from its last checkpoint"};
  }
  if (code == static_cast<int>(Exit::io_error)) {
    // Its files could not be written: nothing of it is lost, and every run would fail alike.
    // Its last "sweep: cannot write PATH: ..." (srun may add a line of its own after it).
    const std::vector<std::string> lines = split(trim(f.log_tail), '\n');
    const auto said = std::find_if(lines.rbegin(), lines.rend(),
                                   [](const std::string& l) { return l.rfind("sweep: ", 0) == 0; });
    return {RunState::interrupted, Then::halt,
            said != lines.rend() ? said->substr(7)
                                 : "its files could not be written (exit 74); `sweep run` again resumes it"};
  }
  if (f.out_of_memory) {
    return {RunState::oom, Then::give_up,
            "killed (exit " + std::to_string(code) + "): out of memory or SIGKILL — not retried; " +
                "give it a bigger device or a smaller micro_batch, then --retry-failed\n" + f.log_tail};
  }
  const std::string reason = code == 0                ? "exited 0 without an end event"
                             : code == 128 + SIGKILL ? "killed by SIGKILL (no out-of-memory kill recorded)"
                                                     : "exit " + std::to_string(code) + "\n" + f.log_tail;
  if (f.own_failed_before_start && code > 0 && code < 128 && !f.stopping) {
    return {RunState::failed, Then::give_up,
            "exit " + std::to_string(code) + " before its first event — not retried: it would fail the same way; "
            "`sweep run --retry-failed` runs it again once mended" +
                std::string(f.steps > 0 ? " (it was resuming from its checkpoint: one cut by a stop fails so — "
                                          "remove the run's checkpoint/ folder to start it afresh)"
                                        : "") +
                "\n" + f.log_tail};
  }
  const bool retry = code != static_cast<int>(Exit::bad_input) && f.crashes < f.retries && !f.stopping;
  return {RunState::failed, retry ? Then::retry : Then::give_up, reason};
}

std::vector<std::string> worker_argv(const std::string& binary, const std::string& run_dir, const std::string& data_dir,
                                     int64_t threads, const std::string& device, double stall_timeout,
                                     const std::string& pause_at) {
  std::vector<std::string> argv{binary,    "worker", run_dir + "/config.yaml",
                                "--run-dir", run_dir,  "--data",
                                data_dir,    "--resume", "--events",
                                "--set",     "resources.threads=" + std::to_string(threads)};
  if (!device.empty()) {
    argv.insert(argv.end(), {"--set", "resources.device=" + device});
  }
  if (stall_timeout >= 0) {
    argv.insert(argv.end(), {"--set", "resources.stall_timeout=" + format_number("%g", stall_timeout)});
  }
  if (!pause_at.empty()) {
    argv.insert(argv.end(), {"--pause-at-step", pause_at});
  }
  return argv;
}

}  // namespace sweep
