// The results database (SQLite through SQLiteCpp; the only module that includes it). The
// scheduler is its single writer. Schema (README "Database"), migrations numbered by
// PRAGMA user_version, WAL, a busy timeout, every write in a transaction that rolls back
// unless committed. Ingesting worker events is idempotent: metrics are unique on
// (run, split, step), and a `start` event at step k replaces the rows after k.
#pragma once

#include <filesystem>
#include <memory>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/sweep_spec.h"
#include "protocol/run_state.h"
#include "util/error.h"

namespace SQLite {
class Database;
}

namespace sweep {

struct RunRow {
  std::string run_id;
  RunState status = RunState::pending;
  int64_t attempts = 0;
  int64_t init_seed = 0, data_seed = 0, repeat = 0;
  int64_t steps = 0, total_steps = 0, tokens = 0;
  std::optional<double> test_loss, test_bpb, last_loss;
  std::optional<double> wall_seconds;   // every segment's time, start event to last event, summed
  std::optional<double> train_seconds;  // the time of the steps of the run's curve (each step once)
  std::optional<double> tokens_per_s;   // tokens / train_seconds
  std::string error;
  std::string run_dir;  // absolute (stored relative to the results folder when inside it)
  int64_t pid = 0;
  std::string config_yaml;
  std::string job, job_state;  // a batch system's task id (Slurm "12_3") and its state, when it runs one
  std::string device;          // where its latest start trained: a slot ("cpu:0", "cuda:1", "Slurm"); "" before any
};

struct SweepRunRow {
  std::string variant;
  RunRow run;
};

struct SweepSummary {
  std::string name;
  std::string file;
};

struct SweepInfo {
  std::string name, file, spec, baseline;
  std::vector<SweepAxis> axes;
  std::optional<Ladder> ladder;   // a scale ladder's rungs and target
  std::vector<Variant> variants;  // in the sweep file's order, baseline first (without overrides)
  SeedDesign design;              // as last run (before schema 5: first = 0, a fixed design)
};

// One start of a worker on a run (a first start, a resume or a retry), from its events.
struct Segment {
  double started = 0, last_event = 0;  // unix seconds: its start event, its last event
  int64_t step = 0;                    // where it started
  std::string code;                    // the git commit of its binary; "" when it did not say
  std::optional<int64_t> numerics;     // its numerics version; empty when it did not say

  // Workers before numerics versions did not say theirs: version 1.
  int64_t numerics_version() const { return numerics.value_or(1); }
  // "<commit> numerics N", as reports and `sweep status` show the code that trained a run.
  std::string code_label() const {
    if (code.rfind("trainer ", 0) == 0) {  // a user's trainer: its version is its code (no numerics of sweep's)
      return code;
    }
    return (code.empty() ? std::string("unknown commit") : code) + " numerics " + std::to_string(numerics_version());
  }
};

struct MetricPoint {
  int64_t step = 0, tokens = 0;
  std::optional<double> loss;       // empty when not finite
  std::optional<double> grad_norm;  // train steps; empty when not finite or not recorded
  std::optional<double> lr;         // train steps: the learning rate; empty when not recorded
  std::optional<double> tokens_per_s;  // train steps: the step's own speed; empty when not recorded
  std::vector<double> moe_load_max;  // train steps of MoE models, per MoE layer: the busiest expert's load ÷ the mean
};

// A reference model's score on a sweep's test split (`references:` in the sweep file).
struct ReferenceScore {
  std::string name, model, model_sha256, dataset;
  double loss = 0;
  std::optional<double> bpb;
  int64_t tokens = 0, parameters = 0, block_size = 0;
};

// An empty (0-byte) database file — a scheduler stopped before its first write, or a `touch` —
// holds no sweep: a reading command refuses it (bad input, the fix named) and writes nothing.
bool empty_database(const std::string& path);
Error empty_database_error(const std::string& path);

class Store {
 public:
  static constexpr int k_schema_version = 9;

  // read: for commands that only read (report, status, ls, plan) — a database in a folder this
  // process cannot write is opened read-only, as it is, instead of failing.
  // reader: a long-lived reader beside a running scheduler (sweep serve): a read-only connection
  // that never migrates, never creates and never writes; it sees each commit as it lands (WAL).
  enum class Access { write, read, reader };
  explicit Store(const std::string& path, Access access = Access::write);
  ~Store();

  // Records the sweep, its variants and its runs (new runs as pending; existing runs, shared
  // with other sweeps or from an earlier invocation, keep their state).
  // Its runs' folders are <results folder>/runs/<run id>.
  void record_sweep(const SweepSpec& spec);

  std::optional<RunRow> run(const std::string& run_id);
  std::vector<SweepRunRow> sweep_runs(const std::string& sweep);
  std::vector<SweepSummary> sweeps();  // the most recently run first
  std::optional<SweepInfo> sweep_info(const std::string& sweep);
  std::vector<MetricPoint> metrics(const std::string& run_id, const std::string& split);
  // The same points one at a time, step ascending (`each` sees one reused point: copy what it keeps).
  void metrics(const std::string& run_id, const std::string& split, const std::function<void(const MetricPoint&)>& each);
  // The run's test loss in blocks (predicted tokens, summed nats); empty when its worker did not say.
  std::vector<std::pair<int64_t, double>> test_blocks(const std::string& run_id);
  std::vector<Segment> segments(const std::string& run_id);  // oldest first
  // The sweep's reference models as last scored, best first; recording replaces the name's score.
  std::vector<ReferenceScore> references(const std::string& sweep);
  void record_reference(const std::string& sweep, const ReferenceScore& score);

  void mark_launched(const std::string& run_id, int64_t pid, bool counts_as_attempt, const std::string& device);
  void set_status(const std::string& run_id, RunState status, const std::string& error = "");
  void set_job(const std::string& run_id, const std::string& job, const std::string& state);
  // `sweep ingest`: the attempts a run folder's events make, where the database counted fewer.
  void note_attempts(const std::string& run_id, int64_t attempts);
  // Registers a run found on disk (sweep ingest) that the database does not know yet, at the seeds its config says.
  void ensure_run(const std::string& run_id, const std::string& config_yaml, const std::string& run_dir,
                  int64_t init_seed, int64_t data_seed);
  // Where the run's files are (sweep ingest of a folder elsewhere: its runs train on there).
  void set_run_dir(const std::string& run_id, const std::string& run_dir);

  // Drops what the run's events made (its metrics and segments; its progress and result columns
  // back to none): `sweep ingest` then reads its folder's events.jsonl as the whole truth, so a
  // folder restored over runs trained elsewhere keeps no segment of theirs.
  void forget_events(const std::string& run_id);
  // Applies worker events (JSON lines) to the database in one transaction.
  void ingest(const std::string& run_id, const std::vector<std::string>& lines);

  int schema_version();
  // Changes whenever another connection has committed since this one last asked (PRAGMA
  // data_version): a reader's cheap test of whether what it computed is stale.
  int64_t data_version();
  std::string integrity_check();
  int64_t metric_rows(const std::string& run_id);

 private:
  void migrate();
  std::string stored_dir(const std::string& run_dir) const;  // relative to m_root when inside it
  std::string m_path;
  std::filesystem::path m_root;  // the results folder: the database's folder, absolute
  std::unique_ptr<SQLite::Database> m_db;
};

}  // namespace sweep
