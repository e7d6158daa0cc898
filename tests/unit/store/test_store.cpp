#include <doctest/doctest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include "config/sweep_spec.h"
#include "helpers.h"
#include "report/load.h"
#include "report/stats.h"
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
  s.variants.emplace_back().name = "base";
  PlannedRun r;
  r.variant = "base";
  r.config = test::tiny_config();
  r.run_id = run_id_of(r.config, 0);
  s.runs.push_back(r);
  return s;
}

// A database with one sweep of one run recorded, as `sweep run` leaves it before training.
struct RecordedRun {
  test::TempDir dir;
  Store store{dir.str("sweep.db")};
  SweepSpec spec = one_run_sweep();
  std::string id = spec.runs[0].run_id;
  RecordedRun() { store.record_sweep(spec); }
};

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
  RecordedRun fixture;
  Store& store = fixture.store;
  const std::string id = fixture.id;
  CHECK(store.run(id)->status == RunState::pending);

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
  CHECK(row.status == RunState::done);
  CHECK(row.test_loss == doctest::Approx(2.9));
  CHECK(store.integrity_check() == "ok");
}

TEST_CASE("a batch of lines that restarts the run ends with the restart's progress") {
  RecordedRun fixture;
  Store& store = fixture.store;
  const std::string id = fixture.id;
  store.ingest(id, {train_line(1, "3.5"), train_line(2, "3.4"), R"({"event":"start","step":1,"total_steps":6})"});
  CHECK(store.run(id)->steps == 1);
  CHECK(store.metric_rows(id) == 1);
  store.ingest(id, {train_line(2, "3.3"), train_line(3, "3.2")});
  CHECK(store.run(id)->steps == 3);
  CHECK(store.run(id)->last_loss == doctest::Approx(3.2));
}

TEST_CASE("non-finite values are stored with an explicit status, not a silent NULL") {
  RecordedRun fixture;
  Store& store = fixture.store;
  const std::string id = fixture.id;
  store.ingest(id, {train_line(1, "2.0"), train_line(2, "\"nan\""),
                    R"({"event":"end","status":"diverged","step":2,"reason":"non-finite loss at step 2"})"});
  SQLite::Database raw(fixture.dir.str("sweep.db"));
  SQLite::Statement q(raw, "SELECT step, loss, loss_status FROM metrics WHERE run_id = ? ORDER BY step");
  q.bind(1, id);
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(2).getString() == "finite");
  REQUIRE(q.executeStep());
  CHECK(q.getColumn(1).isNull());
  CHECK(q.getColumn(2).getString() == "nan");
  CHECK(store.run(id)->status == RunState::diverged);
  CHECK(store.run(id)->error == "non-finite loss at step 2");
  // finite steps but a non-finite test loss: no result, so diverged, whatever the worker said
  store.ingest(id, {R"({"event":"start","step":0,"total_steps":2})", train_line(1, "2.0"), train_line(2, "1.9"),
                    R"({"event":"end","status":"done","step":2,"test_loss":"nan","test_bpb":"nan"})"});
  CHECK(store.run(id)->status == RunState::diverged);
  CHECK(store.run(id)->error == "non-finite test loss");
  CHECK_FALSE(store.run(id)->test_loss.has_value());
}

TEST_CASE("recording a sweep twice keeps its runs' state, and a shared run belongs to both sweeps") {
  test::TempDir dir;
  Store store(dir.str("sweep.db"));
  SweepSpec s = one_run_sweep();
  store.record_sweep(s);
  store.ingest(s.runs[0].run_id, {R"({"event":"end","status":"done","step":6,"test_loss":2.5})"});
  store.record_sweep(s);
  CHECK(store.run(s.runs[0].run_id)->status == RunState::done);
  s.name = "other";
  store.record_sweep(s);
  CHECK(store.sweep_runs("other").size() == 1);
  CHECK(store.sweep_runs("other")[0].run.status == RunState::done);
  CHECK(store.sweeps().size() == 2);
}

