#include "trainer_host/host.h"

#include "trainer_host/output_reader.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include "build_options.h"
#include "config/sweep_spec.h"
#include "protocol/event_order.h"
#include "protocol/event_check.h"
#include "protocol/events.h"
#include "protocol/json_line.h"
#include "protocol/run_state.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/process.h"
#include "util/signals.h"
#include "util/text.h"

namespace sweep {

namespace {

namespace field = events::field;

// A line longer than k_max_event_line, cut there: no event, a note in the log.
std::string cut(const std::string& line) {
  return line.substr(0, k_max_event_line) + " [cut: a line longer than " + std::to_string(k_max_event_line) + " bytes]";
}

// The complete lines of `buffer` (a partial last line kept); a line longer than k_max_event_line
// is cut there (its rest is dropped up to its end).
std::vector<std::string> split_lines(std::string& buffer, bool& skipping) {
  std::vector<std::string> lines;
  size_t start = 0, nl;
  while ((nl = buffer.find('\n', start)) != std::string::npos) {
    if (!skipping) {
      const std::string line = buffer.substr(start, nl - start);
      lines.push_back(line.size() > k_max_event_line ? cut(line) : line);
    }
    skipping = false;
    start = nl + 1;
  }
  buffer.erase(0, start);
  if (buffer.size() > k_max_event_line) {
    if (!skipping) {
      lines.push_back(cut(buffer));
    }
    buffer.clear();
    skipping = true;
  }
  return lines;
}

// The lines a child's stdout holds now (non-blocking).
std::vector<std::string> read_lines(int fd, std::string& buffer, bool& skipping) {
  std::vector<std::string> lines;
  char chunk[65536];
  while (fd >= 0) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) {
      break;
    }
    buffer.append(chunk, static_cast<size_t>(n));
    for (auto& line : split_lines(buffer, skipping)) {
      lines.push_back(std::move(line));
    }
  }
  return lines;
}

// The caps above; a test build (-DSWEEP_TEST_HOOKS=ON) takes smaller ones from
// SWEEP_TEST_LOG_CAP and SWEEP_TEST_EVENTS_CAP (bytes), so that a test can reach them.
int64_t cap(const char* test_variable, int64_t value) {
#ifdef SWEEP_TEST_HOOKS
  if (const char* v = std::getenv(test_variable)) {
    return std::stoll(v);
  }
#else
  (void)test_variable;
#endif
  return value;
}

// worker.log as the host writes it (its stderr): a program's output up to k_max_log_bytes, then a
// note, then only the last k_log_tail bytes, kept until the program ends (a crash's own words are
// at its end). sweep's own closing lines go straight to stderr, after finish().
class CappedLog {
 public:
  void write(const char* data, size_t n) {
    if (m_written < m_cap) {
      const size_t now = std::min<size_t>(n, static_cast<size_t>(m_cap - m_written));
      std::fwrite(data, 1, now, stderr);
      m_written += static_cast<int64_t>(now);
      data += now;
      n -= now;
      if (n == 0) {
        return;
      }
      std::fprintf(stderr, "\nsweep: worker.log took %lld bytes of the program's output in this attempt, its cap: the "
                           "rest is dropped but for its last %zu KiB, below when it ends (its events still count)\n",
                   static_cast<long long>(m_cap), k_log_tail >> 10);
    }
    m_dropped += static_cast<int64_t>(n);
    m_tail.append(data, n);
    if (m_tail.size() > 2 * k_log_tail) {
      m_tail.erase(0, m_tail.size() - k_log_tail);
    }
  }
  void line(const std::string& text) {
    write(text.data(), text.size());
    write("\n", 1);
  }
  void finish() {
    if (m_dropped > 0) {
      const size_t keep = std::min(m_tail.size(), k_log_tail);
      std::fprintf(stderr, "\nsweep: %lld bytes of the program's output dropped; its last %zu bytes:\n",
                   static_cast<long long>(m_dropped - static_cast<int64_t>(keep)), keep);
      std::fwrite(m_tail.data() + m_tail.size() - keep, 1, keep, stderr);
      std::fputc('\n', stderr);
      m_dropped = 0;
      m_tail.clear();
    }
    std::fflush(stderr);
  }

