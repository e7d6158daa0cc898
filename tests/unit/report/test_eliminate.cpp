// --eliminate's rule (report/eliminate/rule.h), its calibration and its replay of a report.
#include <doctest/doctest.h>

#include <cmath>

#include "report/calibration/eliminate_calibration.h"
#include "report/eliminate/replay.h"
#include "report/eliminate/rule.h"

using namespace sweep;

namespace {

std::optional<LookDelta> look(double fraction, int64_t seeds, double mean, double se) {
  return LookDelta{fraction, seeds, mean, se};
}

EliminationRule rule_at(double delta) {
  EliminationRule r;
  r.delta = delta;
  return r;
}

}  // namespace

TEST_CASE("eliminate: the bound by hand — pooled seed noise, Bonferroni over arms and looks, the deficit's threshold") {
  // 2 arms, 3 looks: one-sided level 0.05 / 6; 4 seeds each, pooled sd² (3·0.02² + 3·0.01²) / 6 on 6 df;
  // t = 3.287455157088189 (scipy). Arm A: its own sd 0.02 is the larger: U = −0.10 + t·0.01 = −0.06713,
  // below −δ / 0.2 = −0.05 and not rising: stopped at 30%. Arm B: its own sd 0.01, the pooled 0.0158 the
  // larger: U = −0.06 + t·0.0158/2 = −0.03401, above −0.05: not stopped (nor at the later looks).
  std::vector<ArmLooks> arms(2);
  arms[0].at = {look(0.3, 4, -0.10, 0.01), look(0.5, 4, -0.12, 0.01), look(0.75, 4, -0.12, 0.01)};
  arms[0].before = {look(0.25, 4, -0.09, 0.01), look(0.45, 4, -0.11, 0.01), look(0.70, 4, -0.12, 0.01)};
  arms[1].at = {look(0.3, 4, -0.06, 0.005), look(0.5, 4, -0.01, 0.005), look(0.75, 4, 0.0, 0.005)};
  arms[1].before = {look(0.25, 4, -0.05, 0.005), look(0.45, 4, -0.02, 0.005), look(0.70, 4, 0.0, 0.005)};
  const auto out = eliminate_study(arms, rule_at(0.01));
  REQUIRE(out.size() == 2);
  CHECK(out[0].stopped);
  CHECK(out[0].look == 0);
  CHECK(out[0].fraction == 0.3);
  CHECK(out[0].upper == doctest::Approx(-0.0671254484291181).epsilon(1e-9));
  CHECK(out[0].threshold == doctest::Approx(-0.05));
  CHECK_FALSE(out[1].stopped);

  // the same arm A on its way back (Δ 0.05 before the look lower than at it): left to finish
  arms[0].before[0] = look(0.25, 4, -0.14, 0.01);
  arms[0].before[1] = look(0.45, 4, -0.13, 0.01);
  arms[0].before[2] = look(0.70, 4, -0.13, 0.01);
  CHECK_FALSE(eliminate_study(arms, rule_at(0.01))[0].stopped);
  // never for looking better
  arms[0].at = {look(0.3, 4, 0.10, 0.01), look(0.5, 4, 0.12, 0.01), look(0.75, 4, 0.12, 0.01)};
  CHECK_FALSE(eliminate_study(arms, rule_at(0.01))[0].stopped);
}

TEST_CASE("eliminate: a curve read at a fraction of training — linear between points, none before the first") {
  std::vector<std::pair<int64_t, Summary>> curve{{100, {3, -0.02, 0.01, 0, 0}}, {200, {3, -0.04, 0.02, 0, 0}},
                                                 {400, {3, -0.08, 0.02, 0, 0}}};
  const auto half = delta_at(curve, 0.5, 400);  // 200 tokens: the point itself
  REQUIRE(half);
  CHECK(half->mean == doctest::Approx(-0.04));
  CHECK(half->se == doctest::Approx(0.02 / std::sqrt(3.0)));
  const auto q = delta_at(curve, 0.375, 400);  // 150 tokens: halfway between the first two
  REQUIRE(q);
  CHECK(q->mean == doctest::Approx(-0.03));
  CHECK(q->se == doctest::Approx(0.015 / std::sqrt(3.0)));
  CHECK_FALSE(delta_at(curve, 0.2, 400));  // 80 tokens: before the first evaluation
  // a live arm's curve, its end 1000 tokens away: 0.3 of it is 300 tokens, between its last two points
  const auto live = delta_at(curve, 0.3, 1000);
  REQUIRE(live);
  CHECK(live->mean == doctest::Approx(-0.06));
  CHECK_FALSE(delta_at(curve, 0.5, 1000));  // 500 tokens: past its last point, not yet trained
  curve[1].second.n = 1;
  CHECK_FALSE(delta_at(curve, 0.5, 400));  // one seed: no standard error
}

