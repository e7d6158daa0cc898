#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include "config/sweep_spec.h"
#include "helpers.h"
#include "store/store.h"

using namespace sweep;

namespace {

std::string train_line(int step, const std::string& loss) {
  return R"({"event":"train","step":)" + std::to_string(step) + R"(,"tokens":)" + std::to_string(step * 100) +
         R"(,"loss":)" + loss + R"(,"lr":0.001,"grad_norm":1.5,"tokens_per_s":1000})";
}

SweepSpec one_run_sweep() {
  SweepSpec s;
  s.name = "t";
  s.baseline = "base";
  s.file = "t.yaml";
  s.text = "sweep: t";
  s.variants.push_back({"base", {}});
  PlannedRun r;
  r.variant = "base";
  r.config = test::tiny_config();
  r.run_id = run_id_of(r.config, 0);
  s.runs.push_back(r);
  return s;
}

}  // namespace

TEST_CASE("a new database is migrated to the current schema, in WAL mode") {
  test::TempDir dir;
  {
    Store store(dir.str("sweep.db"));
    CHECK(store.schema_version() == Store::k_schema_version);
  }
  Store again(dir.str("sweep.db"));  // reopening migrates nothing and keeps the data
  CHECK(again.schema_version() == Store::k_schema_version);
  SQLite::Database raw(dir.str("sweep.db"));
  CHECK(raw.execAndGet("PRAGMA journal_mode").getString() == "wal");
}

TEST_CASE("ingest is idempotent and a restart at step k replaces the rows after k") {
  test::TempDir dir;
  Store store(dir.str("sweep.db"));
  const SweepSpec s = one_run_sweep();
  store.record_sweep(s, dir.str());
  const std::string id = s.runs[0].run_id;
  CHECK(store.run(id)->status == "pending");

  std::vector<std::string> lines{R"({"event":"start","step":0,"total_steps":6})",
                                 R"({"event":"eval","split":"val","step":0,"tokens":0,"loss":4.1})"};
  for (int step = 1; step <= 4; ++step) {
    lines.push_back(train_line(step, "3.5"));
  }
  store.ingest(id, lines);
  store.ingest(id, lines);  // the same events again: nothing doubles
  CHECK(store.metric_rows(id) == 5);
  CHECK(store.run(id)->steps == 4);

  // the worker died after step 4; its last checkpoint was at step 2: it restarts there
  store.ingest(id, {R"({"event":"start","step":2,"total_steps":6})"});
  CHECK(store.metric_rows(id) == 3);  // val@0, train@1, train@2
  CHECK(store.run(id)->steps == 2);
  std::vector<std::string> rest;
  for (int step = 3; step <= 6; ++step) {
    rest.push_back(train_line(step, "3.0"));
  }
  rest.push_back(R"({"event":"end","status":"done","step":6,"test_loss":2.9,"test_bpb":1.2,"wall_seconds":3.5})");
  store.ingest(id, rest);
  CHECK(store.metric_rows(id) == 7);
  const RunRow row = *store.run(id);
  CHECK(row.status == "done");
  CHECK(row.test_loss == doctest::Approx(2.9));
  CHECK(store.integrity_check() == "ok");
}

TEST_CASE("a batch of lines that restarts the run ends with the restart's progress") {
  test::TempDir dir;
  Store store(dir.str("sweep.db"));
  const SweepSpec s = one_run_sweep();
  store.record_sweep(s, dir.str());
  const std::string id = s.runs[0].run_id;
  store.ingest(id, {train_line(1, "3.5"), train_line(2, "3.4"), R"({"event":"start","step":1,"total_steps":6})"});
  CHECK(store.run(id)->steps == 1);
  CHECK(store.metric_rows(id) == 1);
  store.ingest(id, {train_line(2, "3.3"), train_line(3, "3.2")});
  CHECK(store.run(id)->steps == 3);
  CHECK(store.run(id)->last_loss == doctest::Approx(3.2));
}

TEST_CASE("non-finite values are stored with an explicit status, not a silent NULL") {
  test::TempDir dir;
  Store store(dir.str("sweep.db"));
  const SweepSpec s = one_run_sweep();
  store.record_sweep(s, dir.str());
  const std::string id = s.runs[0].run_id;
  store.ingest(id, {train_line(1, "2.0"), train_line(2, "\"nan\""),
                    R"({"event":"end","status":"diverged","step":2,"reason":"non-finite loss at step 2"})"});
  SQLite::Database raw(dir.str("sweep.db"));
  SQLite::Statement q(raw, "SELECT step, loss, loss_status FROM metrics WHERE run_id = ? ORDER BY step");
  q.bind(1, id);
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(2).getString() == "finite");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(1).isNull());
  CHECK(q.getColumn(2).getString() == "nan");
  CHECK(store.run(id)->status == "diverged");
  CHECK(store.run(id)->error == "non-finite loss at step 2");
}

TEST_CASE("recording a sweep twice keeps its runs' state, and a shared run belongs to both sweeps") {
  test::TempDir dir;
  Store store(dir.str("sweep.db"));
  SweepSpec s = one_run_sweep();
  store.record_sweep(s, dir.str());
  store.ingest(s.runs[0].run_id, {R"({"event":"end","status":"done","step":6,"test_loss":2.5})"});
  store.record_sweep(s, dir.str());
  CHECK(store.run(s.runs[0].run_id)->status == "done");
  s.name = "other";
  store.record_sweep(s, dir.str());
  CHECK(store.sweep_runs("other").size() == 1);
  CHECK(store.sweep_runs("other")[0].run.status == "done");
  CHECK(store.sweeps().size() == 2);
}
