// The states of a run, and their one spelling: in the database's runs.status, in a worker's
// `end` event, on `sweep status` / `sweep plan`. Every module compares states through these enums;
// their strings appear nowhere else.
#pragma once

#include <optional>
#include <string>

namespace sweep {

// What the database records (runs.status).
// pending → running → done | diverged | failed | oom | interrupted (resumable) | preempted (resumable)
enum class RunState { pending, running, done, diverged, failed, oom, interrupted, preempted };

// What `sweep plan` / `sweep status` show and the scheduler acts on: a recorded state read with
// what is known now (a run recorded `running` whose worker has gone is resumable).
// done | diverged (finished) · failed | oom (need --retry-failed) · resumable · running · pending
enum class PlanState { pending, running, resumable, done, diverged, failed, oom };

inline const char* to_string(RunState s) {
  switch (s) {
    case RunState::pending: return "pending";
    case RunState::running: return "running";
    case RunState::done: return "done";
    case RunState::diverged: return "diverged";
    case RunState::failed: return "failed";
    case RunState::oom: return "oom";
    case RunState::interrupted: return "interrupted";
    case RunState::preempted: return "preempted";
  }
  return "failed";
}

inline const char* to_string(PlanState s) {
  switch (s) {
    case PlanState::pending: return "pending";
    case PlanState::running: return "running";
    case PlanState::resumable: return "resumable";
    case PlanState::done: return "done";
    case PlanState::diverged: return "diverged";
    case PlanState::failed: return "failed";
    case PlanState::oom: return "oom";
  }
  return "failed";
}

// nullopt for a string that is no state (a database or an event from elsewhere).
inline std::optional<RunState> parse_run_state(const std::string& text) {
  for (RunState s : {RunState::pending, RunState::running, RunState::done, RunState::diverged, RunState::failed,
                     RunState::oom, RunState::interrupted, RunState::preempted}) {
    if (text == to_string(s)) {
      return s;
    }
  }
  return std::nullopt;
}

// Finished: its result (or its divergence) is final; `sweep run` never starts it again.
inline bool finished(RunState s) { return s == RunState::done || s == RunState::diverged; }
inline bool finished(PlanState s) { return s == PlanState::done || s == PlanState::diverged; }
// Ended badly: started again only by `sweep run --retry-failed`.
inline bool failed(PlanState s) { return s == PlanState::failed || s == PlanState::oom; }

}  // namespace sweep
