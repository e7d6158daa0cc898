#include <SQLiteCpp/SQLiteCpp.h>
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "helpers.h"
#include "serve/downsample.h"
#include "serve/server.h"
#include "serve/views.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"

using namespace sweep;

TEST_CASE("minmax_keep: every bucket keeps its lowest and highest point, in x order, and both ends") {
  std::vector<double> x, y;
  for (int i = 0; i < 2000; ++i) {
    x.push_back(i * 10.0);
    y.push_back(std::sin(i * 0.05) + (i == 1234 ? 5.0 : 0) - (i == 777 ? 4.0 : 0));  // a spike and a dip
  }
  y[500] = std::nan("");
  const size_t buckets = 50;
  const auto keep = minmax_keep(x, y, buckets);
  CHECK(keep.size() <= 2 * buckets + 2);
  CHECK(keep.front() == 0);
  CHECK(keep.back() == x.size() - 1);
  CHECK(std::is_sorted(keep.begin(), keep.end()));
  CHECK(std::find(keep.begin(), keep.end(), 1234) != keep.end());
  CHECK(std::find(keep.begin(), keep.end(), 777) != keep.end());
  CHECK(std::find(keep.begin(), keep.end(), 500) == keep.end());
  // Against a plain recount: each bucket's extremes (inner points, the span cut in 50) are kept.
  const double span = x.back() - x.front();
  for (size_t b = 0; b < buckets; ++b) {
    double lo = INFINITY, hi = -INFINITY;
    size_t at_lo = 0, at_hi = 0;
    for (size_t i = 1; i + 1 < x.size(); ++i) {
      const size_t bucket = std::min(buckets - 1, static_cast<size_t>((x[i] - x[0]) / span * buckets));
      if (bucket == b && std::isfinite(y[i])) {
        if (y[i] < lo) {
          lo = y[i], at_lo = i;
        }
        if (y[i] > hi) {
          hi = y[i], at_hi = i;
        }
      }
    }
    CHECK(std::find(keep.begin(), keep.end(), at_lo) != keep.end());
    CHECK(std::find(keep.begin(), keep.end(), at_hi) != keep.end());
  }
}

TEST_CASE("minmax_keep: a curve no longer than the buckets allow is kept whole, and several series keep each one's extremes") {
  const std::vector<double> x{0, 1, 2, 3, 4}, y{5, 4, 3, 2, 1};
  CHECK(minmax_keep(x, y, 10).size() == 5);
  std::vector<double> xs, a, b;
  for (int i = 0; i < 100; ++i) {
    xs.push_back(i);
    a.push_back(i == 40 ? 9 : 0);
    b.push_back(i == 41 ? -9 : 0);
  }
  const auto keep = minmax_keep_all(xs, {&a, &b}, 3);
  CHECK(std::find(keep.begin(), keep.end(), 40) != keep.end());
  CHECK(std::find(keep.begin(), keep.end(), 41) != keep.end());
}

TEST_CASE("minmax_keep at the edges: no points, one, the same x throughout, no finite y, no buckets") {
  CHECK(minmax_keep({}, {}, 10).empty());
  CHECK(minmax_keep({5}, {1}, 10) == std::vector<size_t>{0});
  std::vector<double> x(100, 7.0), y, nan(100, std::nan(""));
  for (int i = 0; i < 100; ++i) {
    y.push_back(i == 60 ? -3 : i == 30 ? 9 : 1);
  }
  CHECK(minmax_keep(x, y, 10) == std::vector<size_t>{0, 30, 60, 99});  // one span: its extremes and the ends
  CHECK(minmax_keep(x, nan, 10) == std::vector<size_t>{0, 99});      // nothing to keep but the ends
  CHECK(minmax_keep(x, y, 0).size() == 100);                           // no buckets: every point
  CHECK(minmax_keep_all(x, {}, 10).empty());
}

TEST_CASE("shared_buckets: many curves drawn together share 200,000 points, 25 buckets each at least") {
  CHECK(shared_buckets(1000, 4) == 1000);     // a few seeds: the chart's width
  CHECK(shared_buckets(1000, 1000) == 100);   // 1,000 runs: 100 buckets (200 points) each
  CHECK(shared_buckets(1000, 100000) == 25);  // never fewer than 25
  CHECK(shared_buckets(10, 100000) == 10);    // nor more than the chart asked for
  CHECK(shared_buckets(1000, 0) == 1000);
}

