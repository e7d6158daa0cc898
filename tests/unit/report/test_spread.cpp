// An arm whose seeds spread far more than the others': flagged by a one-sided F test against the
// other arms' pooled variance, Bonferroni at 0.01 — checked by hand on the real case that asked
// for it (the speedrun ladder's top-rung baseline), and at most 1% of synthetic studies with
// normal seed noise of one variance flagged.
#include <doctest/doctest.h>

#include <random>

#include "report/spread.h"

using namespace sweep;

namespace {

VariantRuns arm(const std::string& name, const std::vector<double>& values) {
  VariantRuns v;
  v.name = name;
  for (size_t i = 0; i < values.size(); ++i) {
    ReportRun r;
    r.run_id = name + std::to_string(i);
    r.init_seed = r.data_seed = static_cast<int64_t>(i + 1);
    r.status = RunState::done;
    r.test_loss = values[i];
    r.value = values[i];
    v.runs.push_back(r);
  }
  return v;
}

}  // namespace

TEST_CASE("spread: the speedrun ladder's top-rung baseline, two of its six seeds stalled, is flagged and no other arm") {
  ReportInput in;
  in.baseline = "baseline";
  in.metric = Metric{Metric::Kind::test_loss};
  in.variants = {arm("baseline", {5.4884, 5.0390, 5.0710, 5.3253, 5.0961, 5.1120}),
                 arm("muon", {4.7477, 4.7344, 4.7107, 4.7121, 4.7099, 4.7317}),
                 arm("rotary", {4.9168, 4.8420, 4.8250, 4.7928, 4.8277, 4.9503}),
                 arm("relu2", {4.9284, 4.9193, 4.9021, 4.8985, 4.9311, 4.9312})};
  const std::vector<UnstableArm> flagged = unstable_arms(in);
  REQUIRE(flagged.size() == 1);
  const UnstableArm& u = flagged[0];
  CHECK(u.variant == "baseline");
  CHECK(u.arms == 4);
  CHECK(u.sd == doctest::Approx(0.17851).epsilon(1e-3));
  // the others pooled: (5·0.01581² + 5·0.06084² + 5·0.01478²) / 15
  CHECK(u.others_sd == doctest::Approx(std::sqrt((0.015809 * 0.015809 + 0.060840 * 0.060840 + 0.014783 * 0.014783) / 3)).epsilon(2e-3));
  CHECK(u.p < 1e-4);
  CHECK(u.farthest == SeedKey{1, 1});
  CHECK(u.median == doctest::Approx((5.0961 + 5.1120) / 2));
  std::vector<std::string> notes;
  note_unstable_arms(in, notes);
  REQUIRE(notes.size() == 1);
  CAPTURE(notes[0]);
  CHECK(notes[0].find("baseline: its 6 seeds spread σ 0.1784, 4.79× the other arms' pooled σ 0.0373") == 0);
  CHECK(notes[0].find("seed 1 lies farthest from its median (5.4884 against 5.1040)") != std::string::npos);
  CHECK(notes[0].find("every improvement against it carries that instability") != std::string::npos);
}

TEST_CASE("spread: too few seeds or degrees of freedom test nothing") {
  ReportInput in;
  in.baseline = "b";
  in.variants = {arm("b", {1.0, 1.5}), arm("v", {1.0, 1.01, 1.02})};  // v's others: 1 degree of freedom
  CHECK(unstable_arms(in).empty());
  in.variants = {arm("b", {1.0, 9.0}), arm("v", {1.0, 1.01}), arm("w", {1.0, 1.01}), arm("x", {1.0, 1.01}),
                 arm("y", {1.0, 1.01})};  // b is wild, but 2 seeds are no spread to test
  CHECK(unstable_arms(in).empty());
}

TEST_CASE("spread: normal seed noise of one variance flags an arm in at most 1% of studies") {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.01);
  for (const int seeds : {3, 6}) {
    int flagged = 0;
    const int studies = 4000;
    for (int s = 0; s < studies; ++s) {
      ReportInput in;
      in.baseline = "a0";
      for (int k = 0; k < 5; ++k) {
        std::vector<double> v;
        for (int j = 0; j < seeds; ++j) {
          v.push_back(3.0 - 0.01 * k + noise(rng));
        }
        in.variants.push_back(arm("a" + std::to_string(k), v));
      }
      flagged += !unstable_arms(in).empty();
    }
    CAPTURE(seeds);
    CAPTURE(flagged);
    CHECK(static_cast<double>(flagged) / studies <= 0.01 + 3 * std::sqrt(0.01 * 0.99 / studies));
    CHECK(flagged > 0);  // the test is not blind: about alpha of them
  }
}
