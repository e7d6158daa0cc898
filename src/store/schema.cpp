// The database's schema: the migrations that bring a database of any earlier version to this
// sweep's (Store::k_schema_version), each in its own transaction.
#include <SQLiteCpp/SQLiteCpp.h>

#include <string>

#include "store/store.h"
#include "util/error.h"

namespace sweep {

namespace {

// Migration N brings a database from user_version N-1 to N. Append; never edit a shipped one.
const char* const k_migrations[] = {
    // 1: the first schema
    R"sql(
    CREATE TABLE sweeps (
      name       TEXT PRIMARY KEY,
      file       TEXT NOT NULL,
      spec       TEXT NOT NULL,          -- the sweep file as written
      baseline   TEXT NOT NULL,
      updated_at REAL NOT NULL           -- unix seconds
    );
    CREATE TABLE variants (
      sweep     TEXT NOT NULL REFERENCES sweeps(name),
      name      TEXT NOT NULL,
      position  INTEGER NOT NULL,        -- order in the sweep file, baseline first
      overrides TEXT NOT NULL,           -- JSON {dotted.key: value}
      PRIMARY KEY (sweep, name)
    );
    CREATE TABLE runs (
      run_id       TEXT PRIMARY KEY,     -- hash of the run's identity (config + seeds + repeat)
      config       TEXT NOT NULL,        -- the resolved config, YAML
      init_seed    INTEGER NOT NULL,
      data_seed    INTEGER NOT NULL,
      repeat       INTEGER NOT NULL DEFAULT 0,
      status       TEXT NOT NULL,        -- pending running done diverged failed oom interrupted preempted
      attempts     INTEGER NOT NULL DEFAULT 0,
      steps        INTEGER NOT NULL DEFAULT 0,
      total_steps  INTEGER NOT NULL DEFAULT 0,
      tokens       INTEGER NOT NULL DEFAULT 0,
      test_loss    REAL,
      test_bpb     REAL,
      wall_seconds REAL,
      tokens_per_s REAL,
      last_loss    REAL,
      error        TEXT NOT NULL DEFAULT '',
      run_dir      TEXT NOT NULL,
      pid          INTEGER NOT NULL DEFAULT 0,
      updated_at   REAL NOT NULL
    );
    CREATE TABLE sweep_runs (
      sweep   TEXT NOT NULL,
      variant TEXT NOT NULL,
      run_id  TEXT NOT NULL REFERENCES runs(run_id),
      PRIMARY KEY (sweep, variant, run_id)
    );
    CREATE TABLE metrics (
      run_id           TEXT NOT NULL REFERENCES runs(run_id),
      split            TEXT NOT NULL,    -- train, val, test
      step             INTEGER NOT NULL,
      tokens           INTEGER NOT NULL,
      loss             REAL,             -- NULL only when loss_status is not 'finite'
      loss_status      TEXT NOT NULL,    -- finite, nan, inf, -inf
      lr               REAL,
      grad_norm        REAL,
      grad_norm_status TEXT,             -- finite, nan, inf, -inf (train rows)
      tokens_per_s     REAL,
      PRIMARY KEY (run_id, split, step)
    ) WITHOUT ROWID;
    CREATE INDEX runs_by_status ON runs(status);
    )sql",
    // 2: the batch-system task that runs a run (Slurm: "JOBID_INDEX") and its last known state
    R"sql(
    ALTER TABLE runs ADD COLUMN job TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN job_state TEXT NOT NULL DEFAULT '';
    )sql",
    // 3: where a variant sits in its sweep's design, every start of a worker on a run (with the
    // code that trained it), and a run's training time (the sum of its steps' times)
    R"sql(
    ALTER TABLE sweeps ADD COLUMN axes TEXT NOT NULL DEFAULT '[]';         -- JSON [{"kind": grid|zip, "keys": [...]}]
    ALTER TABLE variants ADD COLUMN intervention TEXT NOT NULL DEFAULT ''; -- the intervention or combination it expands
    ALTER TABLE variants ADD COLUMN parts TEXT NOT NULL DEFAULT '[]';     -- a combination's interventions, JSON
    ALTER TABLE variants ADD COLUMN axes TEXT NOT NULL DEFAULT '{}';      -- JSON {grid/zip key: resolved value}
    ALTER TABLE runs ADD COLUMN train_seconds REAL;
    CREATE TABLE segments (
      run_id     TEXT NOT NULL REFERENCES runs(run_id),
      started    REAL NOT NULL,        -- the start event's time (unix seconds)
      step       INTEGER NOT NULL,     -- the step it started from: 0, or a checkpoint's
      last_event REAL NOT NULL,        -- the time of the last event it wrote
      code       TEXT NOT NULL,        -- the git commit of the worker's binary ('' when it did not say)
      numerics   INTEGER,              -- its numerics version (NULL when it did not say: before version 2)
      PRIMARY KEY (run_id, started)
    ) WITHOUT ROWID;
    )sql",
    // 4: run folders relative to the results folder (the database's folder), so that the folder
    // works from any working directory and after a move: a sweep's run folder was stored as
    // <--results as given>/runs/<id>, relative to the working directory of the `sweep run`
    R"sql(
    UPDATE runs SET run_dir = 'runs/' || run_id WHERE run_dir LIKE '%runs/' || run_id;
    )sql",
    // 5: a sweep's seed design: the smallest effect of interest, and the cap of --until-decided
    R"sql(
    ALTER TABLE sweeps ADD COLUMN design TEXT NOT NULL DEFAULT '{}';  -- JSON {first, max_seeds, min_effect}
    )sql",
    // 6: the test loss in blocks, for the test set's sampling error
    R"sql(
    ALTER TABLE runs ADD COLUMN test_blocks TEXT;  -- JSON [[predicted tokens, summed nats], ...]; NULL: not said
    )sql",
    // 7: what the MoE layers did at each step (train rows of MoE models)
    R"sql(
    ALTER TABLE metrics ADD COLUMN moe TEXT;  -- JSON {"load_max": [per layer], "entropy": [...], "aux_loss": x | null}
    )sql",
    // 8: models a sweep names as references (references: in its file), scored on its test split
    R"sql(
    CREATE TABLE reference_scores (
      sweep        TEXT NOT NULL,
      name         TEXT NOT NULL,
      model        TEXT NOT NULL,      -- the state dict file, as scored
      model_sha256 TEXT NOT NULL,      -- its content: another file under the name is scored again
      dataset      TEXT NOT NULL,      -- the folder whose test split it was scored on
      loss         REAL NOT NULL,      -- mean test cross-entropy, nats/token
      bpb          REAL,               -- bits per byte; NULL when the dataset has no byte counts
      tokens       INTEGER NOT NULL,   -- predicted tokens
      parameters   INTEGER NOT NULL,
      block_size   INTEGER NOT NULL,   -- its context: the windows it was scored in
      scored_at    REAL NOT NULL,
      PRIMARY KEY (sweep, name)
    );
    )sql",
    // 9: where each run trained: the slot of its latest start ("cpu:0", "cuda:1", "Slurm"). A run
    // from before it trained on the kind of device its config names (a GPU run's id says cuda
    // from this version on; every earlier one is a CPU run's, unless its config said cuda)
    R"sql(
    ALTER TABLE runs ADD COLUMN device TEXT;
    UPDATE runs SET device = CASE WHEN config LIKE '%device: cuda%' THEN 'cuda' ELSE 'cpu' END;
    )sql",
};

static_assert(sizeof k_migrations / sizeof k_migrations[0] == Store::k_schema_version,
              "Store::k_schema_version is the number of migrations");

}  // namespace

int Store::schema_version() { return m_db->execAndGet("PRAGMA user_version").getInt(); }

void Store::migrate() {
  const int version = schema_version();
  constexpr int latest = static_cast<int>(sizeof k_migrations / sizeof k_migrations[0]);
  if (version > latest) {
    throw Error("the database has schema version " + std::to_string(version) + ", newer than this sweep (" +
                std::to_string(latest) + ") — use a newer sweep");
  }
  for (int v = version; v < latest; ++v) {
    SQLite::Transaction tx(*m_db);
    m_db->exec(k_migrations[v]);
    m_db->exec("PRAGMA user_version = " + std::to_string(v + 1));
    tx.commit();
  }
}

}  // namespace sweep