namespace {

std::string timed(const std::string& event_json_without_brace, double time) {
  return "{" + event_json_without_brace + ",\"time\":" + std::to_string(time) + "}";
}

// A run started three times: the first start dies after step 4 (its checkpoint at step 2), the
// second is preempted after step 5 (checkpoint at 5), the third, by another build, finishes at 6.
// Step k takes 100 / (100·k) seconds: tokens_per_s = 100·k for 100 tokens a step.
std::vector<std::vector<std::string>> three_starts() {
  auto train = [](int step, double time) {
    return timed(R"("event":"train","step":)" + std::to_string(step) + R"(,"tokens":)" + std::to_string(step * 100) +
                     R"(,"loss":3.0,"lr":0.001,"grad_norm":1.0,"tokens_per_s":)" + std::to_string(100 * step),
                 time);
  };
  return {
      {timed(R"("event":"start","step":0,"total_steps":6,"code":"aaaaaaaaaaaa","numerics":2)", 100), train(1, 101),
       train(2, 102), timed(R"("event":"checkpoint","step":2)", 102.5), train(3, 103), train(4, 104)},
      {timed(R"("event":"start","step":2,"total_steps":6,"code":"aaaaaaaaaaaa","numerics":2)", 200), train(3, 201),
       train(4, 202), train(5, 203), timed(R"("event":"end","status":"preempted","step":5)", 203.5)},
      {timed(R"("event":"start","step":5,"total_steps":6,"code":"bbbbbbbbbbbb","numerics":2)", 300), train(6, 301),
       timed(R"("event":"end","status":"done","step":6,"test_loss":2.9,"test_bpb":1.2,"wall_seconds":2)", 302)},
  };
}

}  // namespace

TEST_CASE("a run started three times: wall sums every start, tokens/s is over its own steps, each start's code") {
  const double step_seconds = 1 + 1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5 + 1.0 / 6;  // steps 1..6, each once
  auto check = [&](Store& store, const std::string& id) {
    const RunRow row = *store.run(id);
    CHECK(row.wall_seconds == doctest::Approx((104 - 100) + (203.5 - 200) + (302 - 300)));
    CHECK(row.train_seconds == doctest::Approx(step_seconds));
    CHECK(row.tokens_per_s == doctest::Approx(600 / step_seconds));
    const std::vector<Segment> segments = store.segments(id);
    REQUIRE(segments.size() == 3);
    CHECK(segments[0].step == 0);
    CHECK(segments[1].step == 2);
    CHECK(segments[2].step == 5);
    CHECK(segments[0].last_event == 104);
    CHECK(segments[1].last_event == 203.5);
    CHECK(segments[2].code == "bbbbbbbbbbbb");
    CHECK(segments[2].numerics == 2);
  };
  test::TempDir dir;
  const SweepSpec s = one_run_sweep();
  const std::string id = s.runs[0].run_id;
  {
    Store store(dir.str("live.db"));  // as the scheduler ingests: batch by batch, as the lines arrive
    store.record_sweep(s);
    for (const auto& batch : three_starts()) {
      store.ingest(id, {batch.begin(), batch.begin() + 2});
      store.ingest(id, {batch.begin() + 2, batch.end()});
    }
    check(store, id);
  }
  {
    Store store(dir.str("rebuilt.db"));  // as `sweep ingest` does: the whole events.jsonl, twice
    store.record_sweep(s);
    std::vector<std::string> all;
    for (const auto& batch : three_starts()) {
      all.insert(all.end(), batch.begin(), batch.end());
    }
    store.ingest(id, all);
    store.ingest(id, all);
    check(store, id);
  }
}

// A run paused at a look (its last event a checkpoint), then started by a later `sweep run` and
// stopped while starting — its worker killed before its start event: the scheduler's end of that
// attempt, written 137 s later, says how it ended, not that the run trained for 137 s more.
TEST_CASE("a pause is not wall time: the scheduler's end of an attempt does not stretch its segment") {
  test::TempDir dir;
  const SweepSpec s = one_run_sweep();
  const std::string id = s.runs[0].run_id;
  Store store(dir.str("sweep.db"));
  store.record_sweep(s);
  const std::string step1 = R"("event":"train","step":1,"tokens":100,"loss":3.0,"lr":0.001,"grad_norm":1.0)";
  store.ingest(id, {timed(R"("event":"start","step":0,"total_steps":6)", 100), timed(step1, 100.4),
                    timed(R"("event":"checkpoint","step":1)", 100.4),
                    timed(R"("event":"end","status":"preempted","step":1)", 100.4)});
  store.ingest(id, {timed(R"("event":"end","status":"interrupted","reason":"stopped while starting","by":"sweep")",
                          241.5)});
  CHECK(store.run(id)->wall_seconds == doctest::Approx(0.4));
  REQUIRE(store.segments(id).size() == 1);
  CHECK(store.segments(id)[0].last_event == doctest::Approx(100.4));
}

