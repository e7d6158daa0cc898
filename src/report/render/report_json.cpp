#include "report/render/report_json.h"

#include <cmath>

#include "report/render/tables.h"

namespace sweep {

nlohmann::ordered_json json_of(const Summary& s) {
  return {{"mean", number_or_null(s.n > 0 ? s.mean : std::nan(""))},
          {"ci_low", number_or_null(s.ci_low)},
          {"ci_high", number_or_null(s.ci_high)},
          {"seeds", s.n}};
}

nlohmann::ordered_json json_of(const ReferenceScore& r) {
  return {{"name", r.name}, {"model", r.model}, {"test_loss", r.loss},
          {"test_bpb", optional_number(r.bpb)}, {"tokens", r.tokens},
          {"parameters", r.parameters}, {"block_size", r.block_size}};
}

nlohmann::ordered_json design_json(const Analysis& a) {
  nlohmann::ordered_json j{{"min_effect", a.design.min_effect > 0 ? nlohmann::ordered_json(a.design.min_effect) : nlohmann::ordered_json(nullptr)},
          {"min_effect_source", to_string(a.min_effect_source)},
          {"suggested_min_effect", number_or_null(a.suggested_min_effect)},
          {"sequential", a.design.sequential()},
          {"first_seeds", a.design.first},
          {"max_seeds", a.design.max_seeds}};
  if (a.design.better_by > 0) {  // only then: reports without a margin keep their bytes
    j["better_by"] = a.design.better_by;
    j["better_by_alpha"] = a.design.better_by_alpha;
  }
  return j;
}

nlohmann::ordered_json json_of(const NoiseSummary& n) {
  return {{"source", n.source},
          {"runs", n.n},
          {"sigma", number_or_null(n.sigma)},
          {"sigma_init", number_or_null(n.components.sigma_init)},
          {"sigma_data", number_or_null(n.components.sigma_data)},
          {"sigma_interaction", number_or_null(n.components.sigma_resid)},
          {"sigma_repeat", number_or_null(n.components.sigma_repeat)},
          {"seeds_per_variant", n.seeds},
          {"band", number_or_null(n.band)},
          {"detectable_effect", number_or_null(n.detectable)},
          {"test_se", number_or_null(n.test_se)},
          {"test_blocks", n.test_blocks}};
}

nlohmann::ordered_json json_of(const MetricSignal& m) {
  return {{"metric", m.metric.name()},
          {"arms", m.arms},
          {"seeds", m.seeds},
          {"signal", number_or_null(m.signal)},
          {"noise", number_or_null(m.noise)},
          {"snr", number_or_null(m.snr)},
          {"detectable", number_or_null(m.detectable)},
          // null: not compared (no min_effect, or one in nats against bits per byte)
          {"hides_min_effect", m.compared ? nlohmann::ordered_json(m.hides_min_effect) : nlohmann::ordered_json()}};
}

nlohmann::ordered_json json_of(const ReportRun& r) {
  return {{"run_id", r.run_id},
          {"init_seed", r.init_seed},
          {"data_seed", r.data_seed},
          {"repeat", r.repeat},
          {"status", to_string(r.status)},
          {"value", optional_number(r.value)},
          {"starts", r.starts},
          {"code", r.codes}};
}

nlohmann::ordered_json json_of(const VariantStats& v) {
  nlohmann::ordered_json j{{"name", v.name},
          {"baseline", v.is_baseline},
          {"runs", v.runs},
          {"finished", v.finished},
          {"seeds", v.seeds},
          {"diverged", v.diverged},
          {"mean", number_or_null(v.summary.mean)},
          {"sd", number_or_null(v.summary.sd)},
          {"improvement", number_or_null(v.improvement)},
          {"ci_low", number_or_null(v.ci_low)},
          {"ci_high", number_or_null(v.ci_high)},
          {"method", to_string(v.method)},
          {"p", number_or_null(v.p)},
          {"p_holm", number_or_null(v.p_holm)},
          {"correlation", number_or_null(v.correlation)},
          {"probability_of_improvement", number_or_null(v.prob_improvement)},
          {"seeds_needed", v.seeds_needed < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v.seeds_needed)},
          {"seed_se", number_or_null(v.seed_se)},
          {"test_se", number_or_null(v.test_se)},
          {"p_equivalence", number_or_null(v.p_equivalence)},
          {"p_equivalence_holm", number_or_null(v.p_equivalence_holm)},
          {"verdict", verdict_name(v)},
          {"below_min_effect", v.below_min_effect},
          {"looks", v.looks},
          {"stopped", v.stopped},
          {"tokens", number_or_null(v.tokens)},
          {"tokens_per_s", number_or_null(v.tokens_per_s)},
          {"wall_seconds", number_or_null(v.wall_seconds)},
          {"starts", v.starts}};
  if (v.no_op) {  // (only when it is: report.json files written before it read the same)
    j["no_op"] = true;
  }
  return j;
}

nlohmann::ordered_json margin_json(const VariantStats& v) {
  return {{"p_better_by", number_or_null(v.p_better_by)},
          {"p_better_by_holm", number_or_null(v.p_better_by_holm)},
          {"better_by", v.better_by}};
}

