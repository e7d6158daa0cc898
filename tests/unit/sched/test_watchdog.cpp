// The watchdog on the real runner and database, with an executor that plays a batch system: a
// queued task whose folder holds an earlier attempt's lines, and that stays queued longer than the
// stall timeout, is never killed (silence counts only while it runs); once it runs and goes silent
// it is killed — once, and again only if the kill did not take — and retried, and the retry ends
// done. (The SIGSTOP of a real worker is integration.stall.)
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "config/load_sweep.h"
#include "helpers.h"
#include "sched/runner.h"
#include "sched/slurm.h"
#include "store/store.h"

using namespace sweep;

namespace {

using Clock = std::chrono::steady_clock;

// What the executor saw: it outlives the executor, which the runner owns.
struct Seen {
  bool speaks = true;  // the first attempt sends its start event before it goes silent
  int starts = 0, kills = 0;
  Clock::time_point first_start, killed;
  std::string run_id;
};

class QueueExecutor : public Executor {
 public:
  explicit QueueExecutor(Seen& seen) : m_seen(seen) {}

  std::string describe() const override { return "a queue"; }
  std::optional<std::string> adopt(const RunRow&, const PlannedRun*) override { return std::nullopt; }
  bool can_start(const PlannedRun&) const override { return true; }
  std::optional<int64_t> start(const PlannedRun& run, const RunRow&, std::optional<int64_t>,
                               std::string& where) override {
    where = "the queue";
    m_seen.run_id = run.run_id;
    if (++m_seen.starts == 1) {
      m_seen.first_start = Clock::now();
    }
    // the first attempt waits in the queue longer than the stall timeout
    m_runs_at = Clock::now() + std::chrono::milliseconds(m_seen.starts == 1 ? 2500 : 0);
    m_running = false;
    m_ended = false;
    return std::nullopt;  // queued
  }
  Observed poll() override {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Observed seen;
    const std::string& run_id = m_seen.run_id;
    if (run_id.empty() || m_ended) {
      return seen;
    }
    if (m_seen.kills > 0 && m_seen.starts == 1) {  // the first attempt was cancelled: it leaves the queue
      seen.jobs.push_back({run_id, "1_0", "CANCELLED"});
      seen.ended.push_back(WorkerEnd{run_id, std::nullopt, false, "", "", "Slurm task 1_0 was cancelled"});
      m_ended = true;
      return seen;
    }
    if (!m_running && Clock::now() < m_runs_at) {
      // queued: Slurm's state, and the run folder's lines of an earlier attempt, read again
      seen.jobs.push_back({run_id, "1_0", "PENDING"});
      seen.events.push_back({run_id, {R"({"event":"train","step":5,"tokens":80,"loss":3.0})"}});
      return seen;
    }
    if (!m_running) {
      m_running = true;
      seen.jobs.push_back({run_id, "1_0", k_slurm_running});
      seen.running.emplace_back(run_id, "Slurm task 1_0");
      if (m_seen.starts == 2) {  // the retry trains to the end at once
        seen.events.push_back({run_id,
                               {R"({"event":"start","step":0,"total_steps":1,"numerics":2})",
                                R"({"event":"end","status":"done","step":1,"test_loss":2.5})"}});
        seen.ended.push_back(WorkerEnd{run_id, std::nullopt, false, "", "", "Slurm task 1_0 ended"});
        m_ended = true;
      }
      return seen;
    }
    if (m_seen.speaks && !m_spoke) {  // its start event, then silence: stuck
      m_spoke = true;
      seen.events.push_back({run_id, {R"({"event":"start","step":0,"total_steps":1,"numerics":2})"}});
    }
    return seen;
  }
  void kill(const std::string& id) override {
    CHECK(id == m_seen.run_id);
    CHECK(m_running);  // never while queued
    ++m_seen.kills;
    m_seen.killed = Clock::now();
  }
  std::string stop(int) override { return "stopping"; }

 private:
  Seen& m_seen;
  Clock::time_point m_runs_at;
  bool m_running = false, m_ended = false, m_spoke = false;
};

}  // namespace

namespace {

// A sweep of one run on the queue; the time from its first start to the watchdog's kill.
double watched_until_killed(Seen& seen) {
  test::TempDir dir;
  write_file_atomic(dir.path / "s.yaml",
                    "sweep: s\nbaseline: base\nseeds: [1]\nbase: {data: {dataset: data}, train: {tokens: 8192}}\n"
                    "interventions:\n  base: {}\n");
  const SweepSpec spec = load_sweep(dir.str("s.yaml"));
  Store store(dir.str("sweep.db"));
  RunnerOptions o;
  o.stall_timeout = 1;      // the queue holds the first attempt 2.5 s: longer
  o.startup_allowance = 3;  // (60 s in `sweep run`)
  CHECK(SweepRunner(spec, store, std::make_unique<ResultsLock>(dir.str()), std::make_unique<QueueExecutor>(seen), o)
            .run() == Exit::ok);
  CHECK(seen.starts == 2);  // the stalled attempt, and its retry
  CHECK(seen.kills == 1);   // once: the cancel took
  const RunRow row = *store.run(seen.run_id);
  CHECK(row.status == RunState::done);
  CHECK(row.test_loss == doctest::Approx(2.5));
  return std::chrono::duration<double>(seen.killed - seen.first_start).count();
}

}  // namespace