TEST_CASE("a sweep's design is recorded: axes, each variant's intervention, parts and axis values") {
  test::TempDir dir;
  Store store(dir.str("sweep.db"));
  SweepSpec s = one_run_sweep();
  s.axes = {{AxisKind::grid, {"train.grad_accum"}}};
  s.variants[0].axes = {{"train.grad_accum", 1}};
  Variant both{"both+grad_accum=2", {}, "both", {"a", "b"}, {{"train.grad_accum", 2}}};
  s.variants.push_back(both);
  store.record_sweep(s);
  const SweepInfo info = *store.sweep_info("t");
  REQUIRE(info.axes.size() == 1);
  CHECK(info.axes[0].kind == AxisKind::grid);
  CHECK(info.axes[0].keys == std::vector<std::string>{"train.grad_accum"});
  REQUIRE(info.variants.size() == 2);
  CHECK(info.variants[0].intervention == "base");  // no intervention given: its own name
  CHECK(info.variants[1].intervention == "both");
  CHECK(info.variants[1].parts == std::vector<std::string>{"a", "b"});
  CHECK(info.variants[1].axes.dump() == R"({"train.grad_accum":2})");
}

TEST_CASE("events with fields of the wrong type, or that are no object, are skipped or read as missing") {
  RecordedRun fixture;
  Store& store = fixture.store;
  const std::string id = fixture.id;
  // A well-formed JSON line of the wrong shape used to abort every later `sweep run` and `ingest`.
  CHECK_NOTHROW(store.ingest(id, {R"({"event":"start","step":"zero","total_steps":[6],"time":10})",
                                  R"({"event":"train","step":1,"tokens":"many","loss":3.0,"lr":"high","grad_norm":1.0,"tokens_per_s":{},"time":11})",
                                  R"([1, 2, 3])", R"(42)", R"({"event":7})",
                                  R"({"event":"train","step":"seven","loss":[]})",  // no step: not placed at 0
                                  R"({"event":"eval","split":5,"step":1,"tokens":100,"loss":3.1,"time":12})",
                                  R"({"event":"eval","split":"val","step":1,"tokens":100,"loss":3.1,"time":12})",
                                  R"({"event":"train","step":-5,"loss":1.0})", R"({"event":"train","step":3,"loss":"bogus"})",
                                  R"({"event":"eval","split":"bogus","step":1,"loss":1.0})",
                                  R"({"event":"end","status":["done"],"reason":1,"time":13})",
                                  R"({"event":"end","status":"newer-state","reason":"a newer sweep","time":13})"}));
  store.ingest(id, {R"({"event":"train","step":2,"tokens":200,"loss":2.5,"lr":0.001,"grad_norm":1.0,"tokens_per_s":100,"time":14})",
                    R"({"event":"train","step":3,"tokens":300,"loss":2.4,"time":15})"});  // no lr, grad norm, speed
  const RunRow row = *store.run(id);
  CHECK(row.steps == 3);        // the good lines after the bad ones count
  CHECK(row.tokens == 300);
  CHECK(row.status == RunState::failed);        // a state this version does not know; one of another type is skipped
  CHECK(store.metrics(id, "val").size() == 1);  // the split that was no string skipped, the good one kept
  // train steps 2 and 3, the val row: no step -5, 0 or "seven", and no step 1, whose tokens were no number
  CHECK(store.metric_rows(id) == 3);
  {
    SQLite::Database raw(fixture.dir.str("sweep.db"));
    CHECK(raw.execAndGet("SELECT COUNT(*) FROM metrics WHERE split = 'train' AND step = 1").getInt() == 0);
    // what the event did not say is NULL, not a 0 it did not say
    CHECK(raw.execAndGet("SELECT lr IS NULL AND grad_norm IS NULL AND tokens_per_s IS NULL AND grad_norm_status = "
                         "'missing' FROM metrics WHERE step = 3")
              .getInt() == 1);
  }
  // An end at a negative step is no end of it (its step may be missing, or of another type: read as 0).
  RecordedRun other;
  other.store.ingest(other.id, {R"({"event":"end","status":"done","step":-3,"test_loss":2.5})"});
  CHECK(other.store.run(other.id)->status != RunState::done);
  other.store.ingest(other.id, {R"({"event":"end","status":"done","step":"six","test_loss":2.5})"});
  CHECK(other.store.run(other.id)->status == RunState::done);
  // A step past the run's total (its start said 6) is no step of it.
  store.ingest(id, {R"({"event":"start","step":0,"total_steps":6,"time":20})",
                    R"({"event":"train","step":7,"tokens":700,"loss":2.0})"});
  CHECK(store.run(id)->steps == 0);
}

