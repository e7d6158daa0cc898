// The events schema: every event and field name a worker writes (src/train, one JSON object per
// line of events.jsonl and, under a scheduler, of its stdout) and the ingester reads (src/store).
// Both sides spell them only through these constants. docs/reference.md "Events" documents them.
//
// Versioned by k_events_version, written in every `start` event's "schema" field. A reader takes
// a start event without one for version 1 and reads the fields it knows from any version; a
// change that renames or re-means a field must raise the version.
#pragma once

#include <chrono>
#include <cstdint>

namespace sweep::events {

constexpr int64_t k_events_version = 1;

// An event's "time": unix seconds, now.
inline double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Event types ("event" field).
constexpr const char* start = "start";            // a worker started (or resumed) training the run
constexpr const char* train = "train";            // one optimizer step
constexpr const char* eval = "eval";              // a validation or test evaluation
constexpr const char* checkpoint = "checkpoint";  // a checkpoint was written
constexpr const char* end = "end";                // the worker stopped: how ("status") and why ("reason")
// still working in a long phase without other events ("phase": train | eval | test | checkpoint), at most
// one every heartbeat interval (resources.stall_timeout / 4, at most 30 s): the scheduler's
// watchdog kills a worker it hears nothing from for the stall timeout
constexpr const char* heartbeat = "heartbeat";

namespace field {
// Every event.
constexpr const char* event = "event";  // the type, above
constexpr const char* time = "time";    // unix seconds
constexpr const char* step = "step";    // optimizer steps taken
constexpr const char* tokens = "tokens";  // training tokens consumed

// start
constexpr const char* schema = "schema";  // k_events_version of the writer
constexpr const char* total_steps = "total_steps";
constexpr const char* tokens_per_step = "tokens_per_step";
constexpr const char* params = "params";
constexpr const char* active_params = "active_params";  // what one token goes through (MoE: its top-k experts)
constexpr const char* threads = "threads";
constexpr const char* device = "device";
constexpr const char* precision = "precision";
constexpr const char* fused = "fused";
constexpr const char* attention = "attention";
constexpr const char* resumed = "resumed";
constexpr const char* checkpoint_problem = "checkpoint_problem";  // what was wrong with the checkpoint resumed from ("": nothing)
constexpr const char* code = "code";          // the git commit the worker was built from
constexpr const char* numerics = "numerics";  // k_numerics_version of the worker
// the run id of the config it trains (its repeat 0): what `sweep ingest` checks a run folder's events by
constexpr const char* identity = "identity";
// a trainer of your own: the program its host started, as found (a path: `python3` as PATH resolved it)
constexpr const char* program = "program";

// train and eval ("loss" and "grad_norm" may be the strings "nan", "inf", "-inf")
constexpr const char* loss = "loss";
constexpr const char* lr = "lr";
constexpr const char* grad_norm = "grad_norm";
constexpr const char* tokens_per_s = "tokens_per_s";
constexpr const char* split = "split";  // eval: "val" or "test"
constexpr const char* phase = "phase";  // heartbeat: what the worker is busy with
// train, MoE models only: {"load_max": [per MoE layer], "entropy": [...], "aux_loss": x | null} over the
// step's global batch (every micro-batch, every rank): the busiest expert's tokens ÷ the mean per
// expert, the mean router entropy per token (nats), the auxiliary loss (mean over micro-batches)
constexpr const char* moe = "moe";

// end
constexpr const char* status = "status";  // a RunState: done | diverged | failed | preempted
constexpr const char* reason = "reason";
constexpr const char* by = "by";  // "sweep": the scheduler's own end of an attempt, written into the run's folder
constexpr const char* test_loss = "test_loss";
constexpr const char* test_bpb = "test_bpb";
constexpr const char* wall_seconds = "wall_seconds";
constexpr const char* test_blocks = "test_blocks";  // [[predicted tokens, summed nats], ...]: the test split in
                                                    // at most 1000 blocks of consecutive windows (done runs)
}  // namespace field

// Values of eval's "split".
constexpr const char* val_split = "val";
constexpr const char* test_split = "test";

}  // namespace sweep::events
