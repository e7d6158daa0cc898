// Which metric decides most reliably: each metric's value of a run (val_lastK the mean of its last
// K evaluations), and the signal-to-noise ratio across arms computed by hand.
#include <doctest/doctest.h>

#include <cmath>

#include "report/analysis.h"
#include "report/noise.h"
#include "report/signal.h"
#include "util/error.h"

using namespace sweep;

namespace {

ReportRun run(int64_t seed, double test_loss, std::vector<double> val) {
  ReportRun r;
  r.run_id = "r" + std::to_string(seed);
  r.init_seed = r.data_seed = seed;
  r.status = RunState::done;
  r.test_loss = test_loss;
  r.test_bpb = test_loss / std::log(2.0) / 4;
  for (size_t i = 0; i < val.size(); ++i) {
    r.val_curve.emplace_back(static_cast<int64_t>(1000 * (i + 1)), val[i]);
  }
  r.val_loss = val.empty() ? std::nullopt : std::optional<double>(val.back());
  r.value = r.test_loss;
  return r;
}

}  // namespace

TEST_CASE("metrics: the names a report ranks by, each read back as itself, and a run's value of each") {
  for (const char* ok : {"test_loss", "test_bpb", "val_loss", "val_last2", "val_last3", "val_last100"}) {
    CAPTURE(ok);
    REQUIRE(Metric::parse(ok));
    CHECK(Metric::parse(ok)->name() == ok);
  }
  CHECK(Metric::parse("val_last3") == Metric{Metric::Kind::val_last, 3});
  for (const char* bad : {"", "loss", "val_last", "val_last1", "val_last0", "val_last03", "val_last101", "val_last3x"}) {
    CAPTURE(bad);
    CHECK_FALSE(Metric::parse(bad));
  }
  CHECK_THROWS_WITH_AS(parse_metric("loss"), doctest::Contains("--metric loss: expected test_loss"), Error);
  const ReportRun r = run(1, 3.0, {3.6, 3.4, 3.2, 3.1});
  CHECK(*metric_value(r, *Metric::parse("test_loss")) == 3.0);
  CHECK(*metric_value(r, *Metric::parse("val_loss")) == 3.1);
  CHECK(*metric_value(r, *Metric::parse("val_last3")) == doctest::Approx((3.4 + 3.2 + 3.1) / 3));
  CHECK(*metric_value(r, *Metric::parse("val_last4")) == doctest::Approx((3.6 + 3.4 + 3.2 + 3.1) / 4));
  CHECK_FALSE(metric_value(r, *Metric::parse("val_last5")));  // fewer evaluations than K: no value
}

TEST_CASE("metric signal: the sd of the arms' means over the pooled seed sd, highest first") {
  ReportInput in;
  in.sweep = "s";
  in.baseline = "base";
  in.metric = Metric{Metric::Kind::test_loss};
  in.design.min_effect = 0.001;
  // test_loss: means 3.00 and 2.90, each arm's seeds ±0.01 → signal sd(3.00, 2.90) = 0.0707, noise 0.01
  // the final validation losses: noisier around the same means
  VariantRuns base, x;
  base.name = base.intervention = "base";
  base.runs = {run(1, 3.01, {3.3, 3.05}), run(2, 2.99, {3.3, 2.95})};
  x.name = x.intervention = "x";
  x.runs = {run(1, 2.91, {3.2, 2.97}), run(2, 2.89, {3.2, 2.83})};
  in.variants = {base, x};
  const std::vector<MetricSignal> signals = metric_signals(in);
  REQUIRE(signals.size() == 3);  // test_loss, test_bpb, val_loss; val_last3 needs 3 evaluations
  const MetricSignal& test = signals[0];
  CHECK(test.metric.name() == "test_loss");  // tied with test_bpb (a rescaling): the report's metric first
  CHECK(test.arms == 2);
  CHECK(test.seeds == 2);
  CHECK(test.signal == doctest::Approx(0.1 / std::sqrt(2.0)));
  CHECK(test.noise == doctest::Approx(std::sqrt(0.0002)));  // each arm's sd: 0.01·√2
  CHECK(test.snr == doctest::Approx(test.signal / test.noise));
  const MetricSignal& val = signals.back();
  CHECK(val.metric.name() == "val_loss");  // the noisiest: last
  CHECK(val.snr < test.snr);
  CHECK(val.hides_min_effect);  // paired differences 0.08 and 0.12: 2 seeds detect far more than 0.001
  CHECK_FALSE(test.hides_min_effect);  // differences 0.10 and 0.10: exact
}

TEST_CASE("a run's test blocks in the metric's units: none for the validation metrics, which are not the test set") {
  ReportRun r = run(1, 3.0, {3.6, 3.4, 3.2});
  r.test_blocks = {{100, 290.0}, {100, 310.0}};
  const auto loss = metric_blocks(r, *Metric::parse("test_loss"));
  REQUIRE(loss);
  CHECK(loss->at(1).second == 310.0);
  const auto bpb = metric_blocks(r, *Metric::parse("test_bpb"));
  REQUIRE(bpb);
  CHECK(bpb->at(1).second == doctest::Approx(310.0 * *r.test_bpb / *r.test_loss));
  CHECK_FALSE(metric_blocks(r, *Metric::parse("val_loss")));
  CHECK_FALSE(metric_blocks(r, *Metric::parse("val_last2")));
}