 private:
  const int64_t m_cap = cap("SWEEP_TEST_LOG_CAP", k_max_log_bytes);
  int64_t m_written = 0, m_dropped = 0;
  std::string m_tail;
};

}  // namespace

std::optional<nlohmann::json> accept_event(const std::string& line, const OwnTrainer& trainer, std::string& why) {
  why.clear();
  // a line that opens an object and names "event" was meant as one: if it is no JSON, say why
  const size_t first = line.find_first_not_of(" \t");
  const bool meant_as_event = first != std::string::npos && line[first] == '{' && line.find("\"event\"") != std::string::npos;
  nlohmann::json ev = events::parse_json_line(line, meant_as_event ? &why : nullptr);
  if (ev.is_discarded() || !ev.is_object() || !ev.contains(field::event)) {
    return std::nullopt;  // the trainer's own output
  }
  if (!ev.contains(field::time)) {
    ev[field::time] = events::unix_time();
  }
  ev.erase(field::by);  // the scheduler's mark on an end it wrote itself: never a program's
  why = events::event_problem(ev, events::Rules::trainer);  // protocol/event_check.h
  if (!why.empty()) {
    return std::nullopt;
  }
  const std::string t = ev[field::event].get<std::string>();
  if (t == events::start) {
    for (const char* count : {field::total_steps, field::tokens_per_step, field::params}) {
      if (ev.contains(count)) {  // a whole number, 1e9 too
        ev[count] = static_cast<int64_t>(ev[count].get<double>());
      }
    }
    ev[field::code] = "trainer " + trainer.name + "@" + trainer.version();  // what trained it, as sweep knows it
    ev.erase(field::numerics);  // the built-in core's maths version: not this program's
    if (!ev.contains(field::schema) || !ev[field::schema].is_number_integer()) {
      ev[field::schema] = events::k_events_version;
    }
  }
  if (t == events::end) {
    if (ev.contains(field::reason) && !ev[field::reason].is_string()) {
      ev[field::reason] = ev[field::reason].dump();
    }
    // what the store will record of it, written into the event (a done without a result is not done)
    const events::EndOfRun said = events::end_of_run(ev);
    ev[field::status] = to_string(said.state);
    if (!said.reason.empty()) {
      ev[field::reason] = said.reason;
    }
  }
  return ev;
}