TEST_CASE("a start event whose code or numerics has the wrong type is ingested, with the code unknown") {
  RecordedRun fixture;
  Store& store = fixture.store;
  const std::string id = fixture.id;
  store.ingest(id, {R"({"event":"start","step":0,"total_steps":6,"code":42,"numerics":"two","time":10})",
                    R"({"event":"train","step":1,"tokens":100,"loss":3.0,"lr":0.001,"grad_norm":1.0,"tokens_per_s":100,"time":11})"});
  const std::vector<Segment> segments = store.segments(id);
  REQUIRE(segments.size() == 1);
  CHECK(segments[0].code.empty());
  CHECK_FALSE(segments[0].numerics.has_value());
  CHECK(segments[0].last_event == 11);
  CHECK(store.run(id)->steps == 1);
}

TEST_CASE("run folders are stored relative to the results folder and read back absolute, from any directory") {
  RecordedRun fixture;
  Store& store = fixture.store;
  const std::string id = fixture.id;
  CHECK(store.run(id)->run_dir == fixture.dir.str("runs/" + id));
  {
    SQLite::Database raw(fixture.dir.str("sweep.db"));
    CHECK(raw.execAndGet("SELECT run_dir FROM runs").getString() == "runs/" + id);
  }
  // A run folder ingested from inside the results folder is stored relative, one outside absolute.
  store.ensure_run("inside", "x: 1", fixture.dir.str("runs/inside"), 1, 1);
  store.ensure_run("outside", "x: 1", "/elsewhere/runs/outside", 2, 3);
  SQLite::Database raw(fixture.dir.str("sweep.db"));
  CHECK(raw.execAndGet("SELECT run_dir FROM runs WHERE run_id = 'inside'").getString() == "runs/inside");
  CHECK(store.run("outside")->run_dir == "/elsewhere/runs/outside");
  // Moved: the same database in another folder finds its runs there.
  const test::TempDir moved;
  std::filesystem::copy(fixture.dir.path, moved.path / "r", std::filesystem::copy_options::recursive);
  CHECK(Store(moved.str("r/sweep.db")).run(id)->run_dir == moved.str("r/runs/" + id));
}

TEST_CASE("migration 4 makes the run folders of a schema-3 database relative to its folder") {
  RecordedRun fixture;
  const std::string id = fixture.id;
  {
    SQLite::Database raw(fixture.dir.str("sweep.db"), SQLite::OPEN_READWRITE);
    raw.exec("UPDATE runs SET run_dir = 'old/cwd/results/runs/" + id + "'");  // as schema 3 stored --results results
    raw.exec("INSERT INTO runs(run_id, config, init_seed, data_seed, status, run_dir, updated_at) "
             "VALUES ('abs', '', 0, 0, 'done', '/somewhere/results/runs/abs', 0), "
             "('train', '', 0, 0, 'done', '/somewhere/results/train/x', 0)");
    raw.exec("ALTER TABLE sweeps DROP COLUMN design");  // as schema 3 had them
    raw.exec("ALTER TABLE runs DROP COLUMN test_blocks");
    raw.exec("ALTER TABLE metrics DROP COLUMN moe");
    raw.exec("DROP TABLE reference_scores");
    raw.exec("ALTER TABLE runs DROP COLUMN device");
    raw.exec("PRAGMA user_version = 3");
  }
  Store store(fixture.dir.str("sweep.db"));
  CHECK(store.schema_version() == Store::k_schema_version);
  // migration 5: the sweeps recorded before it are fixed designs with no smallest effect of interest
  for (const auto& s : store.sweeps()) {
    const SeedDesign design = store.sweep_info(s.name)->design;
    CHECK_FALSE(design.sequential());
    CHECK(design.min_effect == 0);
  }
  CHECK(store.run(id)->run_dir == fixture.dir.str("runs/" + id));
  CHECK(store.run("abs")->run_dir == fixture.dir.str("runs/abs"));
  CHECK(store.run("train")->run_dir == "/somewhere/results/train/x");  // not a sweep's run folder: kept
}

