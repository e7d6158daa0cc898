// The order a run's events keep — one rule for every reader that takes events from outside
// sweep's own training core: the worker host reading a trainer of your own (one process), and a
// run folder's events.jsonl read whole (`sweep ingest`, the scheduler recovering a run). Stated in
// docs/reference.md ("the order of events"):
//   - the first end event ends the run: nothing after it changes the result. After a `done` (or
//     `diverged`) nothing is taken; after any other end, only a file goes on, and only with a new
//     `start` (the next attempt: a resume, a retry);
//   - a `done` before the run's `start` is a contract breach: taken as a `failed` end that says
//     so (the run is retried), never as a result;
//   - one process says `start` once; a `train` event's step is past the one before it (and past
//     the step its `start` resumed from); no train, eval or checkpoint event comes before a start;
//   - an event at a step past the `total_steps` its start announced is no step of the run, and is
//     ignored — every event but the end: an end past it (nanoGPT's loop ends at max_iters + 1) is
//     the run's end all the same (outside_run, which the store holds every event to as well);
//   - in a file, the scheduler's own end of an attempt (`"by": "sweep"`: how it read the worker's
//     exit, a crash, a kill) follows the worker's end, if any: it replaces a non-final end, never a
//     result. An attempt that has no end (the worker and the scheduler both killed) stopped without
//     saying how: its run resumes (k_no_end_event);
//   - what an end says of the run (end_of_run): its state, except that a `done` is a run with a
//     result — without a test_loss it is `failed` (the contract broken), with one that is not a
//     finite number `diverged`.
// The events reaching it have passed the field checks (protocol/event_check.h, in the trainer host); the store (and the
// scheduler's stream from sweep's own workers, which this rule filtered) takes them as they come.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/event_check.h"
#include "protocol/events.h"
#include "protocol/json_line.h"
#include "protocol/run_state.h"

namespace sweep::events {

inline constexpr const char* k_done_before_start = "contract breach: an end event \"done\" before the run's \"start\"";
inline constexpr const char* k_no_end_event =
    "its events stop without an end event (its worker was killed, and the scheduler with it): `sweep run` resumes it";

inline constexpr const char* k_no_test_loss =
    "the trainer ended \"done\" without a test_loss (the contract: a done run reports its test loss)";
inline constexpr const char* k_non_finite_test_loss = "non-finite test loss";

// What an end event makes of its run — one rule, which the trainer host writes into the event
// and the store records: the state it says (none, or one this version does not know: failed) and
// its reason, except that a done run is one with a result (k_no_test_loss, k_non_finite_test_loss).
struct EndOfRun {
  RunState state = RunState::failed;
  std::string reason;
};
inline EndOfRun end_of_run(const nlohmann::json& end) {
  const auto status = end.find(field::status);
  const auto reason = end.find(field::reason);
  EndOfRun r;
  if (status != end.end() && status->is_string()) {
    r.state = parse_run_state(status->get<std::string>()).value_or(RunState::failed);
  }
  if (reason != end.end() && reason->is_string()) {
    r.reason = reason->get<std::string>();
  }
  if (r.state == RunState::done) {
    const auto loss = end.find(field::test_loss);
    if (loss == end.end()) {
      r = {RunState::failed, k_no_test_loss};
    } else if (!is_finite_number(*loss)) {
      r = {RunState::diverged, k_non_finite_test_loss};
    }
  }
  return r;
}

// The "by" of an end event the scheduler writes into a run's folder, never a worker's (the trainer
// host drops the field from a program's events).
inline constexpr const char* k_by_scheduler = "sweep";

// An event at a step outside its run — a negative step, or a step past the total_steps its start
// announced (0: not said) for any event but the start and the end — is no event of the run: why, or
// "". One rule for the host (EventOrder) and the store (every line it ingests).
inline std::string outside_run(const std::string& type, int64_t step, int64_t total_steps) {
  if (step < 0) {
    return "a negative step";
  }
  if (type != start && type != end && total_steps > 0 && step > total_steps) {
    return "step " + std::to_string(step) + " past the run's total_steps " + std::to_string(total_steps);
  }
  return "";
}

class EventOrder {
 public:
  enum class Source {
    one_process,  // one program's output: one start, one end
    file,         // an events.jsonl: one attempt after another, each from its start
  };
  explicit EventOrder(Source source) : m_source(source) {}

