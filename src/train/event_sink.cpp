#include "train/event_sink.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>

#include "protocol/events.h"
#include "util/error.h"

namespace sweep {

// Opens a file to append lines to. A last line left unfinished (its writer was killed, or the
// disk was full) is ended first, so that it never swallows the first line appended now.
static std::FILE* open_append(const std::string& path) {
  if (path.empty()) {
    return nullptr;
  }
  std::FILE* f = std::fopen(path.c_str(), "a+");
  if (f == nullptr) {
    throw io_error("open", path, errno);
  }
  if (std::fseek(f, -1, SEEK_END) == 0 && std::fgetc(f) != '\n') {
    std::fseek(f, 0, SEEK_END);
    std::fputc('\n', f);
  }
  return f;
}

// Writes a whole line, or throws naming the file (a full disk): a run's record is never silently cut.
static void put_line(std::FILE* f, const std::string& line, const std::string& path) {
  if (std::fputs(line.c_str(), f) < 0 || std::fflush(f) != 0) {
    throw io_error("write", path, errno);
  }
}

EventSink::EventSink(const std::string& events_path, const std::string& log_path, bool json_stdout, bool progress,
                     bool notes)
    : m_file(open_append(events_path)),
      m_log(open_append(log_path)),
      m_events_path(events_path),
      m_json_stdout(json_stdout),
      m_progress(progress),
      m_notes(notes) {}

EventSink::~EventSink() {
  if (m_file != nullptr) {
    std::fclose(m_file);
  }
  if (m_log != nullptr) {
    std::fclose(m_log);
  }
  if (m_progress_shown) {
    std::fputc('\n', stdout);
  }
}

void EventSink::emit(const std::string& type, nlohmann::json fields) {
  nlohmann::ordered_json ev;
  ev[events::field::event] = type;
  ev[events::field::time] = events::unix_time();
  for (auto& [key, value] : fields.items()) {
    ev[key] = value;
  }
  const std::string line = ev.dump() + "\n";
  m_last_emit = std::chrono::steady_clock::now();
  if (m_json_stdout) {  // first: a scheduler still hears of it when the file cannot be written
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
  }
  if (m_file != nullptr) {
    put_line(m_file, line, m_events_path);
  }
}

void EventSink::alive(int64_t step, const char* phase) {
  if (m_heartbeat > 0 &&
      std::chrono::duration<double>(std::chrono::steady_clock::now() - m_last_emit).count() >= m_heartbeat) {
    emit(events::heartbeat, {{events::field::step, step}, {events::field::phase, phase}});
  }
}

void EventSink::progress(const std::string& line) {
  if (!m_progress) {
    return;
  }
  std::fprintf(stdout, "\r\033[K%s", line.c_str());
  std::fflush(stdout);
  m_progress_shown = true;
}

void EventSink::note(const std::string& line) {
  if (m_log != nullptr) {
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
    std::fprintf(m_log, "%s  %s\n", stamp, line.c_str());
    std::fflush(m_log);
  }
  if (!m_notes) {
    return;
  }
  std::FILE* out = m_json_stdout ? stderr : stdout;
  if (m_progress_shown && !m_json_stdout) {
    std::fputs("\r\033[K", stdout);
  }
  std::fprintf(out, "%s\n", line.c_str());
  std::fflush(out);
}

}  // namespace sweep
