#include "sched/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "protocol/event_order.h"
#include "protocol/json_line.h"
#include "sched/run_folder.h"
#include "sched/slurm.h"
#include "store/results_folder.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace {

volatile sig_atomic_t g_interrupts = 0;
void on_interrupt(int) { g_interrupts = g_interrupts + 1; }

// Ctrl-C, a kill and a closed terminal all stop the sweep the same clean way while it lives.
class InterruptHandlers {
 public:
  InterruptHandlers() {
    struct sigaction sa = {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &m_int);
    sigaction(SIGTERM, &sa, &m_term);
    sigaction(SIGHUP, &sa, &m_hup);
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;  // a closed stdout (`| head`) must not kill the sweep: its lines are lost, not it
    sigaction(SIGPIPE, &ignore, &m_pipe);
    g_interrupts = 0;
  }
  ~InterruptHandlers() {
    sigaction(SIGINT, &m_int, nullptr);
    sigaction(SIGTERM, &m_term, nullptr);
    sigaction(SIGHUP, &m_hup, nullptr);
    sigaction(SIGPIPE, &m_pipe, nullptr);
  }
  InterruptHandlers(const InterruptHandlers&) = delete;
  InterruptHandlers& operator=(const InterruptHandlers&) = delete;

 private:
  struct sigaction m_int, m_term, m_hup, m_pipe;
};

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

