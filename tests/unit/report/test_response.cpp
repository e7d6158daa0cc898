// The response of a metric along a numeric axis and its best value: the quadratic fit in log(x),
// the CI over seeds, the optimum outside the tried range, too few values; and how a
// report finds its axes (the batch in sequences, the first numeric key, series per intervention).
#include <doctest/doctest.h>

#include <cmath>

#include "report/response.h"

using namespace sweep;

namespace {

// Points at x with values f(x) for seeds 1..seeds, each seed with its own offset and a little noise.
std::vector<ResponsePoint> points(const std::vector<double>& xs, int seeds, double (*f)(double)) {
  std::vector<ResponsePoint> out;
  for (size_t i = 0; i < xs.size(); ++i) {
    ResponsePoint p;
    p.x = xs[i];
    for (int s = 1; s <= seeds; ++s) {
      p.values[{s, s}] = f(xs[i]) + 0.02 * s + 0.01 * std::sin(7.0 * s + 3.0 * static_cast<double>(i));
    }
    out.push_back(p);
  }
  return out;
}

double bowl_at_16(double x) { return 5.0 + 0.1 * std::pow(std::log(x) - std::log(16.0), 2); }
double falling(double x) { return 5.0 - 0.1 * std::log(x); }
// a learning rate's loss: 4× steeper above its best (16) than below, in log x
double steep_above_16(double x) {
  const double t = std::log2(x / 16.0);
  return 5.0 + 0.05 * t * t * (t > 0 ? 4.0 : 1.0);
}

const std::vector<double> k_batches{2, 4, 8, 16, 32, 64, 128};

}  // namespace

TEST_CASE("optimum: a known minimum at 16 is found, with a CI over seeds around it") {
  const OptimumFit f = fit_optimum(points(k_batches, 5, bowl_at_16));
  REQUIRE(f.fitted);
  CHECK(f.log_x);
  CHECK(f.inside);
  CHECK(f.best == doctest::Approx(16.0).epsilon(0.1));
  CHECK(f.ci_low < 16.0);
  CHECK(f.ci_high > 16.0);
  CHECK(f.ci_low > 8.0);
  CHECK(f.ci_high < 32.0);
  CHECK(f.seeds == 5);
  CHECK(f.points == 7);
  CHECK(f.resamples == 2000);
  CHECK(f.share_inside > 0.99);
  CHECK(f.note.empty());
  // reproducible: the same resamples give the same CI
  const OptimumFit again = fit_optimum(points(k_batches, 5, bowl_at_16));
  CHECK(again.ci_low == f.ci_low);
  CHECK(again.ci_high == f.ci_high);
}

TEST_CASE("optimum: a flat response (every value's mean the same) has none") {
  // a key the trainer ignores: each seed's value the same at every x — a quadratic through the
  // means' rounding noise would put a best anywhere inside
  std::vector<ResponsePoint> ps;
  for (const double x : {6.0, 12.0, 24.0}) {
    ResponsePoint p;
    p.x = x;
    p.values[{1, 1}] = 3.002;
    p.values[{2, 2}] = 3.004;
    ps.push_back(p);
  }
  const OptimumFit f = fit_optimum(ps);
  CHECK_FALSE(f.fitted);
  CHECK(f.note.find("flat, no optimum") != std::string::npos);
  ps[1].values[{1, 1}] = 3.0019;  // a real difference at 12: a best again
  CHECK(fit_optimum(ps).fitted);
}