namespace {

// What the program's trouble, its end event (the first: stamped) and its exit code make of the run.
struct Trouble {
  bool breach = false;           // a done before the start: stopped, retried
  bool too_many_events = false;  // past events.jsonl's cap: stopped, failed
  bool write_failed = false;     // events.jsonl could not be written: resumable
  std::string unreadable;        // trainer.output read a line it cannot take (or none): stopped, failed
};

Exit exit_of(const std::optional<nlohmann::json>& the_end, int code, const Trouble& trouble, int64_t events_cap) {
  if (trouble.too_many_events) {
    std::fprintf(stderr, "sweep: events.jsonl took %lld bytes of events in this attempt, its cap: the program was stopped "
                         "— an event per step at most, heartbeats at most one a second\n",
                 static_cast<long long>(events_cap));
    return Exit::bad_input;
  }
  if (trouble.write_failed) {
    return Exit::io_error;  // the run resumes from its checkpoint once there is room
  }
  if (!trouble.unreadable.empty()) {  // the same lines again would be read the same: not retried
    std::fprintf(stderr, "sweep: %s — not retried: the same lines would be read the same (fix trainer.output in "
                         "the sweep file, or the program)\n",
                 trouble.unreadable.c_str());
    return Exit::bad_input;
  }
  if (trouble.breach) {
    std::fprintf(stderr, "sweep: %s — stopped; the run is retried\n", events::k_done_before_start);
    return Exit::failed;
  }
  const std::string said = the_end ? (*the_end)[field::status].get<std::string>() : "";
  if (said == to_string(RunState::done)) {  // its result is recorded: what follows it changes nothing
    if (code != 0) {
      std::fprintf(stderr, "sweep: the trainer exited %d after its end event \"done\": the run counts as done\n", code);
    }
    return Exit::ok;
  }
  if (said == to_string(RunState::diverged)) {
    return Exit::diverged;
  }
  if (said == to_string(RunState::preempted) && (code == 0 || code == static_cast<int>(Exit::preempted))) {
    return Exit::preempted;
  }
  if (said == to_string(RunState::failed) && code == 0) {
    // a contract the trainer broke (a done without a test loss) fails the same way again: not retried
    const std::string reason = the_end->value(field::reason, "");
    std::fprintf(stderr, "sweep: %s\n", reason.c_str());  // the log's tail says why
    return reason == events::k_no_test_loss ? Exit::bad_input : Exit::failed;
  }
  if (code == static_cast<int>(Exit::bad_input) || code == static_cast<int>(Exit::io_error)) {
    return Exit::failed;  // sweep's own meanings of 2 and 74: from the trainer, a crash (retried)
  }
  return static_cast<Exit>(code);
}

// What the host starts: the trainer's command with its {placeholders} filled in and found, and
// its environment (the SWEEP_* variables; torchrun's for several ranks).
struct Launch {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  int ranks = 1;
  OutputReader::Counts counts;  // trainer.output's counts, for this run's keys
};

// trainer.output's counts for a run (its keys' values filled in): whole numbers, or an error.
OutputReader::Counts counts_of(const OwnTrainer& trainer, const std::map<std::string, std::string>& placeholders) {
  OutputReader::Counts counts;
  if (!trainer.output) {
    return counts;
  }
  const std::vector<std::pair<const char*, std::pair<const std::string*, std::optional<int64_t>*>>> all{
      {"tokens_per_step", {&trainer.output->tokens_per_step, &counts.tokens_per_step}},
      {"total_steps", {&trainer.output->total_steps, &counts.total_steps}},
      {"params", {&trainer.output->params, &counts.params}}};
  for (const auto& [name, count] : all) {
    if (count.first->empty()) {
      continue;
    }
    std::string why;
    const std::optional<double> v = evaluate_count(*count.first, placeholders, why);
    if (!v || !(*v >= 0) || *v != std::floor(*v) || *v > 9e18) {
      const std::string said =
          v ? "'" + *count.first + "' is " + format_number("%g", *v) + " for this run, not a whole number ≥ 0" : why;
      throw Error("trainer " + trainer.name + ": trainer.output." + name + " " + said, Exit::bad_input);
    }
    *count.second = static_cast<int64_t>(*v);
  }
  return counts;
}

Launch launch_of(const RunConfig& cfg, const fs::path& dir, bool resume) {
  const OwnTrainer& trainer = *cfg.trainer;
  const fs::path checkpoints = dir / "checkpoint";
  std::map<std::string, std::string> placeholders{
      {"config", fs::absolute(dir / "config.yaml").string()}, {"config_json", fs::absolute(dir / "config.json").string()},
      {"run_dir", fs::absolute(dir).string()},               {"checkpoint_dir", fs::absolute(checkpoints).string()},
      {"init_seed", std::to_string(cfg.seeds.init)},          {"data_seed", std::to_string(cfg.seeds.data)}};
  // every key of the trainer's config, {train.lr}: a string as it is, anything else as JSON writes it
  std::function<void(const nlohmann::json&, const std::string&)> add_keys = [&](const nlohmann::json& node,
                                                                                 const std::string& prefix) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
      if (it->is_object()) {
        add_keys(*it, name);
      } else {
        placeholders.emplace(name, it->is_string() ? it->get<std::string>() : it->dump());
      }
    }
  };
  add_keys(cfg.values, "");
  std::vector<std::string> argv;
  for (const auto& part : trainer.command) {
    argv.push_back(fill_placeholders(part, placeholders));
  }
  if (resume) {
    for (const auto& part : trainer.resume_args) {
      argv.push_back(fill_placeholders(part, placeholders));
    }
  }
  const std::string program = argv.front();
  const std::optional<std::string> found = find_trainer_program(program, trainer.dir);
  if (!found) {
    throw Error("trainer " + trainer.name + ": cannot run " + program + " (from " + trainer.dir +
                    ") — it is not an executable file here, or not on PATH",
                Exit::bad_input);
  }
  argv.front() = *found;
  const int threads = cfg.threads();
  std::map<std::string, std::string> env{{"SWEEP_RUN_DIR", placeholders.at("run_dir")},
                                         {"SWEEP_CONFIG", placeholders.at("config_json")},
                                         {"SWEEP_CONFIG_YAML", placeholders.at("config")},
                                         {"SWEEP_CHECKPOINT_DIR", placeholders.at("checkpoint_dir")},
                                         {"SWEEP_RESUME", resume ? "1" : "0"},
                                         {"SWEEP_INIT_SEED", placeholders.at("init_seed")},
                                         {"SWEEP_DATA_SEED", placeholders.at("data_seed")},
                                         {"SWEEP_THREADS", std::to_string(threads)},
                                         {"OMP_NUM_THREADS", std::to_string(threads)},
                                         {"SWEEP_DEVICE", cfg.resources.device},
                                         {"SWEEP_STALL_TIMEOUT", format_number("%g", cfg.resources.stall_timeout)},
                                         {"SWEEP_EVENTS_SCHEMA", std::to_string(events::k_events_version)}};
  if (trainer.output) {  // its lines are read as they are printed: a Python program's too
    env["PYTHONUNBUFFERED"] = "1";
  }
  const int ranks = static_cast<int>(cfg.resources.ranks);
  if (ranks > 1) {  // torchrun's variables: the trainer's own process group rendezvous here
    env["WORLD_SIZE"] = env["LOCAL_WORLD_SIZE"] = std::to_string(ranks);
    env["MASTER_ADDR"] = "127.0.0.1";
    env["MASTER_PORT"] = std::to_string(free_port());
  }
  return {std::move(argv), std::move(env), ranks, counts_of(trainer, placeholders)};
}