TEST_CASE("eliminate: a rule that cannot be used says why") {
  EliminationRule r = rule_at(0.01);
  CHECK(rule_problem(r).empty());
  r.looks = {0.5, 0.3, 0.75};
  CHECK(rule_problem(r).find("ascending") != std::string::npos);
  r = rule_at(0.01);
  r.kept = {0.2, 0.2};
  CHECK(rule_problem(r).find("one kept share per look") != std::string::npos);
  r = rule_at(0);
  CHECK(rule_problem(r).find("min_effect") != std::string::npos);
  r = rule_at(0.01);
  r.span = 0.3;
  CHECK(rule_problem(r).find("span") != std::string::npos);
}

TEST_CASE("eliminate: calibration smoke test — false elimination at most 0.05 per study, worse arms stopped") {
  EliminationCalibrationSetup s;
  s.replicates = 300;
  s.noises = {1};
  const auto rows = calibrate_elimination(s);
  REQUIRE(rows.size() == 4);  // mixed, mixed with noisier worse arms, all at −δ, all crossing winners
  for (const auto& r : rows) {
    CAPTURE(r.scenario);
    CHECK(r.false_elimination <= 0.05);
  }
  CHECK(rows[0].worse_stopped > 0.2);
  CHECK(rows[0].saved_total > 0);
}

TEST_CASE("eliminate: a report replayed — its rung's arms a study, the deviation from the report's interval") {
  // a ladder's rung: two arms over 4 seeds; the report keeps each point's 95% t interval
  const double t3 = 3.182446305284263;  // t_{0.975, 3}
  const auto point = [&](int64_t tokens, double mean, double sd) {
    const double half = t3 * sd / 2;
    return nlohmann::json{{"tokens", tokens}, {"seeds", 4}, {"improvement", mean}, {"ci_low", mean - half},
                          {"ci_high", mean + half}};
  };
  nlohmann::json report{{"sweep", "lad"}, {"design", {{"min_effect", 0.01}}}, {"variants", nlohmann::json::array()},
                        {"delta_curves", nlohmann::json::array()}};
  for (const auto& [name, verdict] : {std::pair{"base+s", ""}, {"bad+s", "worse"}, {"fine+s", "undecided"}}) {
    report["variants"].push_back({{"name", name}, {"rung", "s"}, {"baseline", std::string(name) == "base+s"},
                                  {"tokens", 1000}, {"finished", 4}, {"improvement", -0.1}, {"ci_low", -0.12},
                                  {"ci_high", -0.08}, {"verdict", verdict}});
  }
  nlohmann::json bad = nlohmann::json::array(), fine = nlohmann::json::array();
  for (int k = 1; k <= 20; ++k) {
    bad.push_back(point(50 * k, -0.10, 0.02));
    fine.push_back(point(50 * k, 0.0, 0.01));
  }
  report["delta_curves"].push_back({{"variant", "bad+s"}, {"points", bad}});
  report["delta_curves"].push_back({{"variant", "fine+s"}, {"points", fine}});
  std::vector<ReplayStudy> studies = replay_studies(report, "lad/report.json");
  REQUIRE(studies.size() == 1);
  CHECK(studies[0].name == "lad/s");
  CHECK(studies[0].tokens == 12000);
  REQUIRE(studies[0].arms.size() == 2);
  CHECK(studies[0].arms[0].curve[0].second.sd == doctest::Approx(0.02).epsilon(1e-9));  // from the interval
  replay(studies, EliminationRule{});
  CHECK(studies[0].arms[0].elimination.stopped);
  CHECK(studies[0].arms[0].elimination.fraction == 0.3);
  CHECK_FALSE(studies[0].arms[1].elimination.stopped);
  const nlohmann::ordered_json j = replay_json(studies, EliminationRule{});
  CHECK(j["summary"]["arms"] == 2);
  CHECK(j["summary"]["stopped"] == 1);
  CHECK(j["studies"][0]["arms"][0]["at"] == 0.3);
  CHECK(j["studies"][0]["arms"][1]["at"].is_null());
  CHECK(j["studies"][0]["arms"][0]["tokens_saved"] == doctest::Approx(2800));
  const std::string text = replay_text(studies, EliminationRule{});
  CHECK(text.find("1 of 2 arms stopped; 0 of them not \"worse\" in the full design, 0 with a final improvement") !=
        std::string::npos);
  CHECK(text.find("Tokens saved: 70.0% of the arms that ended worse, 23.3% of every run's.") != std::string::npos);
  // without a δ: refused by name
  report["design"]["min_effect"] = nullptr;
  std::vector<ReplayStudy> no_delta = replay_studies(report, "lad/report.json");
  CHECK_THROWS_WITH(replay(no_delta, EliminationRule{}),
                    doctest::Contains("lad/s: its design has no positive min_effect"));
}