TEST_CASE("optimum: the quadratic through the lowest mean and its neighbours, which far values do not pull") {
  const std::vector<ResponsePoint> ps = points(k_batches, 5, steep_above_16);
  const OptimumFit local = fit_optimum(ps);
  REQUIRE(local.fitted);
  CHECK(local.fit_low == 8.0);  // the lowest mean at 16, and its neighbours
  CHECK(local.fit_high == 32.0);
  // by hand: the quadratic through the 3 means, in log x, and its vertex
  double y[3];
  for (int k = 0; k < 3; ++k) {
    double sum = 0;
    for (const auto& [seed, value] : ps[static_cast<size_t>(2 + k)].values) {
      sum += value;
    }
    y[k] = sum / 5;
  }
  const double h = std::log(2.0), a = (y[0] + y[2] - 2 * y[1]) / (2 * h * h), b = (y[2] - y[0]) / (2 * h);
  CHECK(local.best == doctest::Approx(16.0 * std::exp(-b / (2 * a))).epsilon(1e-9));
  // the steep side pulls a quadratic through every value's minimum well below 16; this one stays near it
  std::vector<double> ts, ys;
  for (const auto& p : ps) {
    for (const auto& [seed, value] : p.values) {
      ts.push_back(std::log(p.x));
      ys.push_back(value);
    }
  }
  const std::optional<Quadratic> through_all = fit_quadratic(ts, ys);
  REQUIRE(through_all);
  CHECK(std::exp(-through_all->b / (2 * through_all->a)) < 12.0);
  CHECK(local.best > 12.0);
  CHECK(local.best < 16.0);
  CHECK(local.ci_low <= local.best);
  CHECK(local.ci_high >= local.best);
  // its interval allows for the curve's asymmetry, which no seed resampling sees: it reaches the
  // true best, 16, and is at least 0.35 of a step (a doubling here) wide on each side
  CHECK(local.ci_high >= 16.0);
  CHECK(std::log2(local.ci_high / local.best) >= 0.35);
  CHECK(std::log2(local.best / local.ci_low) >= 0.35);
  CHECK(local.note.empty());
  // a far value moved does not move it
  std::vector<ResponsePoint> moved = ps;
  for (auto& [seed, value] : moved.back().values) {
    value += 1.0;
  }
  CHECK(fit_optimum(moved).best == local.best);
  // the lowest mean at an end: the 3 values there
  CHECK(local_window({{1, 5.0}, {2, 5.1}, {4, 5.2}, {8, 5.3}}) == std::pair<double, double>{1, 4});
  CHECK(local_window({{1, 5.3}, {2, 5.2}, {4, 5.1}, {8, 5.0}}) == std::pair<double, double>{2, 8});
  CHECK(local_window({{1, 5.3}, {2, 5.0}, {4, 5.1}, {8, 5.2}}) == std::pair<double, double>{1, 4});
  CHECK(local_window({{1, 5.3}, {2, 5.0}, {4, 5.1}}) == std::pair<double, double>{1, 4});
}

TEST_CASE("optimum: a metric still falling at the largest value says the best lies there or beyond") {
  const OptimumFit f = fit_optimum(points(k_batches, 4, falling));
  REQUIRE(f.fitted);
  CHECK_FALSE(f.inside);
  CHECK(f.best == doctest::Approx(128.0));
  CHECK(f.note.find("lowest at the largest value with results: the best value lies there or beyond it") !=
        std::string::npos);
  CHECK(f.share_inside < 0.05);
}

TEST_CASE("optimum: fewer than 3 distinct values give no fit, one seed gives no CI") {
  const OptimumFit two = fit_optimum(points({8, 16}, 3, bowl_at_16));
  CHECK_FALSE(two.fitted);
  CHECK(two.note.find("fewer than 3 distinct values") != std::string::npos);
  const OptimumFit one_seed = fit_optimum(points(k_batches, 1, bowl_at_16));
  REQUIRE(one_seed.fitted);
  CHECK(one_seed.best == doctest::Approx(16.0).epsilon(0.1));
  CHECK(std::isnan(one_seed.ci_low));
  CHECK(one_seed.note.find("one seed") != std::string::npos);
  // values ≤ 0 have no logarithm: fitted against x itself
  const OptimumFit linear = fit_optimum(points({0, 0.01, 0.1}, 3, [](double x) { return (x - 0.05) * (x - 0.05); }));
  REQUIRE(linear.fitted);
  CHECK_FALSE(linear.log_x);
  CHECK(linear.best == doctest::Approx(0.05).epsilon(0.2));
}

namespace {

ReportRun done(int64_t seed, double value) {
  ReportRun r;
  r.run_id = "r" + std::to_string(seed);
  r.status = RunState::done;
  r.init_seed = r.data_seed = seed;
  r.value = value;
  return r;
}

VariantRuns grid_point(const std::string& name, const std::string& intervention, double batch,
                       std::map<std::string, std::string> axes, double value) {
  VariantRuns v;
  v.name = name;
  v.intervention = intervention;
  v.batch_sequences = batch;
  v.axes = std::move(axes);
  for (int64_t s = 1; s <= 3; ++s) {
    v.runs.push_back(done(s, value + 0.01 * static_cast<double>(s)));
  }
  return v;
}

}  // namespace