nlohmann::ordered_json json_of(const Response& r) {
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const auto& p : r.points) {
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    for (const auto& [seed, value] : p.values) {
      values.push_back({{"init_seed", seed.first}, {"data_seed", seed.second}, {"value", value}});
    }
    points.push_back({{"x", p.x},
                      {"variant", p.variant},
                      {"mean", number_or_null(p.summary.mean)},
                      {"ci_low", number_or_null(p.summary.ci_low)},
                      {"ci_high", number_or_null(p.summary.ci_high)},
                      {"values", values}});
  }
  const OptimumFit& f = r.fit;
  return {{"axis", r.label},
          {"keys", r.keys},
          {"series", r.series},
          {"points", points},
          {"fit",
           {{"fitted", f.fitted},
            {"log_x", f.log_x},
            {"fitted_over", {number_or_null(f.fit_low), number_or_null(f.fit_high)}},
            {"quadratic", {number_or_null(f.curve.a), number_or_null(f.curve.b), number_or_null(f.curve.c)}},
            {"best", number_or_null(f.best)},
            {"inside", f.inside},
            {"ci_low", number_or_null(f.ci_low)},
            {"ci_high", number_or_null(f.ci_high)},
            {"share_inside", number_or_null(f.share_inside)},
            {"seeds", f.seeds},
            {"resamples", f.resamples},
            {"note", f.note}}}};
}

nlohmann::ordered_json json_of(const Additivity& x) {
  return {{"variant", x.variant},
          {"parts", x.parts},
          {"combined", number_or_null(x.combined)},
          {"sum_of_parts", number_or_null(x.sum_of_parts)},
          {"best_part", number_or_null(x.best_part)},
          {"difference", number_or_null(x.difference)},
          {"ci_low", number_or_null(x.ci_low)},
          {"ci_high", number_or_null(x.ci_high)},
          {"method", to_string(x.method)},
          {"verdict", to_string(x.verdict)}};
}

nlohmann::ordered_json json_of(const TokensToTarget& t) {
  return {{"variant", t.variant},
          {"seeds", t.seeds},
          {"reached", t.reached},
          {"saving", number_or_null(t.saving.mean)},
          {"ci_low", number_or_null(t.saving.ci_low)},
          {"ci_high", number_or_null(t.saving.ci_high)},
          {"flops_saving", json_of(t.flops_saving)},
          {"time_saving", json_of(t.time_saving)}};
}

nlohmann::ordered_json json_of(const ComputeMatch& m) {
  return {{"variant", m.variant},
          {"flops_per_token_ratio", number_or_null(m.flops_ratio)},
          {"time_per_token_ratio", number_or_null(m.time_ratio)},
          {"at_equal_tokens", json_of(m.at_tokens)},
          {"at_equal_flops", json_of(m.at_flops)},
          {"at_equal_time", json_of(m.at_time)}};
}

nlohmann::ordered_json json_of(const DeltaCurve& d) {
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const auto& [tokens, s] : d.points) {
    points.push_back({{"tokens", tokens},
                      {"seeds", s.n},
                      {"improvement", number_or_null(s.mean)},
                      {"ci_low", number_or_null(s.ci_low)},
                      {"ci_high", number_or_null(s.ci_high)}});
  }
  return {{"variant", d.variant}, {"points", points}};
}

nlohmann::ordered_json json_of(const RungInfo& r) {
  return {{"name", r.name}, {"params", r.params}, {"tokens", r.tokens}, {"flops", number_or_null(r.flops)}};
}

nlohmann::ordered_json json_of(const Trend& t) {
  return {{"intervention", t.intervention},
          {"variants", t.rung_variants},
          {"pairs", t.pairs},
          {"rungs", t.rungs},
          {"slope_per_decade", number_or_null(t.slope)},
          {"slope_ci_low", number_or_null(t.slope_low)},
          {"slope_ci_high", number_or_null(t.slope_high)},
          {"df", number_or_null(t.df)},
          {"p", number_or_null(t.p)},
          {"p_holm", number_or_null(t.p_holm)},
          {"change", number_or_null(t.change)},
          {"p_holds", number_or_null(t.p_holds)},
          {"p_holds_holm", number_or_null(t.p_holds_holm)},
          {"smallest_rung", {number_or_null(t.low_end), number_or_null(t.low_end_lo), number_or_null(t.low_end_hi)}},
          {"largest_rung", {number_or_null(t.high_end), number_or_null(t.high_end_lo), number_or_null(t.high_end_hi)}},
          {"crossover_flops", number_or_null(t.crossover)},
          {"crossover_ci", {number_or_null(t.crossover_low), number_or_null(t.crossover_high)}},
          {"tau", number_or_null(t.tau)},
          {"at_target", number_or_null(t.at_target)},
          {"target_pi", {number_or_null(t.target_low), number_or_null(t.target_high)}},
          {"verdict", to_string(t.verdict)},
          {"why", t.why}};
}