TEST_CASE("loopback_host: only this machine's addresses") {
  CHECK(loopback_host("127.0.0.1"));
  CHECK(loopback_host("127.1.2.3"));
  CHECK(loopback_host("localhost"));
  CHECK(loopback_host("::1"));
  CHECK_FALSE(loopback_host("0.0.0.0"));
  CHECK_FALSE(loopback_host("192.168.1.4"));
  CHECK_FALSE(loopback_host("::"));
}

namespace {

// A sweep of two variants × two seeds in a real database, each run's training losses given.
struct ServedSweep {
  test::TempDir dir;
  SweepSpec spec;
  ServedSweep() {
    spec.name = "served";
    spec.baseline = "base";
    spec.file = "served.yaml";
    spec.text = "sweep: served";
    for (const std::string variant : {"base", "lower"}) {
      spec.variants.emplace_back().name = variant;
      for (int64_t seed : {1, 2}) {
        PlannedRun r;
        r.variant = variant;
        r.config = test::tiny_config();
        r.config.seeds.init = seed;
        r.config.seeds.data = seed;
        r.config.train.lr = variant == "base" ? 1e-3 : 2e-3;
        r.run_id = run_id_of(r.config, 0);
        spec.runs.push_back(r);
      }
    }
    Store store(dir.str("sweep.db"));
    store.record_sweep(spec);
  }
  // Steps 1..n of run k: loss = 4 − step/100 − (lower ? 0.1 : 0) + seed/1000.
  void train(size_t k, int from, int to, bool end) {
    Store store(dir.str("sweep.db"));
    const PlannedRun& r = spec.runs[k];
    std::vector<std::string> lines;
    if (from == 1) {
      store.mark_launched(r.run_id, 12345, true, "cpu:0");  // as the scheduler does before its worker starts
      lines.push_back(R"({"event":"start","step":0,"total_steps":100,"code":"abc","numerics":2,"time":100})");
    }
    for (int step = from; step <= to; ++step) {
      lines.push_back(R"({"event":"train","step":)" + std::to_string(step) + R"(,"tokens":)" + std::to_string(step * 64) +
                      R"(,"loss":)" + std::to_string(loss(k, step)) + R"(,"lr":0.001,"grad_norm":1.5,"tokens_per_s":1000,"time":)" +
                      std::to_string(100 + step) + "}");
      if (step % 10 == 0) {
        lines.push_back(R"({"event":"eval","split":"val","step":)" + std::to_string(step) + R"(,"tokens":)" +
                        std::to_string(step * 64) + R"(,"loss":)" + std::to_string(loss(k, step) + 0.05) + "}");
      }
    }
    if (end) {
      lines.push_back(R"({"event":"end","status":"done","step":)" + std::to_string(to) + R"(,"test_loss":)" +
                      std::to_string(loss(k, to)) + "}");
    }
    store.ingest(r.run_id, lines);
  }
  double loss(size_t k, int step) const {
    return 4 - step / 100.0 - (spec.runs[k].variant == "lower" ? 0.1 : 0) + static_cast<double>(spec.runs[k].config.seeds.init) / 1000;
  }
};

}  // namespace