// The files the run's id was made from: a trainer edited since (a queued or retried run) would
// train under an id that no longer names it.
void check_trainer_unchanged(const OwnTrainer& trainer) {
  for (const auto& [file, sha] : trainer.files) {
    const fs::path at = fs::path(file).is_absolute() ? fs::path(file) : fs::path(trainer.dir) / file;
    std::error_code ec;
    if (!fs::is_regular_file(at, ec) || sha256_hex(read_file(at)) != sha) {
      throw Error("trainer " + trainer.name + ": " + at.string() + " has changed since this run was planned — `sweep "
                      "run` the sweep file again: the new contents make new run ids",
                  Exit::bad_input);
    }
  }
}

// One attempt at a run with its trainer: the ranks it started, what they write and how they end.
// Rank 0's stdout holds the events (to events.jsonl and, while the scheduler reads it, stdout);
// every other line, and every rank's stderr, goes to the log (stderr: worker.log).
class HostedRun {
 public:
  // `identity`: the run id of the config it trains, stamped on its start events
  HostedRun(const OwnTrainer& trainer, const fs::path& dir, bool to_stdout, std::string identity,
            const OutputReader::Counts& counts)
      : m_trainer(trainer),
        m_dir(dir),
        m_to_stdout(to_stdout),
        m_identity(std::move(identity)),
        m_events_file(dir / "events.jsonl", std::ios::app) {
    if (trainer.output) {
      m_reader.emplace(*trainer.output, counts);
    }
  }

  void spawn_ranks(const Launch& launch) {
    m_program = launch.argv.front();
    for (int r = 0; r < launch.ranks; ++r) {
      SpawnOptions so;
      so.argv = launch.argv;
      so.env = launch.env;
      so.cwd = m_trainer.dir;
      if (launch.ranks > 1) {
        so.env["RANK"] = so.env["LOCAL_RANK"] = std::to_string(r);
      }
      so.own_process_group = false;  // in the host's group: a signal to the group reaches the trainer
      so.pipe_stderr = true;         // through the host, to worker.log within its cap
      Rank rank;
      rank.child = spawn(so);
      m_ranks.push_back(std::move(rank));
    }
  }

