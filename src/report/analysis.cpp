#include "report/analysis.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "report/additivity.h"
#include "report/curves.h"
#include "report/eliminate/live.h"
#include "report/noise.h"
#include "report/response.h"
#include "report/seeds.h"
#include "report/sequential.h"
#include "report/signal.h"
#include "report/spread.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

Analysis analysis_header(const ReportInput& in) {
  Analysis a;
  a.sweep = in.sweep;
  a.baseline = in.baseline;
  a.metric = in.metric;
  a.alpha = in.alpha;
  a.design = in.design;
  a.min_effect_source = in.min_effect_source;
  a.better_by_option = in.better_by_option;
  a.notes = in.notes;
  a.references = in.references;
  return a;
}

namespace {

double mean_where(const std::vector<ReportRun>& runs, const std::function<std::optional<double>(const ReportRun&)>& f) {
  double sum = 0;
  int n = 0;
  for (const auto& r : runs) {
    if (auto v = f(r); v && std::isfinite(*v)) {
      sum += *v;
      ++n;
    }
  }
  return n > 0 ? sum / n : k_nan;
}

// The improvement's standard error from the finite test set: the paired block differences of the
// seeds both have (the first finished run of each), NaN unless every one has blocks.
double paired_test_se(const ReportInput& in, const std::vector<ReportRun>& base, const std::vector<ReportRun>& mine) {
  std::map<SeedKey, const ReportRun*> first;
  for (const auto& r : base) {
    if (r.value) {
      first.emplace(SeedKey{r.init_seed, r.data_seed}, &r);
    }
  }
  std::vector<LossBlocks> plus, minus;
  std::set<SeedKey> seen;
  for (const auto& r : mine) {
    const SeedKey key{r.init_seed, r.data_seed};
    const auto b = first.find(key);
    if (!r.value || b == first.end() || !seen.insert(key).second) {
      continue;
    }
    const auto pb = metric_blocks(*b->second, in.metric), mb = metric_blocks(r, in.metric);
    if (!pb || !mb) {
      return k_nan;
    }
    plus.push_back(*pb);
    minus.push_back(*mb);
  }
  return plus.empty() ? k_nan : test_set_se(plus, minus);
}

// Seeds pair runs only when the two variants' shared parameters start from the same weights:
// always since numerics 2 (weights by parameter name), before it only for equal parameter sets.
bool pairing_is_real(const VariantRuns& base, const VariantRuns& v) {
  if (base.model == v.model || !v.trainer.empty()) {  // a user's trainer: its seeds are its word
    return true;
  }
  auto oldest = [](const VariantRuns& x) {
    int64_t n = std::numeric_limits<int64_t>::max();
    for (const auto& r : x.runs) {
      if (r.value) {
        n = std::min(n, r.numerics.value_or(1));
      }
    }
    return n;
  };
  return oldest(base) >= 2 && oldest(v) >= 2;
}

// Which code trained the runs: one sentence for the report, a note per variant that mixes versions.
std::string code_sentence(const ReportInput& in, std::vector<std::string>& notes) {
  std::map<std::string, int64_t> sweep_codes;  // version -> runs
  for (const auto& v : in.variants) {
    std::set<std::string> mine;
    for (const auto& r : v.runs) {
      for (const auto& c : r.codes) {
        mine.insert(c);
        sweep_codes[c]++;
      }
    }
    if (mine.size() > 1) {
      notes.push_back(v.name + ": its runs were trained by " + plural(static_cast<int64_t>(mine.size()), "code version") +
                      " (" + join(std::vector<std::string>(mine.begin(), mine.end()), ", ") +
                      ") — results may differ by code, not only by seed");
    }
  }
  if (sweep_codes.empty()) {
    return "code: not recorded (runs ingested from workers that did not say)";
  }
  std::vector<std::string> parts;
  for (const auto& [code, runs] : sweep_codes) {
    parts.push_back(code + (sweep_codes.size() > 1 ? " (" + plural(runs, "run") + ")" : ""));
  }
  return "code: trained by " + join(parts, ", ");
}

const VariantRuns& baseline_of(const ReportInput& in) {
  const auto it = std::find_if(in.variants.begin(), in.variants.end(),
                               [&](const VariantRuns& v) { return v.name == in.baseline; });
  if (it == in.variants.end()) {
    throw Error("sweep " + in.sweep + " has no variant named '" + in.baseline +
                    "' (its baseline) — if an older sweep recorded it, run the same `sweep run FILE` again "
                    "(it trains nothing already finished) to record today's variant names",
                Exit::bad_input);
  }
  return *it;
}

// A variant's runs counted (planned seeds, finished, diverged, starts) and their means, with no
// comparison yet; and a note for runs that diverged or have no result.
VariantStats count_runs(const ReportInput& in, const VariantRuns& v, size_t position, std::vector<std::string>& notes) {
  VariantStats s;
  s.name = v.name;
  s.position = static_cast<int>(position);
  s.is_baseline = v.name == in.baseline;
  s.runs = static_cast<int64_t>(v.runs.size());
  const std::vector<double> values = values_of(seed_values(v.runs));
  s.seeds = static_cast<int64_t>(values.size());
  std::set<SeedKey> planned;
  for (const auto& r : v.runs) {
    planned.insert({r.init_seed, r.data_seed});
  }
  s.seeds_planned = static_cast<int64_t>(planned.size());
  s.finished = std::count_if(v.runs.begin(), v.runs.end(), [](const ReportRun& r) { return r.value.has_value(); });
  s.diverged = std::count_if(v.runs.begin(), v.runs.end(), [](const ReportRun& r) { return r.status == RunState::diverged; });
  s.summary = summarize(values);
  s.tokens = mean_where(v.runs, [&](const ReportRun& r) {  // trained by the run: a branch's prefix was its parent's
    return std::optional<double>(static_cast<double>(std::max<int64_t>(0, r.tokens - v.branch_tokens)));
  });
  s.tokens_per_s = mean_where(v.runs, [](const ReportRun& r) { return r.tokens_per_s; });
  s.wall_seconds = mean_where(v.runs, [](const ReportRun& r) { return r.wall_seconds; });
  for (const auto& r : v.runs) {
    s.starts += r.starts;
  }
  s.improvement = s.ci_low = s.ci_high = s.p = s.p_holm = s.prob_improvement = s.correlation = k_nan;
  s.p_equivalence = s.p_equivalence_holm = s.p_better_by = s.p_better_by_holm = s.seed_se = s.test_se = k_nan;
  if (s.diverged > 0) {
    notes.push_back(v.name + ": " + std::to_string(s.diverged) + " of " + plural(s.runs, "run") + " diverged" +
                    (s.finished > 0 ? "; its statistics use the " + std::to_string(s.finished) + " that finished" : ""));
  }
  const bool eliminated = stop_of(in, v) != nullptr;  // --eliminate stopped it: said apart
  if (const int64_t other = s.runs - s.finished - s.diverged; other > 0 && !eliminated) {
    notes.push_back(v.name + ": " + plural(other, "run") + " without a result yet (pending, running or failed)");
  }
  return s;
}

// The baseline as every comparison reads it: its runs, and its value per seed.
struct Baseline {
  const VariantRuns& runs;
  std::map<SeedKey, double> by_seed;
  std::vector<double> values;
};

// The comparison's tests against the design's margins: equivalence within ±min_effect (TOST) and
// superiority by better_by (one-sided).
void test_margins(const ReportInput& in, const Comparison& c, VariantStats& s) {
  if (in.design.min_effect > 0) {
    s.p_equivalence = tost_p(c, in.design.min_effect);
  }
  if (in.design.better_by > 0) {
    s.p_better_by = margin_p(c, in.design.better_by);
  }
}

// Two seeds or more on both sides: a paired t-test on the seeds both have (Welch's where they
// cannot pair), its equivalence test, the seeds it would need, and under --until-decided the
// verdict look by look.
void compare_seeds(const ReportInput& in, const Baseline& base, const VariantRuns& v,
                   const std::map<SeedKey, double>& mine, VariantStats& s, Analysis& a, std::vector<double>& detectable) {
  const auto [paired_base, paired_mine] = common(base.by_seed, mine);
  s.correlation = pearson(paired_base, paired_mine);
  // Paired on the variant's seeds when the baseline has each of them (under --until-decided the
  // baseline may have more: those are not in this comparison).
  const bool seeds_match = mine.size() >= 2 && paired_base.size() == mine.size();
  const bool paired = seeds_match && pairing_is_real(base.runs, v);
  if (seeds_match && !paired) {
    a.notes.push_back(v.name + ": changes the parameter set and its runs (or the baseline's) were trained before "
                               "numerics 2, when such variants did not start from the baseline's weights, or "
                               "their code is not recorded: compared unpaired (Welch) — `sweep ingest RESULTS` "
                               "reads the runs' events again; runs of numerics 1 are retrained by `sweep run`");
  }
  if (seeds_match && paired_base == paired_mine) {
    s.no_op = true;
    a.notes.push_back(v.name + ": no-op — its runs are the baseline's, seed for seed, to the last digit: a key the "
                               "program ignores, or a change that never acts (its verdict says nothing of the change)");
  }
  const std::vector<double> values = values_of(mine);
  const Comparison c = paired ? compare_paired(paired_base, paired_mine) : compare_welch(base.values, values);
  s.method = paired ? Method::paired : Method::welch;
  s.improvement = c.improvement;
  s.ci_low = c.ci_low;
  s.ci_high = c.ci_high;
  s.p = c.p;
  s.seed_se = c.se;
  s.test_se = paired ? paired_test_se(in, base.runs.runs, v.runs) : k_nan;
  const double sd = paired ? c.se * std::sqrt(static_cast<double>(values.size()))
                           : std::sqrt((std::pow(summarize(base.values).sd, 2) + std::pow(s.summary.sd, 2)) / 2);
  s.seeds_needed = in.power ? seeds_needed(c.improvement, sd, paired, alpha_each(in)) : -1;
  if (!seeds_match) {
    a.notes.push_back(v.name + ": its seeds differ from the baseline's; compared unpaired (Welch)");
  } else if (paired && base.by_seed.size() > mine.size() && !in.design.sequential()) {
    a.notes.push_back(v.name + ": paired on its " + plural(s.seeds, "seed") + "; the baseline's other " +
                      std::to_string(base.by_seed.size() - mine.size()) + " are not in this comparison");
  }
  test_margins(in, c, s);
  if (in.power) {
    detectable.push_back(detectable_effect(s.seeds, sd, paired, alpha_each(in)));
  }
  if (in.design.sequential()) {
    decide_sequentially(in, s, base.by_seed, mine, base.runs.runs, v.runs, paired);
  }
}

// One seed on a side: no t-test of its own. The improvement against σ from the noise source, a
// t-test with σ's degrees of freedom (its seeds − 1) — σ is estimated, not known — judged with
// Holm across the interventions like every other test.
void compare_band(const ReportInput& in, const Baseline& base, const std::vector<double>& values,
                  const NoiseSummary& noise, VariantStats& s) {
  s.method = Method::band;
  s.improvement = summarize(base.values).mean - s.summary.mean;
  const double se = noise.sigma * std::sqrt(1.0 / static_cast<double>(base.values.size()) +
                                            1.0 / static_cast<double>(values.size()));
  const Comparison c = t_estimate(s.improvement, se, static_cast<double>(noise.n - 1));
  s.ci_low = c.ci_low;
  s.ci_high = c.ci_high;
  s.p = c.p;
  s.seed_se = se;
  s.seeds_needed = in.power ? seeds_needed(s.improvement, noise.sigma, false, alpha_each(in)) : -1;
  test_margins(in, c, s);
  s.verdict = std::isfinite(s.p) ? Verdict::undecided : Verdict::unknown;
}

// The variant against the baseline: nothing to compare (no result on a side), the baseline
// itself, a test on seeds, or the noise band. Whether it gave a p-value (Holm's to adjust).
bool compare_to_baseline(const ReportInput& in, const Baseline& base, const VariantRuns& v, VariantStats& s,
                         Analysis& a, std::vector<double>& detectable) {
  if (s.finished == 0 || base.by_seed.empty()) {
    s.method = Method::none;
    s.verdict = s.finished == 0 && s.diverged == s.runs && s.runs > 0 ? Verdict::diverged
                : s.is_baseline || s.finished == 0                    ? Verdict::no_result
                                                                      : Verdict::unknown;
    return false;
  }
  if (s.is_baseline) {
    s.method = Method::baseline;
    s.verdict = Verdict::baseline;
    s.improvement = 0;
    return false;
  }
  const auto mine = seed_values(v.runs);
  const std::vector<double> values = values_of(mine);
  if (base.values.size() >= 2 && mine.size() >= 2) {
    compare_seeds(in, base, v, mine, s, a, detectable);
  } else {
    const auto [paired_base, paired_mine] = common(base.by_seed, mine);
    s.correlation = pearson(paired_base, paired_mine);
    compare_band(in, base, values, a.noise, s);
  }
  s.prob_improvement = probability_of_improvement(base.values, values, s.method == Method::paired);
  return std::isfinite(s.p);
}

// What the report says of branched arms (config/branch.h): where they started and what they trained.
void note_branches(const ReportInput& in, std::vector<std::string>& notes) {
  std::map<std::pair<int64_t, int64_t>, std::vector<std::string>> at;  // (branch step, of steps) -> its arms
  bool on_axes = false;
  for (const VariantRuns& v : in.variants) {
    if (v.branch_step > 0) {
      at[{v.branch_step, v.end_tokens * v.branch_step / v.branch_tokens}].push_back("`" + v.name + "`");
      on_axes = on_axes || !v.axes.empty();
    }
  }
  for (const auto& [step, arms] : at) {
    notes.push_back(join(arms, ", ") + (arms.size() == 1 ? " was" : " were") + " branched from the baseline" +
                    (on_axes ? " at its grid point or rung" : "") + " at step " + std::to_string(step.first) +
                    " of " + std::to_string(step.second) +
                    ": each run started from its seed's baseline checkpoint there and trained the rest (its tokens "
                    "column: those it trained); paired by seed, the shared prefix cancels in each difference "
                    "exactly; its curves start at the branch point, so it is left out of the tokens, FLOPs and "
                    "time to target and of the comparisons at equal compute");
  }
}

// Notes on the runs as a whole: results still to come, repeats averaged, restarts in the wall time.
void note_progress(Analysis& a, int64_t repeated, int64_t restarted) {
  int64_t pending = 0, all_runs = 0;
  for (const auto& v : a.variants) {
    if (v.stopped.empty() || a.design.sequential()) {  // not an arm --eliminate stopped: its results are to come
      pending += v.runs - v.finished - v.diverged;
    }
    all_runs += v.runs;
  }
  if (pending > 0) {
    a.notes.insert(a.notes.begin(), "partial: " + std::to_string(pending) + " of " + plural(all_runs, "run") +
                                        " have no result yet (pending, running or failed) — the verdicts are "
                                        "provisional until the sweep finishes");
  }
  if (repeated > 0) {
    a.notes.push_back("identical-seed repeats are averaged into one value per seed for every test, interval and "
                      "power figure (n counts seeds); their spread is σ_repeat in the noise section");
  }
  if (restarted > 0) {
    a.notes.push_back("wall sums every start of a run (resumes, retries, preemptions): " +
                      plural(restarted, "variant") + " had runs started more than once (see summary.csv, starts)");
  }
}

// Fixed design: Holm across the sweep's tested interventions, for the difference and for
// equivalence alike; the verdict follows the adjusted p-values. (--until-decided decided look by
// look: fixed-design p-values would mislead there.)
void apply_holm(const ReportInput& in, Analysis& a, const std::vector<size_t>& tested) {
  if (in.design.sequential()) {
    return;
  }
  std::vector<double> ps, ps_equivalence;
  for (size_t i : tested) {
    ps.push_back(a.variants[i].p);
    ps_equivalence.push_back(a.variants[i].p_equivalence);
  }
  const std::vector<double> adjusted = holm_adjust(ps), adjusted_equivalence = holm_adjust(ps_equivalence);
  for (size_t k = 0; k < tested.size(); ++k) {
    VariantStats& s = a.variants[tested[k]];
    s.p_holm = adjusted[k];
    s.p_equivalence_holm = in.design.min_effect > 0 ? adjusted_equivalence[k] : k_nan;
    const bool equivalent = s.p_equivalence_holm < in.alpha;  // false when NaN
    s.verdict = s.p_holm < in.alpha ? (s.improvement > 0 ? Verdict::better : Verdict::worse)
                : equivalent        ? Verdict::equivalent
                                    : Verdict::undecided;
    s.below_min_effect = s.p_holm < in.alpha && equivalent;
  }
}

// `better by more than m` (the design's better_by): a one-sided test of improvement > m at
// better_by_alpha, Holm across the tested interventions, claimed only of a variant already
// `better`. Under --until-decided decide_sequentially read it from a look's one-sided repeated
// bound (a fixed-design p-value would not hold after stopping on the verdicts).
void apply_margin(const ReportInput& in, Analysis& a, const std::vector<size_t>& tested) {
  if (!(in.design.better_by > 0)) {
    return;
  }
  std::vector<double> ps;
  for (size_t i : tested) {
    ps.push_back(a.variants[i].p_better_by);
  }
  const std::vector<double> adjusted = holm_adjust(ps);
  for (size_t k = 0; k < tested.size(); ++k) {
    VariantStats& s = a.variants[tested[k]];
    if (in.design.sequential()) {
      s.p_better_by = k_nan;
      s.better_by = s.better_by && s.verdict == Verdict::better;
    } else {
      s.p_better_by_holm = adjusted[k];
      s.better_by = s.verdict == Verdict::better && s.p_better_by_holm < in.design.better_by_alpha;
    }
  }
}

// A variant with a diverged seed is judged by that first: its survivors alone are a biased sample
// (the seeds that trained badly are the ones missing), so it is never shown better, equivalent or
// worse on them.
void judge_diverged(Analysis& a) {
  for (auto& s : a.variants) {
    if (s.diverged > 0 && s.finished > 0 && !s.is_baseline) {
      s.verdict = Verdict::diverged;  // printed "diverged k/n" (verdict_name)
      s.below_min_effect = false;
    }
  }
}

// The effect these seeds detect (the median over the tests), and notes on the smallest effect of
// interest: the one --until-decided designed for, or none declared.
void note_effect_size(const ReportInput& in, Analysis& a, std::vector<double> detectable, bool any_tested) {
  detectable.erase(std::remove_if(detectable.begin(), detectable.end(), [](double x) { return !std::isfinite(x); }),
                   detectable.end());
  a.suggested_min_effect = percentile(detectable, 0.5);
  if (!std::isfinite(a.suggested_min_effect)) {
    a.suggested_min_effect = a.noise.detectable;
  }
  const bool option = in.min_effect_source == MinEffectSource::option;
  if (in.design.sequential() && (option || in.metric != Metric::Kind::test_loss)) {
    a.notes.push_back("--until-decided added seeds by the verdicts on test_loss at the sweep file's min_effect; "
                      "these, on " + in.metric.name() + (option ? " at --min-effect" : "") +
                      ", read the same runs another way: the design's error rates are for its own");
  }
  if (in.design.min_effect <= 0 && in.min_effect_source == MinEffectSource::none && any_tested) {
    a.notes.push_back("no smallest effect of interest declared, so no intervention can be shown equivalent (undecided "
                      "only means not shown to differ)" +
                      (std::isfinite(a.suggested_min_effect)
                           ? ": these seeds detect about " + format_number("%.3g", a.suggested_min_effect) +
                                 " with power 0.8 — declare the effect that matters to you with `min_effect:` in the "
                                 "sweep file or `sweep report --min-effect`, e.g. " + format_number("%.2g", a.suggested_min_effect)
                           : std::string()));
  }
}

void note_own_trainers(const ReportInput& in, Analysis& a) {
  std::set<std::string> trainers;
  for (const auto& v : in.variants) {
    if (!v.trainer.empty()) {
      trainers.insert(v.trainer);
    }
  }
  if (!trainers.empty()) {
    a.notes.push_back("trained by a trainer of your own (" + join(std::vector<std::string>(trainers.begin(), trainers.end()), ", ") +
                      "): sweep did not verify its equivalences — accumulation against a bigger batch, data parallel "
                      "against accumulation, a resumed run against an uninterrupted one, seeds that pair — which it "
                      "proves for its own core only; the verdicts hold if the trainer does what its keys say. Its "
                      "wall time runs from its first event or line read to its last: the program's start-up before "
                      "it (an interpreter, its imports) is not in it");
  }
}

// Best improvement first; variants without one last, in their order.
void rank(Analysis& a) {
  std::stable_sort(a.variants.begin(), a.variants.end(), [](const VariantStats& x, const VariantStats& y) {
    const bool rx = std::isfinite(x.improvement), ry = std::isfinite(y.improvement);
    if (rx != ry) {
      return rx;
    }
    return rx && x.improvement > y.improvement;
  });
}

}  // namespace