TEST_CASE("Views: the sweeps with their states, the ranked table, curves as the mean of the seeds with their band") {
  ServedSweep s;
  for (size_t k = 0; k < s.spec.runs.size(); ++k) {
    s.train(k, 1, 100, true);
  }
  Views views(s.dir.str(""));
  const auto sweeps = views.sweeps()["sweeps"];
  REQUIRE(sweeps.size() == 1);
  CHECK(sweeps[0]["name"] == "served");
  CHECK(sweeps[0]["states"]["done"] == 4);
  REQUIRE(sweeps[0]["codes"].size() == 1);
  CHECK(sweeps[0]["codes"][0] == "abc numerics 2");

  const auto& sweep = *views.sweep("served");
  CHECK(sweep["table"]["rows"].size() == 2);
  CHECK(sweep["table"]["rows"][0]["variant"] == "lower");  // ranked: the lower loss first
  CHECK(sweep["runs"].size() == 4);
  CHECK(sweep["report"].get<std::string>().find("lower") != std::string::npos);

  const auto curves = views.curves("served", "train_loss", 1000, true, 0);
  REQUIRE(curves["variants"].size() == 2);
  const auto& base = curves["variants"][0];
  CHECK(base["name"] == "base");
  REQUIRE(base["x"].size() == 100);  // 100 points, 1000 buckets: none thinned
  for (size_t i = 0; i < 100; ++i) {
    const int step = static_cast<int>(i) + 1;
    CHECK(base["x"][i].get<double>() == step * 64);
    CHECK(base["mean"][i].get<double>() == doctest::Approx((s.loss(0, step) + s.loss(1, step)) / 2));
    CHECK(base["min"][i].get<double>() == doctest::Approx(s.loss(0, step)));
    CHECK(base["max"][i].get<double>() == doctest::Approx(s.loss(1, step)));
    CHECK(base["seeds"][i].get<double>() == 2);
  }
  CHECK(base["runs"].size() == 2);
  CHECK(curves["seed_buckets"] == 1000);
  CHECK(views.curves("served", "val_loss", 1000, false, 0)["variants"][0]["x"].size() == 10);
  CHECK(views.curves("served", "lr", 1000, false, 0)["variants"][0]["mean"][0].get<double>() == doctest::Approx(0.001));
  // thinned to 10 buckets: at most 22 points, the ends kept
  const auto thin = views.curves("served", "train_loss", 10, false, 0)["variants"][0];
  CHECK(thin["x"].size() <= 22);
  CHECK(thin["x"][0].get<double>() == 64);
  CHECK(thin["x"].back().get<double>() == 6400);
  CHECK(thin["points"] == 100);
  // smoothing keeps the first point and pulls the rest toward the past
  const auto smooth = views.curves("served", "train_loss", 1000, false, 0.9)["variants"][0];
  CHECK(smooth["mean"][0].get<double>() == doctest::Approx(base["mean"][0].get<double>()));
  CHECK(smooth["mean"][99].get<double>() > base["mean"][99].get<double>());

  const auto run = views.run(s.spec.runs[0].run_id);
  CHECK(run["status"] == "done");
  CHECK(run["segments"].size() == 1);
  CHECK(run["config"].get<std::string>().find("n_layer") != std::string::npos);
}

TEST_CASE("Views: the pool over every sweep — one sweep is one setting, and its interventions are said, not pooled") {
  ServedSweep s;
  for (size_t k = 0; k < s.spec.runs.size(); ++k) {
    s.train(k, 1, 100, true);
  }
  Views views(s.dir.str(""));
  const auto pool = views.pool();
  CHECK(pool["metric"] == "test_loss");
  CHECK(pool["settings"] == nlohmann::json::array({"served"}));
  CHECK(pool["pooled"].empty());
  REQUIRE(pool["notes"].size() == 1);
  CHECK(pool["notes"][0] == "lower: measured in one setting (served) — not pooled");
  CHECK(pool["version"].is_number_integer());
}

TEST_CASE("Views: a reader sees what the writer commits after it opened, and never writes") {
  ServedSweep s;
  s.train(0, 1, 20, false);
  const std::string db = read_file(s.dir.str("sweep.db"));  // the writer has closed: all of it is in the file
  Views views(s.dir.str(""));
  const auto first = views.version()["version"];
  CHECK(views.curves("served", "train_loss", 1000, false, 0)["variants"][0]["x"].size() == 20);
  CHECK(views.sweeps()["sweeps"][0]["states"]["running"] == 1);
  views.sweep("served");
  views.run(s.spec.runs[0].run_id);
  CHECK(read_file(s.dir.str("sweep.db")) == db);  // the reader wrote nothing
  s.train(0, 21, 40, false);  // another connection writes while the reader is open
  CHECK(views.version()["version"] != first);
  CHECK(views.curves("served", "train_loss", 1000, false, 0)["variants"][0]["x"].size() == 40);
}

