// The rules of an event's fields (events.h), one home for both readers of events: the store's
// ingest of any worker's events.jsonl (src/store), which skips an event that breaks one, and the
// host of a trainer of your own (src/trainer_host), which refuses the line and says why. One function
// per event type.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "protocol/events.h"
#include "protocol/run_state.h"

namespace sweep::events {

// A loss as events.h allows it: a number, or one of the strings "nan", "inf", "-inf".
inline bool is_loss_value(const nlohmann::json& v) {
  return v.is_number() || (v.is_string() && (v == "nan" || v == "inf" || v == "-inf"));
}

// A number written so: JSON has no NaN, so a non-finite one is the string "nan", "inf" or "-inf".
inline nlohmann::json json_number(double value) {
  if (std::isnan(value)) {
    return "nan";
  }
  if (std::isinf(value)) {
    return value > 0 ? "inf" : "-inf";
  }
  return value;
}

inline bool is_whole(const nlohmann::json& v) { return v.is_number_integer() && v.get<int64_t>() >= 0; }

inline bool is_finite_number(const nlohmann::json& v) { return v.is_number() && std::isfinite(v.get<double>()); }

// Which rules: `placement` — those that place an event in its run: a whole step (an end's may be
// missing or of another type: a failed worker's end has none), a train event's tokens, a loss, a
// split, an end's state a string when given (none, or one it does not know, is read as failed);
// an event of a type it does not know needs only its step (its time still counts toward its
// segment's). The store holds every event to these alone and reads an optional field of the wrong
// type as missing, so that events of a newer worker still load. `trainer` — every field's type,
// the event's type one events.h defines, and an end state a trainer of your own may say.
enum class Rules { placement, trainer };

namespace check {

// "" when it keeps them, else the problem, in words.
using Problem = std::string;

inline Problem common(const nlohmann::json& ev, const std::string& type, Rules rules) {
  if (rules == Rules::trainer && ev.contains(field::time) && !is_finite_number(ev[field::time])) {
    return "\"time\" must be unix seconds (a number)";
  }
  if (type != end ? !(ev.contains(field::step) && is_whole(ev[field::step]))
                  : rules == Rules::trainer && ev.contains(field::step) && !is_whole(ev[field::step])) {
    return "\"step\" must be a whole number ≥ 0 (optimizer steps taken)";
  }
  const bool needs_tokens = type == train;
  if (needs_tokens ? !(ev.contains(field::tokens) && is_whole(ev[field::tokens]))
                   : rules == Rules::trainer && ev.contains(field::tokens) && !is_whole(ev[field::tokens])) {
    return "\"tokens\" must be a whole number ≥ 0 (training tokens consumed)";
  }
  return "";
}

// The optional numbers of any event (the store reads one of another type as missing).
inline Problem numbers(const nlohmann::json& ev, Rules rules) {
  if (rules == Rules::trainer) {
    for (const char* optional : {field::lr, field::grad_norm, field::tokens_per_s}) {
      if (ev.contains(optional) && !is_loss_value(ev[optional])) {
        return std::string("\"") + optional + "\" must be a number";
      }
    }
  }
  return "";
}

inline Problem loss(const nlohmann::json& ev) {
  return ev.contains(field::loss) && is_loss_value(ev[field::loss]) ? ""
                                                                    : "\"loss\" must be a number, or \"nan\", \"inf\", \"-inf\"";
}

inline Problem train_event(const nlohmann::json& ev, Rules rules) {
  if (ev[field::step].get<int64_t>() < 1) {
    return "\"step\" of a train event counts the step just taken: 1 or more";
  }
  Problem p = loss(ev);
  return p.empty() ? numbers(ev, rules) : p;
}

inline Problem eval_event(const nlohmann::json& ev, Rules rules) {
  if (Problem p = loss(ev); !p.empty()) {
    return p;
  }
  if (Problem p = numbers(ev, rules); !p.empty()) {
    return p;
  }
  const bool known_split = ev.contains(field::split) && (ev[field::split] == val_split || ev[field::split] == test_split);
  return known_split ? "" : "\"split\" must be \"val\" or \"test\"";
}

inline Problem start_event(const nlohmann::json& ev, Rules rules) {
  if (rules != Rules::trainer) {
    return "";
  }
  if (Problem p = numbers(ev, rules); !p.empty()) {
    return p;
  }
  for (const char* count : {field::total_steps, field::tokens_per_step, field::params}) {
    if (!ev.contains(count)) {
      continue;
    }
    const nlohmann::json& v = ev[count];  // 1e9 is a whole number too
    if (!is_finite_number(v) || v.get<double>() < 0 || v.get<double>() != std::floor(v.get<double>()) ||
        v.get<double>() > 9e18) {
      return std::string("\"") + count + "\" must be a whole number ≥ 0";
    }
  }
  if (ev.contains(field::resumed) && !ev[field::resumed].is_boolean()) {
    return "\"resumed\" must be true or false";
  }
  return "";
}

// The state: a string when given (the store reads none, or one it does not know, as failed); a
// trainer of your own says done, diverged, failed or preempted (interrupted is sweep's own
// worker's: a disk it could not write).
inline Problem end_event(const nlohmann::json& ev, Rules rules) {
  const bool is_text = ev.contains(field::status) && ev[field::status].is_string();
  if (rules != Rules::trainer) {
    return is_text || !ev.contains(field::status) ? "" : "\"status\" must be a string";
  }
  if (Problem p = numbers(ev, rules); !p.empty()) {
    return p;
  }
  const std::optional<RunState> status = is_text ? parse_run_state(ev[field::status]) : std::nullopt;
  if (!status || !(*status == RunState::done || *status == RunState::diverged || *status == RunState::failed ||
                   *status == RunState::preempted)) {
    return "\"status\" must be \"done\", \"diverged\", \"failed\" or \"preempted\"";
  }
  for (const char* metric : {field::test_loss, field::test_bpb}) {
    if (ev.contains(metric) && !is_loss_value(ev[metric])) {
      return std::string("\"") + metric + "\" must be a number";
    }
  }
  return "";
}

}  // namespace check

// The event types events.h defines, in its order.
inline const std::vector<std::string>& known_events() {
  static const std::vector<std::string> k{start, train, eval, checkpoint, heartbeat, end};
  return k;
}

// "" when `ev` (an object) keeps the rules; else the first it breaks: "\"event\" must be one of
// ..." for a type events.h does not define (placement: "unknown event: ..." without a whole step),
// else "TYPE event: \"FIELD\" must be ...".
inline std::string event_problem(const nlohmann::json& ev, Rules rules) {
  const nlohmann::json& type = ev.contains(field::event) ? ev[field::event] : nlohmann::json();
  const auto& known = known_events();
  const bool is_known = type.is_string() && std::find(known.begin(), known.end(), type.get<std::string>()) != known.end();
  if (!is_known && rules == Rules::placement) {
    return ev.contains(field::step) && is_whole(ev[field::step]) ? "" : "unknown event: \"step\" must be a whole number ≥ 0";
  }
  if (!is_known) {
    std::string names;
    for (const auto& k : known) {
      names += (names.empty() ? "" : ", ") + k;
    }
    return "\"event\" must be one of " + names;
  }
  const std::string t = type.get<std::string>();
  check::Problem p = check::common(ev, t, rules);
  if (p.empty()) {
    p = t == train ? check::train_event(ev, rules)
        : t == eval  ? check::eval_event(ev, rules)
        : t == start ? check::start_event(ev, rules)
        : t == end   ? check::end_event(ev, rules)
                     : check::numbers(ev, rules);  // checkpoint, heartbeat
  }
  return p.empty() ? "" : t + " event: " + p;
}

}  // namespace sweep::events
