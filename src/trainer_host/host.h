// A user's own trainer, hosted: `sweep worker` for a run whose config names a `trainer:`. The
// host prepares the run folder (config.yaml, config.json, checkpoint/), starts the trainer's
// command — placeholders filled in, in the trainer's folder, with the SWEEP_* environment and,
// for several ranks, torchrun's — and reads its stdout line by line: a valid event (the contract
// in docs/reference.md, "Events") is appended to events.jsonl and passed on to the scheduler;
// any other line goes to worker.log. SIGTERM and SIGINT reach the trainer; its exit says how the
// run ended. The executors start the host exactly as they start the built-in worker, so a
// trainer of the user's gets the same slots, Slurm tasks, retries, preemption and watchdog.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "config/run_config.h"
#include "protocol/json_line.h"
#include "util/error.h"

namespace sweep {

// Longest line of a trainer's stdout read as an event; a longer one goes to worker.log, cut.
inline constexpr size_t k_max_event_line = events::k_max_json_line;

// What worker.log takes of a program's output (its stderr, its stdout's lines that are no events)
// in one attempt; past it the rest is dropped but for its last k_log_tail bytes, written when the
// program ends, after a note where the log was cut.
inline constexpr int64_t k_max_log_bytes = 64LL << 20;
inline constexpr size_t k_log_tail = 64 << 10;
// What events.jsonl takes in one attempt: past it the program is stopped and the run failed (not
// retried: it would do the same again). Heartbeats count toward it only once a second: more often
// they are dropped (the watchdog needs one per stall timeout).
inline constexpr int64_t k_max_events_bytes = 1LL << 30;

// One line of a trainer's stdout judged against the events contract: the event to record (a
// start event stamped with the trainer's version as its `code`; `time` filled in when absent),
// or nullopt with `why` set (empty `why`: the line is no JSON object with an "event", so it is
// the trainer's own output).
std::optional<nlohmann::json> accept_event(const std::string& line, const OwnTrainer& trainer, std::string& why);

struct HostOptions {
  std::string run_dir;
  bool resume = false;  // continue from the run folder's checkpoint when it has one
  bool events = true;   // pass events on to stdout (the scheduler reads them there)
};

// Trains the run with its trainer; returns the worker's exit code: 0 done, 3 diverged, 75
// preempted (checkpointed and stopped), 2 a trainer that breaks the contract (an end without a
// finite test loss; not retried), else the trainer's own code.
Exit host_trainer(const RunConfig& config, const HostOptions& options);

}  // namespace sweep