TEST_CASE("Views: a database replaced under it (another file moved into place) is opened again") {
  ServedSweep s;
  s.train(0, 1, 20, false);
  Views views(s.dir.str(""));
  const auto first = views.version()["version"];
  CHECK_THROWS_AS(views.sweep("other"), NotFound);
  // another results folder's database, with a sweep of its own, moved over this one
  ServedSweep other;
  other.spec.name = "other";
  {
    Store store(other.dir.str("sweep.db"));
    store.record_sweep(other.spec);
  }
  fs::rename(other.dir.str("sweep.db"), s.dir.str("sweep.db"));
  CHECK(views.version()["version"] != first);  // a page polling it fetches again
  CHECK(views.sweep("other")->at("name") == "other");
  const auto names = views.sweeps()["sweeps"];
  CHECK(std::any_of(names.begin(), names.end(), [](const nlohmann::json& x) { return x["name"] == "other"; }));
  // replaced again while a write-ahead log lies beside it (the replaced one's): refused, never read as one
  ServedSweep third;
  write_file_atomic(s.dir.str("sweep.db-wal"), std::string(4096, 'w'));
  fs::rename(third.dir.str("sweep.db"), s.dir.str("sweep.db"));
  CHECK_THROWS_WITH(views.version(), doctest::Contains("was replaced while the write-ahead log"));
  fs::remove(s.dir.str("sweep.db-wal"));
  CHECK(views.sweep("served")->at("name") == "served");
}

TEST_CASE("Views: a finished run is read once and kept, and read again when it is run again") {
  ServedSweep s;
  s.train(0, 1, 40, true);
  s.train(1, 1, 10, false);
  Views views(s.dir.str(""));
  const auto points = [&] { return views.curves("served", "train_loss", 1000, true, 0)["variants"][0]["runs"][0]["x"].size(); };
  CHECK(points() == 40);
  {  // behind the views' back, the finished run's points go (its record stays as it was)
    SQLite::Database raw(s.dir.str("sweep.db"), SQLite::OPEN_READWRITE);
    raw.exec("DELETE FROM metrics WHERE run_id = '" + s.spec.runs[0].run_id + "'");
  }
  s.train(1, 11, 20, false);  // the database changes: the running run is read again, the finished one kept
  CHECK(views.curves("served", "train_loss", 1000, true, 0)["variants"][0]["runs"][1]["x"].size() == 20);
  CHECK(points() == 40);
  CHECK((*views.sweep("served"))["runs"].size() == 4);
  s.train(0, 1, 15, true);  // run again: another segment, another wall time — read again, as it now is
  CHECK(points() == 15);
}

TEST_CASE("Views: warm reads the newest sweep ahead of its first request, and an empty database is no error") {
  {
    test::TempDir empty;
    Store(empty.str("sweep.db")).sweeps();  // a database with no sweep
    Views views(empty.str(""));
    views.warm();
    CHECK(views.sweeps()["sweeps"].empty());
  }
  ServedSweep s;
  for (size_t k = 0; k < s.spec.runs.size(); ++k) {
    s.train(k, 1, 30, true);
  }
  Views views(s.dir.str(""));
  views.warm();
  {  // the points go behind the views' back: what is served was read by warm()
    SQLite::Database raw(s.dir.str("sweep.db"), SQLite::OPEN_READWRITE);
    raw.exec("DELETE FROM metrics");
  }
  const auto curves = views.curves("served", "train_loss", 1000, true, 0);
  CHECK(curves["variants"][0]["runs"].size() == 2);
  CHECK(curves["variants"][0]["x"].size() == 30);
  CHECK((*views.sweep("served"))["table"]["rows"].size() == 2);
}

TEST_CASE("Views: unknown sweeps and runs are not found, an unknown curve is a bad request") {
  ServedSweep s;
  Views views(s.dir.str(""));
  CHECK_THROWS_AS(views.sweep("nope"), NotFound);
  CHECK_THROWS_AS(views.curves("nope", "val_loss", 100, false, 0), NotFound);
  CHECK_THROWS_AS(views.curves("served", "loss; DROP TABLE runs", 100, false, 0), BadRequest);
  CHECK_THROWS_AS(views.run("0123456789ab"), NotFound);
  CHECK_THROWS_AS(Views(s.dir.str("missing")), Error);
}