// In factors (e^ of the line's ln values), the line's p and verdict as a Trend's.
nlohmann::ordered_json json_of(const SpeedupTrend& s) {
  const auto factor = [](double ln) { return number_or_null(std::exp(ln)); };
  nlohmann::ordered_json rungs = nlohmann::ordered_json::array();
  for (size_t k = 0; k < s.at_rung.size(); ++k) {
    rungs.push_back({{"variant", s.rung_variants[k]},
                     {"seeds", s.seeds[k]},
                     {"reached", s.reached[k]},
                     {"speedup", number_or_null(s.at_rung[k])}});
  }
  const Trend& t = s.line;
  return {{"intervention", s.intervention},
          {"rungs", rungs},
          {"per_decade", factor(t.slope)},
          {"per_decade_ci", {factor(t.slope_low), factor(t.slope_high)}},
          {"p", number_or_null(t.p)},
          {"p_holm", number_or_null(t.p_holm)},
          {"at_target", factor(t.at_target)},
          {"target_pi", {factor(t.target_low), factor(t.target_high)}},
          {"verdict", to_string(t.verdict)},
          {"why", t.why}};
}

nlohmann::ordered_json json_of(const BacktestPrediction& p) {
  return {{"intervention", p.intervention},
          {"measured", number_or_null(p.measured)},
          {"seeds", p.seeds},
          {"trend", number_or_null(p.trend)},
          {"pi_low", number_or_null(p.pi_low)},
          {"pi_high", number_or_null(p.pi_high)},
          {"single_scale", number_or_null(p.single)}};
}

nlohmann::ordered_json json_of(const BacktestRow& r) {
  return {{"sweep", r.sweep},
          {"hidden", r.hidden},
          {"rungs_below", r.rungs_below},
          {"compute_ratio", number_or_null(r.compute_ratio)},
          {"sign_trend", number_or_null(r.trend_sign)},
          {"sign_single_scale", number_or_null(r.single_sign)},
          {"accuracy_trend", number_or_null(r.trend_accuracy)},
          {"accuracy_single_scale", number_or_null(r.single_accuracy)},
          {"arm_pairs", r.arm_pairs},
          {"coverage", number_or_null(r.coverage)},
          {"predictions", json_array(r.predictions)}};
}

nlohmann::ordered_json json_of(const BacktestPooled& p) {
  return {{"rows", p.rows},
          {"predictions", p.predictions},
          {"arm_pairs", p.arm_pairs},
          {"sign_trend", number_or_null(p.trend_sign)},
          {"sign_single_scale", number_or_null(p.single_sign)},
          {"accuracy_trend", number_or_null(p.trend_accuracy)},
          {"accuracy_single_scale", number_or_null(p.single_accuracy)},
          {"coverage", number_or_null(p.coverage)},
          {"intervals", p.intervals},
          {"covered", p.covered},
          {"decided", p.decided},
          {"half_width", number_or_null(p.half_width)}};
}

nlohmann::ordered_json json_of(const LadderSummary& l) {
  nlohmann::ordered_json target = nullptr;
  if (l.ladder.target_unit) {
    target = {{"unit", to_string(*l.ladder.target_unit)},
              {"value", l.ladder.target},
              {"flops", number_or_null(l.target_flops)},
              {"factor", number_or_null(l.target_factor)},
              {"beyond", l.ladder.beyond},
              {"far", l.far},
              {"rule", l.target_rule}};
  }
  return {{"rungs", json_array(l.rungs)},
          {"tokens_per_param", l.ladder.tokens_per_param},
          {"target", target},
          {"trends", json_array(l.trends)},
          {"speedups", json_array(l.speedups)},
          {"backtest", {{"rows", json_array(l.backtest.rows)}, {"why", l.backtest.why}}}};
}

nlohmann::ordered_json json_of(const TunedArm& t) {
  nlohmann::ordered_json diverged = nlohmann::ordered_json::array();
  for (const auto& d : t.diverged) {
    diverged.push_back({{"value", d.value}, {"diverged", d.diverged}, {"runs", d.runs}, {"baseline_trains", d.baseline_trains}});
  }
  return {{"arm", t.arm},
          {"series", t.series},
          {"variants", t.variants},
          {"best", number_or_null(t.fit.fitted ? t.fit.best : std::nan(""))},
          {"best_ci", {number_or_null(t.fit.ci_low), number_or_null(t.fit.ci_high)}},
          {"inside", t.fit.inside},
          {"sensitivity_2x", number_or_null(t.sensitivity)},
          {"verdict_at_base", to_string(t.at_base)},
          {"verdict_at_best", to_string(t.at_best)},
          {"outcome", to_string(t.outcome)},
          {"why", t.why},
          {"diverged", diverged}};
}

nlohmann::ordered_json json_of(const TunedSummary& t) {
  nlohmann::ordered_json base_value = nullptr;
  if (!t.base_value.empty()) {
    base_value = nlohmann::ordered_json::parse(t.base_value, nullptr, false);
  }
  return {{"keys", t.keys},
          {"base_value", base_value},
          {"arms", json_array(t.arms)},
          {"at_best", json_array(t.at_best)},
          {"notes", t.notes}};
}

}  // namespace sweep