  // Whether to take `ev` (an event object): "" to take it, else why it is ignored. A `done`
  // before the start is rewritten in place into a `failed` end with k_done_before_start and taken.
  std::string next(nlohmann::json& ev) {
    const std::string type = ev.value(field::event, std::string());
    // its step as the store reads it: a missing one, or one of another type, is 0
    const int64_t step = ev.contains(field::step) && ev[field::step].is_number_integer() ? ev[field::step].get<int64_t>() : 0;
    if (m_at == At::final_end) {
      return "after the run's end event \"" + m_end + "\", which is its result";
    }
    if (m_at == At::ended) {
      const bool scheduler_end = m_source == Source::file && type == end && ev.value(field::by, std::string()) == k_by_scheduler;
      if (m_source == Source::one_process || (type != start && !scheduler_end)) {
        return "after the run's end event \"" + m_end + "\"";
      }
    }
    if (type == start) {
      if (m_at == At::running && m_source == Source::one_process) {
        return "a second start event from one program";
      }
      // an attempt, as the scheduler counts them: not a resume after a preemption or an interruption
      const bool resumed = m_at == At::ended && (m_end == to_string(RunState::preempted) ||
                                                 m_end == to_string(RunState::interrupted));
      m_attempts += resumed ? 0 : 1;
      m_at = At::running;
      m_last_train = step;
      const auto total = ev.find(field::total_steps);
      m_total_steps = total != ev.end() && total->is_number_integer() ? total->get<int64_t>() : 0;
      return "";
    }
    if (std::string outside = outside_run(type, step, m_total_steps); !outside.empty()) {
      return outside;
    }
    // a step is of an attempt: none before its start (a retry that says train 2 without its start)
    if (m_at == At::before_start && (type == train || type == eval || type == checkpoint)) {
      return "a " + type + " event before the run's start event";
    }
    if (type == end) {
      if (m_at == At::before_start && ev.value(field::status, std::string()) == to_string(RunState::done)) {
        ev[field::status] = to_string(RunState::failed);
        ev[field::reason] = k_done_before_start;
        ev.erase(field::test_loss);
        ev.erase(field::test_bpb);
      }
      m_end = ev.value(field::status, std::string());
      const std::optional<RunState> said = parse_run_state(m_end);
      m_at = said && finished(*said) ? At::final_end : At::ended;
      return "";
    }
    if (type == train && m_at == At::running) {
      if (step <= m_last_train) {
        return "step " + std::to_string(step) + " after step " + std::to_string(m_last_train) + ": steps go forward";
      }
      m_last_train = step;
    }
    return "";
  }

  // Whether the events so far end in an attempt with no end event: a start, and nothing that ended it.
  bool attempt_open() const { return m_at == At::running; }
  // The attempts the starts so far make, as the scheduler counts its launches: every start but one
  // that resumes after a preemption or an interruption (a pause for a look, Ctrl-C).
  int64_t attempts() const { return m_attempts; }

 private:
  enum class At { before_start, running, ended, final_end };
  Source m_source;
  At m_at = At::before_start;
  int64_t m_last_train = 0;
  int64_t m_total_steps = 0;  // as the latest start announced (0: not said)
  int64_t m_attempts = 0;
  std::string m_end;
};

// The lines of a whole events.jsonl, in this order: the ignored ones left out (and the events that
// break the store's placement rules), a done before its start rewritten. Lines that are no event
// pass as they are (their readers skip them).
// One line of a file, in `order`: the line to pass on (rewritten where a done came before its
// start), or nullopt when it is ignored.
inline std::optional<std::string> line_in_order(const std::string& line, EventOrder& order) {
  nlohmann::json ev = parse_json_line(line);
  if (!ev.is_object() || !ev.contains(field::event) || !ev[field::event].is_string()) {
    return line;
  }
  const std::string before = ev.value(field::status, std::string());
  // an event the store would not place is no event of the run (nor a start of an attempt)
  if (!event_problem(ev, Rules::placement).empty() || !order.next(ev).empty()) {
    return std::nullopt;
  }
  return ev.value(field::status, std::string()) == before ? line : ev.dump();
}

// `order` (a file's) is left as the lines left it: attempt_open() says how the file ends.
inline std::vector<std::string> in_event_order(const std::vector<std::string>& lines, EventOrder& order) {
  std::vector<std::string> kept;
  kept.reserve(lines.size());
  for (const auto& line : lines) {
    if (auto taken = line_in_order(line, order)) {
      kept.push_back(std::move(*taken));
    }
  }
  return kept;
}

inline std::vector<std::string> in_event_order(const std::vector<std::string>& lines) {
  EventOrder order(EventOrder::Source::file);
  return in_event_order(lines, order);
}

}  // namespace sweep::events