TEST_CASE("watchdog: a queued task is never killed, a running one silent for the timeout is, once, then retried") {
  Seen seen;
  // killed about a timeout after it began to run, not after it was queued
  const double after_queued = watched_until_killed(seen);
  CHECK(after_queued > 3.4);
  CHECK(after_queued < 5.0);
}

TEST_CASE("watchdog: before its first event a worker gets the startup allowance, not the stall timeout") {
  Seen seen;
  seen.speaks = false;  // runs, and never sends an event: still loading, or hung before its start
  const double after_queued = watched_until_killed(seen);
  CHECK(after_queued > 2.5 + 3 - 0.1);  // queued 2.5 s, then silent for the allowance of 3 s
  CHECK(after_queued < 2.5 + 3 + 1.5);
}

namespace {

// A worker a killed scheduler left behind takes the run's lock after launch() looked: the new
// worker is refused at the lock (exit 2). The executor plays both: at the first start the orphan
// takes the lock; it lets go a few polls later, having written nothing (killed before a word); the
// second start is a worker of this runner's, which trains the run to its end.
struct Taken {
  std::unique_ptr<FileLock> held;  // the orphan's hold on the run's lock
  int starts = 0, polls_held = 0, holds = 0, releases = 0;
  bool slot_busy = false;          // hold() to release(): the orphan's slot kept
  bool started_while_held = false;  // a second worker started while the orphan held the run
};

class TakenExecutor : public Executor {
 public:
  explicit TakenExecutor(Taken& t) : m_t(t) {}
  std::string describe() const override { return "a machine with an orphan"; }
  std::optional<std::string> adopt(const RunRow&, const PlannedRun*) override { return std::nullopt; }
  bool can_start(const PlannedRun&) const override { return !m_t.slot_busy; }
  void hold(const PlannedRun&) override {
    ++m_t.holds;
    m_t.slot_busy = true;
  }
  void release(const std::string&) override {
    ++m_t.releases;
    m_t.slot_busy = false;
  }
  std::optional<int64_t> start(const PlannedRun& run, const RunRow& row, std::optional<int64_t>,
                               std::string& where) override {
    where = "here";
    m_run_id = run.run_id;
    m_t.started_while_held |= m_t.held != nullptr;
    if (++m_t.starts == 1) {
      m_t.held = FileLock::try_lock(fs::path(row.run_dir) / ".lock");
      REQUIRE(m_t.held);
    }
    return 1;
  }
  Observed poll() override {
    Observed seen;
    if (m_t.held && ++m_t.polls_held > 20) {
      m_t.held.reset();  // the orphan ends
    }
    if (m_run_id.empty()) {
      return seen;
    }
    if (m_t.starts == 1) {  // refused at the lock the orphan holds
      seen.ended.push_back(WorkerEnd{m_run_id, static_cast<int>(Exit::bad_input), false, "", "", ""});
    } else {
      seen.events.push_back({m_run_id,
                             {R"({"event":"start","step":0,"total_steps":1,"numerics":2})",
                              R"({"event":"end","status":"done","step":1,"test_loss":2.5})"}});
      seen.ended.push_back(WorkerEnd{m_run_id, 0, false, "", "", ""});
    }
    m_run_id.clear();
    return seen;
  }
  void kill(const std::string&) override {}
  std::string stop(int) override { return "stopping"; }

 private:
  Taken& m_t;
  std::string m_run_id;
};

}  // namespace

// (a kill -9 of `sweep run` left such a worker: integration.kill_rerun kills it twenty times)
TEST_CASE("a run whose lock another process took after launch is followed, its slot kept, and taken up when it ends") {
  test::TempDir dir;
  write_file_atomic(dir.path / "s.yaml",
                    "sweep: s\nbaseline: base\nseeds: [1]\nbase: {data: {dataset: data}, train: {tokens: 8192}}\n"
                    "interventions:\n  base: {}\n");
  const SweepSpec spec = load_sweep(dir.str("s.yaml"));
  Store store(dir.str("sweep.db"));
  Taken taken;
  CHECK(SweepRunner(spec, store, std::make_unique<ResultsLock>(dir.str()), std::make_unique<TakenExecutor>(taken), {})
            .run() == Exit::ok);  // one sweep run finishes it
  CHECK(taken.starts == 2);
  CHECK(taken.holds == 1);
  CHECK(taken.releases == 1);
  CHECK_FALSE(taken.started_while_held);  // never two workers on the run, nor on its slot
  const RunRow row = store.sweep_runs("s").at(0).run;
  CHECK(row.status == RunState::done);
}