  // Reads the ranks until every one has exited: a stop request passed on, a failed rank stopping
  // the others (they cannot finish the run without it), SIGKILL 30 s after a stop that must end it.
  void supervise() {
    size_t running = m_ranks.size();
    while (running > 0) {
      for (size_t r = 0; r < m_ranks.size(); ++r) {
        drain(r);
      }
      // A stop (SIGTERM, SIGINT) sent to the host alone is passed on; one sent to the run's process
      // group (as the executors send it) reaches the trainer twice: the contract says to take a
      // repeat as the same request (the Python client does).
      if (stop_requested() && !m_stopping) {
        m_stopping = true;
        m_stopped_at = m_reader ? m_reader->step() : -1;
        signal_running(stop_signal());
        // a program that does not stop within its grace (it ignores the signal) is killed
        const auto grace = std::chrono::milliseconds(static_cast<int64_t>(m_trainer.stop_grace * 1000));
        const auto kill_at = std::chrono::steady_clock::now() + grace;
        m_kill_at = m_kill_at ? std::min(*m_kill_at, kill_at) : kill_at;
      }
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid > 0) {
        for (auto& rank : m_ranks) {
          if (rank.child.pid == pid) {
            rank.code = exit_code_of(status);
            --running;
            const bool stopped = rank.code == static_cast<int>(Exit::preempted) || rank.code == 128 + SIGTERM ||
                                 rank.code == 128 + SIGINT;
            if (rank.code != 0 && m_first_failure < 0 && !(m_stopping && stopped)) {  // a stop: every rank checkpoints
              m_first_failure = rank.code;
              stop_ranks(true);  // one rank is gone: the others cannot finish the run
            }
          }
        }
        continue;
      }
      if (pid < 0 && errno != EINTR && errno != ECHILD) {
        break;
      }
      if (m_kill_at && std::chrono::steady_clock::now() > *m_kill_at) {
        if (m_stopping && !m_killed) {  // said once: the program did not stop within its grace
          m_log.line("sweep: the program was still running " + format_number("%g", m_trainer.stop_grace) +
                     " s after the stop (trainer.stop_grace): killed");
        }
        m_killed = true;
        signal_running(SIGKILL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // What the ranks wrote last (their last line even without a line break), the log's tail, what
  // they left running stopped, and the run's exit.
  Exit finish() {
    for (size_t r = 0; r < m_ranks.size(); ++r) {
      drain(r);
      ::close(m_ranks[r].child.stdout_fd);
      ::close(m_ranks[r].child.stderr_fd);
    }
    if (m_reader && !m_end) {
      end_of_output();
    }
    m_log.finish();
    if (const int left = stop_descendants(2000); left > 0) {
      std::fprintf(stderr, "sweep: the program left %d process%s running after it ended: stopped\n", left,
                   left == 1 ? "" : "es");
    }
    const int code = m_first_failure >= 0 ? m_first_failure : m_ranks.front().code;
    return exit_of(m_end, code, m_trouble, m_events_cap);
  }

 private:
  struct Rank {
    Child child;
    int code = -1;
    std::string buffer, err_buffer;  // err_buffer: its stderr's partial line (trainer.output reads it)
    bool skipping = false, err_skipping = false;
  };

  void signal_running(int sig) {
    for (const auto& rank : m_ranks) {
      if (rank.code < 0) {
        ::kill(rank.child.pid, sig);
      }
    }
  }

  // SIGTERM to every rank still running; with then_kill, SIGKILL to what is left 30 s later.
  void stop_ranks(bool then_kill) {
    signal_running(SIGTERM);
    if (then_kill) {
      m_kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    }
  }

  void drain(size_t r) {
    Rank& rank = m_ranks[r];
    char chunk[65536];
    ssize_t n;
    // at most 1 MiB of stderr a turn: a program that never stops writing there is still read on stdout
    for (int turn = 0; turn < 16 && rank.child.stderr_fd >= 0 &&
                       (n = ::read(rank.child.stderr_fd, chunk, sizeof chunk)) > 0;
         ++turn) {
      if (!m_reader) {
        m_log.write(chunk, static_cast<size_t>(n));
        continue;
      }
      rank.err_buffer.append(chunk, static_cast<size_t>(n));  // read by the rules as stdout is
      for (const auto& line : split_lines(rank.err_buffer, rank.err_skipping)) {
        take(r, line);
      }
    }
    std::vector<std::string> lines = read_lines(rank.child.stdout_fd, rank.buffer, rank.skipping);
    for (auto* buffer : {&rank.buffer, &rank.err_buffer}) {
      if (rank.code >= 0 && !buffer->empty()) {  // it has exited: its last line, even without a break
        *buffer += '\n';
        bool& skipping = buffer == &rank.buffer ? rank.skipping : rank.err_skipping;
        for (auto& line : split_lines(*buffer, skipping)) {
          lines.push_back(std::move(line));
        }
      }
    }
    for (const auto& line : lines) {
      take(r, line);
    }
  }

  // One line of a program read by trainer.output: kept in the log, and the events it makes recorded.
  void take_output(size_t r, const std::string& line) {
    m_log.line((r > 0 ? "[rank " + std::to_string(r) + "] " : std::string()) + line);
    if (r != 0 || !m_trouble.unreadable.empty()) {
      return;
    }
    for (const nlohmann::json& made : m_reader->take(line)) {
      std::string why;
      if (const std::optional<nlohmann::json> ev = accept_event(made.dump(), m_trainer, why)) {
        record(*ev, line);
      } else {
        m_log.line("sweep: trainer.output made no event of this line (" + why + ")");
      }
    }
    if (!m_reader->failure().empty()) {
      m_trouble.unreadable = m_reader->failure();
      stop_ranks(true);
    } else if (m_reader->started()) {  // any line says it is alive
      std::string why;
      const nlohmann::json beat{{field::event, events::heartbeat}, {field::step, m_reader->step()}};
      record(*accept_event(beat.dump(), m_trainer, why), line);
    }
  }

  // The end of a program read by trainer.output: what its exit, a stop and its lines make of the run.
  void end_of_output() {
    std::string why;
    const int code = m_ranks.front().code;
    nlohmann::json made;
    if (!m_trouble.unreadable.empty()) {
      made = {{field::event, events::end}, {field::status, "failed"}, {field::reason, m_trouble.unreadable}};
    } else if (m_stopping) {  // never done: a program that exits 0 on a stop has not trained to its end
      const std::optional<int64_t> at = m_reader->checkpoint_step();
      if (at && *at >= m_stopped_at) {  // it checkpointed at the stop (a program that handles the signal)
        made = {{field::event, events::end},
                {field::status, "preempted"},
                {field::reason, "stopped by a signal at step " + std::to_string(*at) + ", checkpointed there"}};
        m_ranks.front().code = static_cast<int>(Exit::preempted);
      } else {  // interrupted: it resumes from an older checkpoint, or starts again
        const bool kept = at || !fs::is_empty(m_dir / "checkpoint");
        const std::string where =  // the last step read: a program may train on a while after the signal
            m_reader->started() ? "at step " + std::to_string(m_reader->step()) : std::string("before its first step");
        const std::string then = at     ? "it resumes from its checkpoint of step " + std::to_string(*at)
                                 : kept ? "it resumes from its last checkpoint"
                                        : "no checkpoint: it starts again from step 0";
        std::fprintf(stderr, "sweep: stopped by a signal %s; %s\n", where.c_str(), then.c_str());
        m_ranks.front().code = code != 0 && code != static_cast<int>(Exit::preempted) ? code : 128 + SIGTERM;
        return;
      }
    } else if (code == 0) {
      if (const std::optional<nlohmann::json> checkpoint = m_reader->exited()) {
        if (const std::optional<nlohmann::json> ev = accept_event(checkpoint->dump(), m_trainer, why)) {
          record(*ev, "");
        }
      }
      made = m_reader->end();
      if (made[field::status] == "failed") {
        m_trouble.unreadable = made[field::reason];
      }
    } else {
      return;  // a crash: retried from its checkpoint
    }
    if (const std::optional<nlohmann::json> ev = accept_event(made.dump(), m_trainer, why)) {
      record(*ev, "");
    }
  }

  // One line of rank r's stdout: an event recorded in order, or a line of the log.
  void take(size_t r, const std::string& line) {
    if (m_reader) {
      take_output(r, line);
      return;
    }
    std::string why;
    std::optional<nlohmann::json> ev = r == 0 ? accept_event(line, m_trainer, why) : std::nullopt;
    if (!ev) {
      m_log.line((r > 0 ? "[rank " + std::to_string(r) + "] " : std::string()) +
                 (why.empty() ? "" : "sweep: not an event (" + why + "): ") + line);
      return;
    }
    record(*ev, line);
  }

  // An accepted event, recorded in order (`line`: what made it, quoted when it is ignored).
  void record(nlohmann::json ev, const std::string& line) {
    if (const std::string ignored = m_order.next(ev); !ignored.empty()) {
      m_log.line("sweep: ignored (" + ignored + "): " + line);
      return;
    }
    if (ev[field::event] == events::start) {
      ev[field::identity] = m_identity;  // what it trained, as sweep knows it: a folder's events are checked by it
      ev[field::program] = m_program;    // which program ran it
    }
    if (ev[field::event] == events::heartbeat) {  // liveness only: one a second is plenty
      const double t = events::unix_time();
      if (t - m_last_heartbeat < 1.0) {
        return;
      }
      m_last_heartbeat = t;
    }
    const std::string text = ev.dump();
    m_events_bytes += static_cast<int64_t>(text.size()) + 1;
    if (m_events_bytes > m_events_cap) {
      if (!m_trouble.too_many_events) {  // the program is stopped; the run fails, not retried
        m_trouble.too_many_events = true;
        stop_ranks(true);
      }
      return;
    }
    m_events_file << text << '\n';
    m_events_file.flush();
    if (!m_events_file && !m_trouble.write_failed) {  // a full disk: the trainer is stopped, nothing of it is lost
      m_trouble.write_failed = true;
      std::fprintf(stderr, "sweep: cannot write %s: %s\n", (m_dir / "events.jsonl").c_str(), std::strerror(errno));
      stop_ranks(false);
    }
    if (m_to_stdout && (std::fprintf(stdout, "%s\n", text.c_str()) < 0 || std::fflush(stdout) != 0)) {
      m_to_stdout = false;  // the scheduler is gone: events.jsonl keeps the record
    }
    if (ev[field::event] == events::end) {
      m_end = ev;
      if (m_end->value(field::reason, "") == events::k_done_before_start && !m_trouble.breach) {
        m_trouble.breach = true;  // whatever it says next is ignored: stop it, and the run is retried
        stop_ranks(true);
      }
    }
  }

  const OwnTrainer& m_trainer;
  const fs::path m_dir;
  bool m_to_stdout;
  const std::string m_identity;
  std::string m_program;  // the command's program, found (a path)
  std::ofstream m_events_file;
  CappedLog m_log;
  std::vector<Rank> m_ranks;
  // the order events keep (protocol/event_order.h): the first end event is the run's
  events::EventOrder m_order{events::EventOrder::Source::one_process};
  std::optional<nlohmann::json> m_end;
  std::optional<OutputReader> m_reader;  // trainer.output: the program's own lines read into events
  int64_t m_stopped_at = -1;             // the step read when a stop came
  Trouble m_trouble;
  int m_first_failure = -1;
  bool m_stopping = false;
  bool m_killed = false;  // SIGKILL sent
  std::optional<std::chrono::steady_clock::time_point> m_kill_at;
  int64_t m_events_bytes = 0;
  const int64_t m_events_cap = cap("SWEEP_TEST_EVENTS_CAP", k_max_events_bytes);
  double m_last_heartbeat = 0;
};

}  // namespace

Exit host_trainer(const RunConfig& cfg, const HostOptions& o) {
  check_trainer_unchanged(*cfg.trainer);
  const fs::path dir(o.run_dir), checkpoints = dir / "checkpoint";
  fs::create_directories(checkpoints);
  std::string holder;
  const std::unique_ptr<FileLock> lock = FileLock::try_lock(dir / ".lock", &holder);
  if (!lock) {
    throw Error("run directory " + o.run_dir + " is being trained by another process" +
                    (holder.empty() ? "" : " (pid " + holder + ")") + " — two processes never train one run",
                Exit::bad_input);
  }
  remove_stale_temporaries(dir);
  if (!fs::exists(dir / "config.yaml")) {
    write_file_atomic(dir / "config.yaml", cfg.to_yaml());
  }
  nlohmann::json config = cfg.values;  // the trainer's config, with the run's seeds
  config["seeds"] = {{"init", cfg.seeds.init}, {"data", cfg.seeds.data}};
  write_file_atomic(dir / "config.json", config.dump(2) + "\n");
  const Launch launch = launch_of(cfg, dir, o.resume && !fs::is_empty(checkpoints));

  install_stop_handlers();
  // A scheduler that dies (kill -9) closes our stdout: we go on, writing events.jsonl only, until
  // the next `sweep run` stops us (and, through us, the trainer) and resumes the run.
  ::signal(SIGPIPE, SIG_IGN);
  // nothing the program starts outlives it: what it leaves behind becomes ours, and is stopped
  become_subreaper();
  HostedRun run(*cfg.trainer, dir, o.events, run_id_of(cfg, 0), launch.counts);
  run.spawn_ranks(launch);
  run.supervise();
  return run.finish();
}

}  // namespace sweep
