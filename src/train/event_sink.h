// The worker → scheduler event protocol (its names and version: protocol/events.h): one JSON
// object per line, appended to the run's events.jsonl and, in events mode, printed on stdout.
// JSON has no NaN: non-finite numbers are written as the strings "nan", "inf", "-inf".
// On a terminal (not events mode) a one-line live progress display replaces the JSON.
#pragma once

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "protocol/event_check.h"

namespace sweep {

using events::json_number;  // (protocol/event_check.h: the writers' one spelling of a non-finite number)

class EventSink {
 public:
  // events_path / log_path "" = no file. json_stdout: print events on stdout (human notes then
  // go to stderr). progress: a live line on the terminal.
  // notes: show human-readable notes on the terminal (off for ranks other than 0).
  EventSink(const std::string& events_path, const std::string& log_path, bool json_stdout, bool progress,
            bool notes = true);
  ~EventSink();
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;

  // Adds the event's type and time (unix seconds), writes the line and flushes it.
  void emit(const std::string& type, nlohmann::json fields);
  // Called often during a long phase: a heartbeat event (step, phase) when no event went out for
  // `interval` seconds (set_heartbeat; 0 = never).
  void alive(int64_t step, const char* phase);
  void set_heartbeat(double interval) { m_heartbeat = interval; }
  // Rewrites the live progress line (no-op unless progress is on).
  void progress(const std::string& line);
  // A human-readable line: appended to the log, and shown on the terminal (stderr in events mode).
  void note(const std::string& line);

 private:
  std::FILE* m_file = nullptr;
  std::FILE* m_log = nullptr;
  std::string m_events_path;
  bool m_json_stdout;
  bool m_progress;
  bool m_notes;
  bool m_progress_shown = false;
  double m_heartbeat = 0;
  std::chrono::steady_clock::time_point m_last_emit = std::chrono::steady_clock::now();
};

}  // namespace sweep