TEST_CASE("responses: the batch in sequences for batch keys, a series per intervention, numeric keys otherwise") {
  ReportInput in;
  in.metric = Metric{Metric::Kind::test_loss};
  in.baseline = "baseline";
  in.axes = {{AxisKind::grid, {"train.grad_accum"}}};
  for (const auto& [ga, loss] : std::vector<std::pair<int, double>>{{1, 5.0}, {2, 4.9}, {4, 5.1}}) {
    const std::string axis = std::to_string(ga);
    in.variants.push_back(grid_point(ga == 2 ? "baseline" : "grad_accum=" + axis, "baseline", 8.0 * ga,
                                     {{"train.grad_accum", axis}}, loss));
    in.variants.push_back(grid_point(ga == 2 ? "clip" : "clip+grad_accum=" + axis, "clip", 8.0 * ga,
                                     {{"train.grad_accum", axis}}, loss - 0.05));
  }
  std::vector<std::string> notes;
  const std::vector<Response> rs = find_responses(in, notes);
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].series == "baseline");
  CHECK(rs[1].series == "clip");
  CHECK(rs[0].label == "batch size (sequences)");
  REQUIRE(rs[0].points.size() == 3);
  CHECK(rs[0].points[0].x == 8.0);
  CHECK(rs[0].points[2].x == 32.0);
  CHECK(rs[0].points[1].variant == "baseline");
  CHECK(rs[0].points[1].summary.n == 3);
  CHECK(rs[0].log_x);
  CHECK(rs[0].fit.fitted);
  CHECK(notes.empty());

  // A zip that keeps the global batch: its x is its first numeric key; a text axis has no response.
  in.axes = {{AxisKind::zip, {"train.micro_batch", "train.grad_accum"}}, {AxisKind::grid, {"train.schedule"}}};
  in.variants = {
      grid_point("baseline", "baseline", 16, {{"train.micro_batch", "16"}, {"train.grad_accum", "1"}, {"train.schedule", "\"cosine\""}}, 5.0),
      grid_point("micro_batch=8+grad_accum=2", "baseline", 16, {{"train.micro_batch", "8"}, {"train.grad_accum", "2"}, {"train.schedule", "\"cosine\""}}, 5.0),
      grid_point("schedule=constant", "baseline", 16, {{"train.micro_batch", "16"}, {"train.grad_accum", "1"}, {"train.schedule", "\"constant\""}}, 5.1),
  };
  notes.clear();
  const std::vector<Response> zip = find_responses(in, notes);
  REQUIRE(zip.size() == 1);
  CHECK(zip[0].label == "train.micro_batch");
  CHECK(zip[0].series == "baseline+schedule=cosine");
  CHECK_FALSE(zip[0].fit.fitted);  // two values
  REQUIRE(notes.size() >= 2);
  CHECK(notes.back().find("no numeric value") != std::string::npos);
}

TEST_CASE("optimum: a curve far below every measured mean is no optimum, values beyond the range without results are named") {
  // A learning rate blowing up: 7.1, 107, 640 at 1e-3, 3, 10 — a quadratic through them dips to −692.
  const OptimumFit blowup = fit_optimum(points({1e-3, 3, 10}, 3, [](double x) {
    return x < 1 ? 7.14 : x < 5 ? 107.0 : 640.0;
  }));
  CHECK_FALSE(blowup.fitted);
  CHECK(blowup.note.find("lies far below every measured mean") != std::string::npos);
  CHECK(blowup.note.find("not a bowl") != std::string::npos);

  // Still falling at the largest value with results; the two larger values tried diverged.
  std::vector<ResponsePoint> ps = points({1e-3, 2e-3, 4e-3}, 3, [](double x) { return 5.0 - 100 * x; });
  for (const double x : {23.0, 24.0}) {
    ResponsePoint p;
    p.x = x;
    ps.push_back(p);
  }
  const OptimumFit edge = fit_optimum(ps);
  REQUIRE(edge.fitted);
  CHECK_FALSE(edge.inside);
  CHECK(edge.best == doctest::Approx(4e-3));
  CHECK(edge.note.find("the larger values tried (23, 24) have no result") != std::string::npos);
  CHECK(edge.note.find("try values beyond it") == std::string::npos);

  // The lowest measured mean at an end, the fitted minimum just inside: said so.
  const OptimumFit near_end = fit_optimum(points({4, 8, 16, 32}, 4, [](double x) {
    return 5.0 + 0.3 * std::pow(std::log(x / 5.0), 2);  // 5.015 at 4, 5.066 at 8: lowest at 4, minimum at 5
  }));
  REQUIRE(near_end.fitted);
  CHECK(near_end.inside);
  CHECK(near_end.best == doctest::Approx(5.0).epsilon(0.15));
  CHECK(near_end.note.find("the lowest measured mean is at the end of the range (4)") != std::string::npos);
}
