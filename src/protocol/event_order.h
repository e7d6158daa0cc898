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
//     the step its `start` resumed from).
// The events reaching it have passed the field checks (protocol/event_check.h, in the trainer host); the store (and the
// scheduler's stream from sweep's own workers, which this rule filtered) takes them as they come.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/events.h"
#include "protocol/json_line.h"
#include "protocol/run_state.h"

namespace sweep::events {

inline constexpr const char* k_done_before_start = "contract breach: an end event \"done\" before the run's \"start\"";

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
    const int64_t step = ev.contains(field::step) && ev[field::step].is_number_integer() ? ev[field::step].get<int64_t>() : -1;
    if (m_at == At::final_end) {
      return "after the run's end event \"" + m_end + "\", which is its result";
    }
    if (m_at == At::ended) {
      if (m_source == Source::one_process || type != start) {
        return "after the run's end event \"" + m_end + "\"";
      }
    }
    if (type == start) {
      if (m_at == At::running && m_source == Source::one_process) {
        return "a second start event from one program";
      }
      m_at = At::running;
      m_last_train = step;
      return "";
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

 private:
  enum class At { before_start, running, ended, final_end };
  Source m_source;
  At m_at = At::before_start;
  int64_t m_last_train = -1;
  std::string m_end;
};

// The lines of a whole events.jsonl, in this order: the ignored ones left out, a done before its
// start rewritten. Lines that are no event pass as they are (their readers skip them).
inline std::vector<std::string> in_event_order(const std::vector<std::string>& lines) {
  EventOrder order(EventOrder::Source::file);
  std::vector<std::string> kept;
  kept.reserve(lines.size());
  for (const auto& line : lines) {
    nlohmann::json ev = parse_json_line(line);
    if (!ev.is_object() || !ev.contains(field::event) || !ev[field::event].is_string()) {
      kept.push_back(line);
      continue;
    }
    const std::string before = ev.value(field::status, std::string());
    if (!order.next(ev).empty()) {
      continue;
    }
    kept.push_back(ev.value(field::status, std::string()) == before ? line : ev.dump());
  }
  return kept;
}

}  // namespace sweep::events