TEST_CASE("the end event's test blocks are kept when every one is valid, and a restart clears them") {
  RecordedRun fixture;
  Store& store = fixture.store;
  const std::string id = fixture.id;
  auto end = [](const std::string& blocks) {
    return R"({"event":"end","status":"done","step":6,"test_loss":2.9,"test_blocks":)" + blocks + "}";
  };
  store.ingest(id, {R"({"event":"start","step":0,"total_steps":6})", end("[[100, 290.5], [50, 145]]")});
  CHECK(store.test_blocks(id) == LossBlocks{{100, 290.5}, {50, 145.0}});
  store.ingest(id, {R"({"event":"start","step":0,"total_steps":6})"});  // trained again: not yet known
  CHECK(store.test_blocks(id).empty());
  for (const char* bad : {"[[0, 1.0]]", "[[10, -1]]", R"([[10, "nan"]])", "[[10]]", "[]", "{}", R"("x")"}) {
    CAPTURE(bad);
    store.ingest(id, {end(bad)});
    CHECK(store.test_blocks(id).empty());
    CHECK(store.run(id)->status == RunState::done);  // the result stands without them
  }
}

TEST_CASE("an MoE model's per-step expert load, router entropy and aux loss are kept with the step") {
  RecordedRun fixture;
  fixture.store.ingest(fixture.id, {train_line(1, "3.0"),
                                    R"({"event":"train","step":2,"tokens":200,"loss":2.9,"lr":0.001,"grad_norm":1.0,)"
                                    R"("tokens_per_s":100,"moe":{"load_max":[1.5,2.5],"entropy":[1.2,1.3],"aux_loss":0.002}})"});
  const auto points = fixture.store.metrics(fixture.id, "train");
  REQUIRE(points.size() == 2);
  CHECK(points[0].moe_load_max.empty());  // a dense step
  CHECK(points[1].moe_load_max == std::vector<double>{1.5, 2.5});  // per MoE layer
  // the report's training curve: the mean over the layers, NaN for a dense step
  const ReportInput in = load_report_input(fixture.store, "t", Metric{}, "");
  const auto& curve = in.variants.at(0).runs.at(0).train_curve;
  REQUIRE(curve.size() == 2);
  CHECK(std::isnan(curve[0].moe_load));
  CHECK(curve[1].moe_load == doctest::Approx(2.0));
  SQLite::Database raw(fixture.dir.str("sweep.db"));
  const std::string moe = raw.execAndGet("SELECT moe FROM metrics WHERE step = 2 AND split = 'train'").getString();
  CHECK(nlohmann::json::parse(moe)["aux_loss"].get<double>() == doctest::Approx(0.002));
  // a malformed moe field: not an object is not stored, a non-number load drops the step's loads
  fixture.store.ingest(fixture.id, {R"({"event":"train","step":3,"tokens":300,"loss":2.8,"lr":0.001,"grad_norm":1.0,)"
                                    R"("tokens_per_s":100,"moe":"garbage"})",
                                    R"({"event":"train","step":4,"tokens":400,"loss":2.7,"lr":0.001,"grad_norm":1.0,)"
                                    R"("tokens_per_s":100,"moe":{"load_max":["x",1.5]}})"});
  const auto more = fixture.store.metrics(fixture.id, "train");
  REQUIRE(more.size() == 4);
  CHECK(more[2].moe_load_max.empty());
  CHECK(more[3].moe_load_max.empty());
  CHECK(raw.execAndGet("SELECT moe IS NULL FROM metrics WHERE step = 3 AND split = 'train'").getInt() == 1);
}

TEST_CASE("reference scores: best first, replaced by name, dropped when the sweep file no longer names them") {
  RecordedRun fixture;
  Store& store = fixture.store;
  const std::string sweep = fixture.spec.name;
  fixture.spec.references = {{"gpt2", "a.pt", "", 0}, {"small", "b.pt", "", 2}};
  store.record_sweep(fixture.spec);
  store.record_reference(sweep, {"gpt2", "a.pt", "aa", "/data", 3.5, 1.1, 1000, 124000000, 1024});
  store.record_reference(sweep, {"small", "b.pt", "bb", "/data", 4.0, std::nullopt, 1000, 3000, 64});
  auto refs = store.references(sweep);
  REQUIRE(refs.size() == 2);
  CHECK(refs[0].name == "gpt2");
  CHECK(refs[0].bpb == 1.1);
  CHECK_FALSE(refs[1].bpb.has_value());
  store.record_reference(sweep, {"gpt2", "a.pt", "cc", "/data", 4.5, 1.3, 1000, 124000000, 1024});  // scored again
  refs = store.references(sweep);
  REQUIRE(refs.size() == 2);
  CHECK(refs[0].name == "small");
  CHECK(refs[1].model_sha256 == "cc");
  fixture.spec.references = {{"small", "b.pt", "", 2}};
  store.record_sweep(fixture.spec);
  refs = store.references(sweep);
  REQUIRE(refs.size() == 1);
  CHECK(refs[0].name == "small");
  CHECK(store.references("another sweep").empty());
}