Analysis analyze_plain(const ReportInput& in) {
  const VariantRuns& base_runs = baseline_of(in);
  Analysis a = analysis_header(in);
  a.noise = noise_summary(in, base_runs.runs);
  if (in.power) {  // the simulations skip it with the power figures
    a.signals = metric_signals(in);
  }
  const auto base_by_seed = seed_values(base_runs.runs);
  const Baseline base{base_runs, base_by_seed, values_of(base_by_seed)};
  std::vector<double> detectable;  // per tested intervention: the effect its seeds detect
  std::vector<size_t> tested;      // indices into a.variants with a p-value
  int64_t repeated = 0, restarted = 0;
  for (size_t i = 0; i < in.variants.size(); ++i) {
    VariantStats s = count_runs(in, in.variants[i], i, a.notes);
    repeated += s.finished > s.seeds;
    restarted += s.starts > s.runs;
    // an arm --eliminate stopped is judged at its look (apply_eliminations), outside the Holm family
    if (stop_of(in, in.variants[i]) == nullptr && compare_to_baseline(in, base, in.variants[i], s, a, detectable)) {
      tested.push_back(i);
    }
    a.variants.push_back(s);
  }
  apply_eliminations(in, a.variants, a.notes);  // --eliminate: the arms stopped early, judged at their look
  note_branches(in, a.notes);
  note_progress(a, repeated, restarted);
  if (in.power) {  // the simulations skip it with the power figures
    note_unstable_arms(in, a.notes);
  }
  apply_holm(in, a, tested);
  judge_diverged(a);
  apply_margin(in, a, tested);
  note_effect_size(in, a, std::move(detectable), !tested.empty());
  a.additivity = check_additivity(in, base_runs, a.notes);
  note_own_trainers(in, a);
  a.responses = find_responses(in, a.notes);
  a.code = code_sentence(in, a.notes);
  rank(a);
  CurveResults curves = analyze_curves(in, a.variants, a.notes);
  a.deltas = std::move(curves.deltas);
  a.targets = std::move(curves.targets);
  a.matched = std::move(curves.matched);
  return a;
}

}  // namespace sweep