ResultsLock::ResultsLock(const std::string& results_dir) {
  std::string holder;
  m_lock = FileLock::try_lock(fs::path(results_dir) / ".scheduler.lock", &holder);
  if (!m_lock) {
    throw Error("another `sweep run`" + (holder.empty() ? "" : " (pid " + holder + ")") + " is using " + results_dir +
                    " — wait for it, or use --results for another folder",
                Exit::bad_input);
  }
  // Nothing else writes here while the lock is held: what a killed writer left half-done goes.
  remove_stale_temporaries(results_dir);
  remove_stale_temporaries(sweeps_folder(results_dir));
  m_reserve = fs::path(results_dir) / ".sweep-reserve";
  const int fd = ::open(m_reserve.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (fd >= 0) {
    if (::posix_fallocate(fd, 0, 1 << 20) != 0) {  // a disk already full: no reserve, and no error yet
      release_reserve();
    }
    ::close(fd);
  }
}

ResultsLock::~ResultsLock() { release_reserve(); }

void ResultsLock::release_reserve() {
  std::error_code ignored;
  fs::remove(m_reserve, ignored);
}

// The last line a worker's log ends with, as the console quotes a crash or a failure: ` (LINE)`,
// at most 300 characters; "" for an empty log.
std::string last_words(const std::string& log_tail) {
  const std::vector<std::string> lines = split(trim(log_tail), '\n');
  const std::string last = lines.empty() ? "" : trim(lines.back());
  return last.empty() ? "" : " (" + (last.size() > 300 ? last.substr(0, 300) + "…" : last) + ")";
}

int64_t reingest_run_dir(Store& store, const std::string& run_id, const std::string& run_dir) {
  const fs::path events = fs::path(run_dir) / "events.jsonl";
  if (!fs::exists(events)) {
    return 0;
  }
  // the order of events enforced as the worker host enforces it (protocol/event_order.h): a
  // folder may come from anywhere — of any size: read a line at a time, ingested in batches (as
  // a worker's stream is), no line longer than an event can be held
  events::EventOrder order(events::EventOrder::Source::file);
  std::vector<std::string> batch;
  for_each_line(events, events::k_max_json_line, [&](const std::string& line) {
    if (auto taken = events::line_in_order(line, order)) {
      batch.push_back(std::move(*taken));
    }
    if (batch.size() >= 10000) {
      store.ingest(run_id, batch);
      batch.clear();
    }
  });
  store.ingest(run_id, batch);
  // an attempt the file does not end: its worker stopped without a word, and no scheduler said how
  if (order.attempt_open() && !finished(store.run(run_id)->status)) {
    store.set_status(run_id, RunState::interrupted, events::k_no_end_event);
  }
  return order.attempts();
}

void record_end(Store& store, const std::string& run_id, RunState state, const std::string& error) {
  const RunRow row = *store.run(run_id);
  if (finished(row.status) || (row.status == state && row.error == error)) {
    return;  // the run's events say it already (a result is never rewritten)
  }
  // The reason as the line holds it, for the database too: at most 16 KiB of it (a log's tail may be
  // long), its bytes that are no UTF-8 replaced (a program's output may hold any).
  const nlohmann::json ev{{events::field::event, events::end},
                          {events::field::status, to_string(state)},
                          {events::field::reason, error.substr(0, 16 << 10)},
                          {events::field::by, events::k_by_scheduler},
                          {events::field::time, events::unix_time()}};
  const std::string line = ev.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const fs::path path = fs::path(row.run_dir) / "events.jsonl";
  try {
    if (fs::is_directory(path.parent_path())) {
      append_line(path, line);
    }
  } catch (const Error&) {
    // the database has it; the folder does not (a full disk): `sweep ingest` would read the run
    // as its events leave it
  }
  store.ingest(run_id, {line});
  store.set_status(run_id, state, nlohmann::json::parse(line)[events::field::reason].get<std::string>());
}

SweepRunner::SweepRunner(const SweepSpec& spec, Store& store, std::unique_ptr<ResultsLock> lock,
                         std::unique_ptr<Executor> executor, RunnerOptions options)
    : m_spec(spec), m_runs(spec.runs.begin(), spec.runs.end()), m_store(store), m_options(std::move(options)),
      m_lock(std::move(lock)), m_executor(std::move(executor)), m_tty(::isatty(STDOUT_FILENO) != 0) {}

bool SweepRunner::stopping() const { return g_interrupts > 0 || !m_halt.empty(); }

void SweepRunner::clear_block() {
  if (m_tty && m_drawn > 0) {
    std::printf("\033[%zuA\033[J", m_drawn);
    m_drawn = 0;
  }
}

void SweepRunner::say(const std::string& line) {
  clear_block();
  std::printf("[%s] %s\n", clock_time().c_str(), printable(line).c_str());
  std::fflush(stdout);
}

std::string SweepRunner::describe(const std::string& run_id) const { return describe(*m_watched.at(run_id).run); }

std::string SweepRunner::describe(const PlannedRun& run) const {
  const std::string& run_id = run.run_id;
  return run.variant + " " + seeds_in_words(run.config.seeds.init, run.config.seeds.data, run.repeat) + " (" + run_id + ")";
}

// Runs recorded with a worker by an earlier `sweep run` that is gone — every run the sweep has
// recorded, those its file no longer plans included: the executor follows the worker if it still
// runs (a queued batch task; never for an unplanned run) or stops an orphan, else the run's events
// are read again from its directory and a run left `running` becomes resumable.
void SweepRunner::recover() {
  std::map<std::string, const PlannedRun*> planned;
  for (const auto& run : m_runs) {
    planned.emplace(run.run_id, &run);
  }
  for (const auto& [variant, row] : m_store.sweep_runs(m_spec.name)) {
    const PlanState state = plan_state(row, false);
    const bool may_have_worker =
        row.status == RunState::running || (!row.job.empty() && !finished(state) && !failed(state));
    if (m_watched.count(row.run_id) || !may_have_worker) {
      continue;
    }
    const auto it = planned.find(row.run_id);
    const PlannedRun* run = it == planned.end() ? nullptr : it->second;
    if (const std::optional<std::string> where = m_executor->adopt(row, run)) {
      // the watchdog's clock: a batch task's from when the executor says it runs (its first poll)
      m_watched[row.run_id] = {run, now(), row.job.empty() ? std::optional<double>(now()) : std::nullopt};
      say("following " + variant + " (" + row.run_id + "): " + *where);
      continue;
    }
    reingest_run_dir(m_store, row.run_id, row.run_dir);
    if (m_store.run(row.run_id)->status == RunState::running) {
      record_end(m_store, row.run_id, RunState::interrupted, "the scheduler stopped while this run was training");
    }
    if (row.status == RunState::running) {
      say("recovered " + variant + " (" + row.run_id + "): resumes from its checkpoint");
    }
  }
}

void SweepRunner::launch(const PlannedRun& run) {
  const fs::path dir = m_store.run(run.run_id)->run_dir;
  fs::create_directories(dir);
  // A folder that holds another run's config or events is not trained on, nor read (sched/run_folder.h);
  // a folder without its config gets it first, so that events already there are checked against it
  if (!fs::exists(dir / "config.yaml") && !fs::is_symlink(dir / "config.yaml")) {
    write_file_atomic(dir / "config.yaml", run.config.to_yaml());
  }
  {
    if (const std::string problem = run_folder_problem(dir); !problem.empty()) {
      ++m_failed;
      m_store.set_status(run.run_id, RunState::failed, "its folder " + dir.string() + " is not this run's: " + problem);
      say("fail  " + describe(run) + ": its folder " + dir.string() + " is not this run's: " + problem);
      return;
    }
  }
  // First what the folder holds that the database has not seen (a run trained by hand, say): a
  // resume must not leave a hole in the run's curve.
  reingest_run_dir(m_store, run.run_id, dir.string());
  const RunRow row = *m_store.run(run.run_id);
  if (held_elsewhere(run, dir)) {  // its worker would be refused: followed until the holder lets go
    return;
  }
  if (finished(row.status)) {
    ++m_done;
    say((row.status == RunState::done ? "done  " : "diverged ") + describe(run) + ": trained outside this `sweep run`");
    return;
  }
  if (!m_branches->has_start(run)) {  // a branch: it starts from its parent's checkpoint at the branch step
    // a parent this `sweep run` still trains (a crash retried) can give it yet; else ask why it cannot
    const PlannedRun* parent = m_branches->parent_of(run);
    const bool parent_left = parent != nullptr && (m_watched.count(parent->run_id) || m_held.count(parent->run_id) ||
                                                   std::find(m_queue.begin(), m_queue.end(), parent) != m_queue.end());
    if (const std::string why = parent_left ? "" : m_branches->orphaned(run); !why.empty()) {
      ++m_orphaned;
      say("not started " + describe(run) + ": " + why);
    } else {
      m_waiting[run.config.branch.from].push_back(&run);
    }
    return;
  }
  std::optional<int64_t> branch_at = m_branches->pause_at(run);
  if (branch_at && row.steps == *branch_at) {  // paused there by a `sweep run` that stopped before its branches started
    start_branches(run, *branch_at);
    branch_at = m_branches->pause_at(run);
  }
  std::optional<int64_t> pause_at = m_options.looks ? m_options.looks->pause_at(run) : std::nullopt;
  if (pause_at && row.steps >= *pause_at) {  // at the look already (or past it): nothing to train before it
    ++m_paused;
    return;
  }
  const bool for_branches = branch_at && (!pause_at || *branch_at < *pause_at);
  pause_at = for_branches ? branch_at : pause_at;
  std::string where;
  const std::optional<int64_t> pid = m_executor->start(run, row, pause_at, where);
  m_watched[run.run_id] = {&run, now(), pid ? std::optional<double>(now()) : std::nullopt};
  m_watched[run.run_id].pause_at = pause_at;
  m_watched[run.run_id].for_branches = for_branches;
  if (pid) {
    // Resuming after a preemption or an interruption is not a new attempt; anything else is.
    m_store.mark_launched(run.run_id, *pid, row.status != RunState::preempted && row.status != RunState::interrupted, where);
    // "resuming" only where there is something to resume from
    const bool checkpoint = holds_checkpoint(dir, run.config.trainer.has_value());
    say("start " + describe(run.run_id) + " on " + where + (checkpoint ? ", resuming" : "") +
        (pause_at ? ", to step " + std::to_string(*pause_at) + (for_branches ? " (its branches' start)" : " (a look)")
                  : ""));
  }
}

void SweepRunner::apply(Observed seen) {
  for (const auto& [run_id, lines] : seen.events) {
    m_store.ingest(run_id, lines);
    const auto w = m_watched.find(run_id);
    // heard from, while it runs (a queued batch task's folder holds an earlier attempt's lines)
    if (w != m_watched.end() && w->second.heard && !lines.empty()) {
      w->second.heard = now();
      w->second.spoke = true;
      const auto ev = events::parse_json_line(lines.back());
      if (ev.is_object() && ev.value("event", nlohmann::json()).is_string()) {
        w->second.last_event = ev["event"].get<std::string>() +
                               (ev.contains("step") ? ", step " + ev["step"].dump() : std::string());
      } else {
        w->second.last_event = "a line that is no event";
      }
    }
  }
  for (const auto& j : seen.jobs) {
    m_store.set_job(j.run_id, j.job, j.state);
    const auto w = m_watched.find(j.run_id);
    if (w != m_watched.end() && j.state != k_slurm_running) {  // queued, suspended, completing: not silent
      w->second.heard.reset();
    }
  }
  for (const auto& run_id : seen.queued) {
    const RunState state = m_store.run(run_id)->status;
    if (state == RunState::failed || state == RunState::oom) {
      m_store.set_status(run_id, RunState::pending);  // --retry-failed: a new attempt, queued
    }
  }
  for (const auto& note : seen.notes) {
    say(note);
  }
  for (const auto& [run_id, where] : seen.running) {
    if (!finished(m_store.run(run_id)->status)) {
      m_watched.at(run_id).started = now();  // a queued worker's time starts when it runs
      m_watched.at(run_id).heard = now();
      m_store.set_status(run_id, RunState::running);
      say("running " + describe(run_id) + " as " + where);
    }
  }
  for (const auto& run_id : seen.requeued) {
    m_watched.at(run_id).heard.reset();  // back in the queue: silent until it runs again
    const RunRow row = *m_store.run(run_id);
    if (row.status == RunState::preempted) {
      say("requeued " + m_watched.at(run_id).run->variant + " (" + run_id +
          ") after SIGTERM: resumes from step " + std::to_string(row.steps));
    }
  }
  for (const auto& end : seen.ended) {
    finish(end);
  }
  if (!seen.error.empty()) {
    throw Error(seen.error);
  }
}

// Another process holds the run's lock (a worker a killed scheduler left, still training): the run
// is neither finished nor failed, and nothing is written into the folder that process writes.
bool SweepRunner::held_elsewhere(const PlannedRun& run, const fs::path& dir) {
  std::string holder;
  if (FileLock::try_lock(dir / ".lock", &holder)) {
    return false;
  }
  m_held[run.run_id] = {&run, holder, now()};
  m_executor->hold(run);
  say("wait  " + describe(run) + ": another process (pid " + holder + ") trains it — followed (its events read as "
      "they come, its slot kept), and taken up here when that ends");
  return true;
}

void SweepRunner::follow_held() {
  for (auto it = m_held.begin(); it != m_held.end();) {
    const auto& [run_id, held] = *it;
    const RunRow row = *m_store.run(run_id);
    const bool let_go = FileLock::try_lock(fs::path(row.run_dir) / ".lock") != nullptr;  // (released at once)
    if (!let_go && now() - held.read < 1) {
      ++it;
      continue;
    }
    reingest_run_dir(m_store, run_id, row.run_dir);  // what it wrote so far: its events as they grow
    if (!let_go) {
      it->second.read = now();
      ++it;
      continue;
    }
    m_executor->release(run_id);
    say("taken up " + describe(*held.run) + ": the process that trained it (pid " + held.holder + ") has ended");
    m_queue.push_front(held.run);  // done there, or resumed here from its checkpoint
    it = m_held.erase(it);
  }
}

void SweepRunner::finish(const WorkerEnd& end) {
  const RunRow row = *m_store.run(end.run_id);
  const Watched watched = m_watched.at(end.run_id);
  // Refused at its lock: one that took it after launch() looked (a worker left by a killed scheduler,
  // still loading then) trains the run now
  if (end.exit_code == static_cast<int>(Exit::bad_input) && held_elsewhere(*watched.run, row.run_dir)) {
    m_watched.erase(end.run_id);
    return;
  }
  const std::string what = describe(end.run_id);
  EndFacts facts;
  facts.exit_code = end.exit_code;
  facts.recorded = row.status;
  facts.recorded_error = row.error;
  facts.stopping = stopping();
  facts.out_of_memory = end.out_of_memory;
  facts.crashes = m_crashes[end.run_id];
  facts.retries = m_options.retries;
  facts.preemptions = end.requeues_spent ? m_options.max_preemptions : m_preemptions[end.run_id];
  facts.max_preemptions = m_options.max_preemptions;
  facts.detail = end.detail;
  facts.log_tail = end.log_tail;
  facts.paused_at = watched.pause_at;
  if (watched.for_branches) {
    facts.paused_for = "the start of its branches";
  }
  facts.steps = row.steps;
  facts.own_failed_before_start = watched.run->config.trainer && !watched.spoke;
  if (const auto stalled = m_stalled.find(end.run_id); stalled != m_stalled.end()) {
    facts.stalled = stalled->second;
    m_stalled.erase(stalled);
    m_killed_at.erase(end.run_id);
  }
  const Outcome outcome = classify_end(facts);
  if (finished(outcome.state) && finished(row.status)) {
    m_store.set_status(end.run_id, outcome.state, outcome.error);  // its result, and a note on how its worker left
  } else {
    record_end(m_store, end.run_id, outcome.state, outcome.error);
  }
  m_watched.erase(end.run_id);
  if (outcome.then == Then::finished || outcome.then == Then::give_up) {
    requeue_waiting(end.run_id);  // ended for good: its branches waiting are judged anew (written off, said)
  }
  const std::string code = end.exit_code ? "exit " + std::to_string(*end.exit_code) : end.detail;
  switch (outcome.then) {
    case Then::finished: {
      ++m_done;
      if (outcome.state == RunState::done) {
        char buf[128];
        std::snprintf(buf, sizeof buf, ": test loss %s, %s", format_number("%.4f", row.test_loss.value_or(NAN)).c_str(),
                      format_duration(now() - watched.started).c_str());
        say("done  " + what + buf);
      } else {
        say("diverged " + what + ": " + outcome.error);
      }
      break;
    }
    case Then::requeue:
      ++m_preemptions[end.run_id];
      m_queue.push_front(watched.run);
      say("preempted " + what + " at step " + std::to_string(row.steps) + ": re-queued");
      break;
    case Then::retry:
      ++m_crashes[end.run_id];
      m_queue.push_back(watched.run);
      say((facts.stalled.empty() ? "crash " + what + ": " + code + last_words(end.log_tail)
                                 : "stall " + what + ": " + facts.stalled + ", killed") +
          (holds_checkpoint(row.run_dir, watched.run->config.trainer.has_value()) ? ", retrying from its checkpoint"
                                                                                  : ", retrying from the start") +
          " (attempt " + std::to_string(row.attempts + 1) + ")");
      break;
    case Then::give_up:
      ++m_failed;
      say(!facts.stalled.empty()             ? "fail  " + what + ": " + outcome.error
          : outcome.state == RunState::oom ? "oom   " + what + ": " + code + " (not retried)"
          : end.exit_code ? "fail  " + what + ": " + code + last_words(end.log_tail) + " — log: " + end.log
                                         : "fail  " + what + ": " + end.detail);
      break;
    case Then::halt:
      if (m_halt.empty()) {
        m_halt = outcome.error;
      }
      say("stopped " + what + " at step " + std::to_string(row.steps) + ": " + outcome.error);
      break;
    case Then::paused:
      if (watched.for_branches) {
        say("paused " + what + " at step " + std::to_string(row.steps) + ": its branches start from its checkpoint");
        m_queue.push_front(watched.run);  // on to its end, its branches after it
        start_branches(*watched.run, row.steps);
        break;
      }
      ++m_paused;
      say("paused " + what + " at step " + std::to_string(row.steps) + " for a look");
      break;
    case Then::stopped: {
      // what the stop left: a checkpoint written at it, an older one, or none (it starts again)
      const bool kept = holds_checkpoint(row.run_dir, watched.run->config.trainer.has_value());
      say("interrupted " + what + " at step " + std::to_string(row.steps) +
          (!end.exit_code                                       ? ""
           : *end.exit_code == static_cast<int>(Exit::preempted) ? " (checkpointed)"
           : row.steps == 0                                      ? " (stopped while starting)"
           : kept ? " (not checkpointed at the stop: it resumes from its last checkpoint)"
                  : " (no checkpoint yet: it starts again from step 0)"));
      break;
    }
  }
}

void SweepRunner::check_stalls() {
  for (auto& [run_id, w] : m_watched) {
    const double timeout = m_options.stall_timeout >= 0 ? m_options.stall_timeout : w.run->config.resources.stall_timeout;
    // Until its first event a worker is loading (LibTorch's libraries take seconds on a busy
    // machine) and cannot send heartbeats yet: it gets at least m_options.startup_allowance.
    const double limit = w.spoke ? timeout : std::max(timeout, m_options.startup_allowance);
    if (timeout <= 0 || !w.heard || now() - *w.heard <= limit) {
      continue;
    }
    if (!m_stalled.count(run_id)) {
      m_stalled[run_id] = "no event for " + format_duration(now() - *w.heard) + " (stall timeout " +
                          format_number("%g", timeout) + " s" +
                          (w.spoke ? "" : ", at least " + format_number("%g", m_options.startup_allowance) + " s to the first") +
                          "; the last: " + w.last_event + ")";
    } else if (now() - m_killed_at[run_id] < 30) {
      continue;  // killed already: again every 30 s while it is still there (a cancel that did not take)
    }
    m_killed_at[run_id] = now();
    m_executor->kill(run_id);
  }
}

// The live block under the log lines, on a terminal: the sweep's counts and ETA, a line per run.
void SweepRunner::draw() {
  if (!m_tty || now() - m_last_draw < 1.0) {
    return;
  }
  m_last_draw = now();
  std::vector<std::string> block;
  double rate = 0, remaining_tokens = 0;
  for (const auto& [run_id, w] : m_watched) {
    const RunRow row = *m_store.run(run_id);
    const double tokens_left = static_cast<double>(std::max<int64_t>(0, w.run->config.train.tokens - row.tokens));
    rate += row.tokens_per_s.value_or(0);
    remaining_tokens += tokens_left;
    char buf[200];
    std::snprintf(buf, sizeof buf, "  %-28.28s seed %lld/%lld  step %5lld/%-5lld  loss %7.4f  %6.0f tok/s  ETA %s",
                  w.run->variant.c_str(), static_cast<long long>(row.init_seed), static_cast<long long>(row.data_seed),
                  static_cast<long long>(row.steps), static_cast<long long>(row.total_steps),
                  row.last_loss.value_or(NAN), row.tokens_per_s.value_or(0),
                  format_duration(row.tokens_per_s.value_or(0) > 0 ? tokens_left / *row.tokens_per_s : 0).c_str());
    block.push_back(buf);
  }
  for (const PlannedRun* q : m_queue) {
    remaining_tokens += static_cast<double>(q->config.train.tokens);
  }
  char head[200];
  std::snprintf(head, sizeof head, "%s: %d done, %zu running, %zu pending, %d failed — %s elapsed, ETA %s",
                m_spec.name.c_str(), m_done + m_finished_before, m_watched.size(), m_queue.size(), m_failed,
                format_duration(now() - m_started).c_str(),
                rate > 0 ? format_duration(remaining_tokens / rate).c_str() : "?");
  block.insert(block.begin(), head);
  clear_block();
  for (const auto& line : block) {
    std::printf("%s\033[K\n", line.c_str());
  }
  m_drawn = block.size();
  std::fflush(stdout);
}

void SweepRunner::start_branches(const PlannedRun& parent, int64_t step) {
  const std::vector<const PlannedRun*> given = m_branches->give_start(parent, step);
  // those that waited for it are queued again; the others have not left the queue yet
  std::erase_if(m_waiting[parent.run_id], [&](const PlannedRun* r) {
    if (std::find(given.begin(), given.end(), r) == given.end()) {
      return false;
    }
    m_queue.push_back(r);
    return true;
  });
}

void SweepRunner::requeue_waiting(const std::string& parent) {
  const auto waiting = m_waiting.find(parent);
  if (waiting == m_waiting.end()) {
    return;
  }
  for (const PlannedRun* branch : waiting->second) {
    m_queue.push_back(branch);
  }
  m_waiting.erase(waiting);
}

void SweepRunner::enqueue(const ToDo& todo) {
  std::vector<const PlannedRun*> runs = todo.runs;
  longest_first(runs);
  // a branch's parent first: its branches wait for its checkpoint at the branch step
  std::stable_partition(runs.begin(), runs.end(), [&](const PlannedRun* r) { return m_branches->is_parent(*r); });
  for (const PlannedRun* run : runs) {
    if (!m_watched.count(run->run_id)) {  // not followed since recovery
      m_queue.push_back(run);
    }
  }
}

ToDo SweepRunner::to_do(const std::vector<const PlannedRun*>& runs) {
  return runs_to_do(
      runs, [&](const std::string& run_id) { return plan_state(*m_store.run(run_id)); }, m_options.retry_failed);
}

void SweepRunner::plan(const std::vector<const PlannedRun*>& runs) {
  ToDo todo = to_do(runs);
  m_total += todo.total;
  m_finished_before += todo.finished_before;
  m_failed_before += todo.failed_before;
  if (m_options.looks) {  // the arms its looks stopped (an earlier `sweep run --eliminate`) stay where they are
    std::erase_if(todo.runs, [&](const PlannedRun* run) {
      if (!m_options.looks->stopped(*run)) {
        return false;
      }
      m_stopped.insert(run->run_id);
      return true;
    });
  }
  enqueue(todo);
}

bool SweepRunner::take_look() {
  if (!m_options.looks || m_paused == 0 || stopping()) {
    return false;
  }
  const auto held = static_cast<int>(m_held.size());  // (left only by a Ctrl-C)
  if (m_failed > 0 || m_failed_before > 0 || held > 0) {  // an arm's seeds would be missing from the look
    say("--eliminate: the look waits — " + std::to_string(m_failed + m_failed_before) + " failed and " +
        std::to_string(held) + " held by another process " +
        (m_failed + m_failed_before + held == 1 ? "run" : "runs") +
        "; `sweep run --eliminate` again takes it once they are trained (--retry-failed for the failed), `sweep run` "
        "without --eliminate trains every run to its end");
    return false;
  }
  m_paused = 0;
  say(m_options.looks->take(m_spec));
  m_store.record_sweep(m_spec);
  std::vector<const PlannedRun*> left;
  for (const auto& run : m_runs) {
    if (m_options.looks->stopped(run)) {
      if (!finished(m_store.run(run.run_id)->status)) {
        m_stopped.insert(run.run_id);
      }
    } else {
      left.push_back(&run);
    }
  }
  enqueue(to_do(left));
  return !m_queue.empty();
}

bool SweepRunner::add_round() {
  const bool held = !m_held.empty();
  if (!m_options.next_round || stopping() || m_failed > 0 || m_failed_before > 0 || held) {
    if (m_options.next_round && (m_failed > 0 || m_failed_before > 0 || held)) {
      say("no more seeds: some runs failed or were skipped — the verdicts wait for them (`sweep run` again, "
          "--retry-failed)");
    }
    return false;
  }
  std::string why;
  std::vector<PlannedRun> runs = m_options.next_round(m_spec, why);
  say(why);
  if (runs.empty()) {
    return false;
  }
  std::vector<const PlannedRun*> added;
  for (auto& run : runs) {
    m_spec.runs.push_back(run);
    m_runs.push_back(std::move(run));
    added.push_back(&m_runs.back());
  }
  m_store.record_sweep(m_spec);
  plan(added);
  return true;
}

Exit SweepRunner::run() {
  m_store.record_sweep(m_spec);
  recover();
  std::vector<const PlannedRun*> file_runs;
  for (const auto& run : m_runs) {
    file_runs.push_back(&run);
  }
  m_branches = std::make_unique<Branches>(file_runs, m_store);
  plan(file_runs);
  say("sweep " + m_spec.name + ": " + std::to_string(m_total) + " runs, " + std::to_string(m_finished_before) +
      " already finished, " +
      (m_failed_before > 0 ? std::to_string(m_failed_before) + " failed before (--retry-failed runs them), " : "") +
      std::to_string(m_queue.size()) + " to run on " + m_executor->describe());

  const InterruptHandlers handlers;
  m_started = now();
  try {
    int signalled = 0;
    bool halted = false;
    while (!m_watched.empty() || (!stopping() && (!m_queue.empty() || !m_held.empty())) || take_look() ||
           add_round()) {
      if (g_interrupts > signalled) {
        signalled = g_interrupts;
        say(m_executor->stop(signalled));
      }
      if (!m_halt.empty() && !halted) {  // the others stop too, checkpointed: they would fail alike
        halted = true;
        m_executor->stop(1);  // its words are for Ctrl-C
        say("stopping the sweep: nothing more starts, the running runs checkpoint");
      }
      // In queue order (longest first): the next run starts when the executor has room for it.
      while (!stopping() && !m_queue.empty() && m_executor->can_start(*m_queue.front())) {
        const PlannedRun* run = m_queue.front();
        m_queue.pop_front();
        launch(*run);
      }
      apply(m_executor->submit());
      apply(m_executor->poll());
      follow_held();
      check_stalls();
      draw();
    }
  } catch (...) {
    abandon();
    throw;
  }
  clear_block();

  const int finished = m_done + m_finished_before, failed = m_failed + m_failed_before;
  const auto stopped = static_cast<int64_t>(m_stopped.size());
  say(m_spec.name + ": " + std::to_string(finished) + " of " + std::to_string(m_total) + " runs finished, " +
      std::to_string(failed) + " failed, " +
      (stopped > 0 ? std::to_string(stopped) + " stopped by --eliminate (`sweep run` without it finishes them), "
                   : "") +
      (m_orphaned > 0 ? std::to_string(m_orphaned) + " branches not started (their parent could not start them), "
                      : "") +
      std::to_string(std::max<int64_t>(0, static_cast<int64_t>(m_total) - finished - failed - stopped - m_orphaned)) +
      " to resume or start, " + format_duration(now() - m_started));
  if (!m_halt.empty()) {
    say("stopped: " + m_halt);
    return Exit::io_error;
  }
  if (g_interrupts > 0) {
    return Exit::interrupted;
  }
  return failed > 0 || !m_held.empty() || m_orphaned > 0 ? Exit::failed : Exit::ok;
}

// The runner failed (the database could not be written, say): its local workers are stopped
// (they checkpoint), and the runs they trained are read again from their folders and left
// resumable — as far as the database takes it; what it refuses now, the next `sweep run`
// recovers (a run left `running` without a worker resumes).
void SweepRunner::abandon() {
  clear_block();
  m_executor.reset();
  m_lock->release_reserve();  // the disk may be full: these last writes have the reserve's room
  for (const auto& [run_id, w] : m_watched) {
    try {
      const RunRow row = *m_store.run(run_id);
      reingest_run_dir(m_store, run_id, row.run_dir);
      if (!finished(m_store.run(run_id)->status)) {
        record_end(m_store, run_id, RunState::interrupted, "the scheduler stopped on an error while this run trained");
      }
    } catch (const std::exception&) {
    }
  }
}

}  // namespace sweep
