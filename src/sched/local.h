// The local executor: workers are child processes of `sweep run` on this machine's device slots
// (--devices); a run with resources.ranks = N starts when N slots are free, as one worker that
// launches its N ranks. Its events arrive on the child's stdout.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sched/executor.h"
#include "sched/slots.h"
#include "util/process.h"

namespace sweep {

// Refuses (bad input) a sweep with a run that needs more slots (resources.ranks) than --devices
// gives, or, on GPUs over NCCL, more distinct GPUs than it lists.
void check_fits(const SweepSpec& spec, const std::string& devices);

class LocalExecutor : public Executor {
 public:
  // stall_timeout: sweep run --stall-timeout, given to every worker (< 0: each run's own)
  LocalExecutor(const std::string& devices, std::string worker_binary, double stall_timeout = -1);
  ~LocalExecutor() override;

  std::string describe() const override;
  std::optional<std::string> adopt(const RunRow& row, const PlannedRun* run) override;
  bool can_start(const PlannedRun& run) const override;
  std::optional<int64_t> start(const PlannedRun& run, const RunRow& row, std::optional<int64_t> pause_at,
                               std::string& where) override;
  void hold(const PlannedRun& run) override;
  void release(const std::string& run_id) override;
  Observed poll() override;
  void kill(const std::string& run_id) override;
  std::string stop(int times) override;

 private:
  struct Worker {
    std::string run_id;
    std::string log;
    uintmax_t log_start;        // the log's size at launch: what this attempt wrote follows
    std::vector<size_t> slots;  // one per data-parallel rank
    Child child;
    std::string buffer;  // a partial stdout line
    long oom_kills;      // the cgroup's OOM-kill count at launch (-1: unknown)
  };
  // The complete lines the worker wrote on stdout since the last call.
  std::vector<std::string> read_lines(Worker& w);
  // Free slots for a run's ranks (a GPU each where its backend needs one); fewer when not enough.
  std::vector<size_t> free_slots(const RunConfig& run) const;

  std::string m_devices;
  std::string m_binary;
  double m_stall_timeout;
  std::vector<Slot> m_slots;
  std::vector<Worker> m_workers;
  std::map<std::string, std::vector<size_t>> m_held;  // runs another process trains -> the slots kept for them
};

}  // namespace sweep
