#include "report/analysis.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "report/curves.h"
#include "report/response.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

std::vector<double> values_of(const std::map<SeedKey, double>& by_seed) {
  std::vector<double> out;
  for (const auto& [key, v] : by_seed) {
    out.push_back(v);
  }
  return out;
}

bool same_seeds(const std::map<SeedKey, double>& a, const std::map<SeedKey, double>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](const auto& x, const auto& y) { return x.first == y.first; });
}

// The values of `a` and `b` at the seeds both have, in one order.
std::pair<std::vector<double>, std::vector<double>> common(const std::map<SeedKey, double>& a,
                                                           const std::map<SeedKey, double>& b) {
  std::pair<std::vector<double>, std::vector<double>> out;
  for (const auto& [key, v] : a) {
    if (const auto it = b.find(key); it != b.end()) {
      out.first.push_back(v);
      out.second.push_back(it->second);
    }
  }
  return out;
}

// The per-intervention alpha a power figure is computed at: alpha split across the interventions
// (Bonferroni, a bound on Holm's first step).
double alpha_each(const ReportInput& in) {
  return in.alpha / static_cast<double>(std::max<size_t>(1, in.variants.size() - 1));
}


// Half-width multipliers of a look's repeated confidence intervals, the same for every
// intervention with the same looks: computed once per process.
const std::vector<double>& boundaries(const std::vector<int64_t>& looks, int64_t n_max, double alpha, Spending spending,
                                      bool two_sided) {
  static std::map<std::tuple<std::vector<int64_t>, int64_t, double, Spending, bool>, std::vector<double>> cache;
  const auto key = std::make_tuple(looks, n_max, alpha, spending, two_sided);
  auto it = cache.find(key);
  if (it == cache.end()) {
    it = cache.emplace(key, t_boundaries(looks, n_max, alpha, spending, two_sided)).first;
  }
  return it->second;
}

// A t quantile for a tail probability that may be tiny (infinite when it rounds to none).
double upper_t(double tail, double df) {
  return tail <= 0 ? std::numeric_limits<double>::infinity() : t_quantile(1 - 2 * tail, df);
}

// --until-decided: look j is the variant's first first·j planned seeds (the last look: all of
// them), as the runner had them when it decided whether to add more. Each look gives repeated
// confidence intervals at alpha / interventions (Bonferroni across them): two-sided for the
// difference, one-sided on each side at the same level for equivalence (TOST). Paired, their
// half-widths come from simulated t boundaries (exact for normal differences at any df); unpaired
// (Welch), from the look's own share of alpha at its t quantile (a union bound). The verdict is
// the first look's that decides; a look with a seed that has no result on either side stops the
// design there (undecided), as a failed run stops the runner.
// `base` and `mine`: seed_values of `base_runs` and `runs`.
void decide_sequentially(const ReportInput& in, VariantStats& s, const std::map<SeedKey, double>& base,
                         const std::map<SeedKey, double>& mine, const std::vector<ReportRun>& base_runs,
                         const std::vector<ReportRun>& runs, bool paired) {
  const SeedDesign& d = in.design;
  const double alpha = alpha_each(in);
  const Spending spending = d.spending == "obrien-fleming" ? Spending::obrien_fleming : Spending::pocock;
  std::set<SeedKey> planned;
  for (const auto& r : runs) {
    planned.insert({r.init_seed, r.data_seed});
  }
  const std::vector<SeedKey> seeds(planned.begin(), planned.end());  // added seeds sort after the declared
  s.looks = d.looks(static_cast<int64_t>(seeds.size()));
  const int64_t n_max = std::max<int64_t>(d.max_seeds, static_cast<int64_t>(seeds.size()));
  const std::vector<double>* difference = nullptr;
  const std::vector<double>* equivalence = nullptr;
  if (paired) {
    difference = &boundaries(s.looks, n_max, alpha, spending, true);
    equivalence = &boundaries(s.looks, n_max, alpha, spending, false);
  }
  s.verdict = "undecided";
  double spent_difference = 0, spent_equivalence = 0;
  for (size_t j = 0; j < s.looks.size(); ++j) {
    std::vector<double> b, v;
    for (int64_t k = 0; k < s.looks[j]; ++k) {
      const SeedKey& seed = seeds[static_cast<size_t>(k)];
      if (!base.count(seed) || !mine.count(seed)) {
        // A run still to finish (pending, interrupted) is waited for; one that diverged or failed
        // stops the design here.
        const auto& side = base.count(seed) ? runs : base_runs;
        const bool ended = std::any_of(side.begin(), side.end(), [&](const ReportRun& r) {
          return SeedKey{r.init_seed, r.data_seed} == seed && (r.status == RunState::diverged ||
                                                               r.status == RunState::failed || r.status == RunState::oom);
        });
        const std::string whose = "seed " + std::to_string(seed.first) + (base.count(seed) ? "" : " of the baseline");
        s.stopped = ended ? "undecided: look " + std::to_string(j + 1) + " lacks a result for " + whose +
                                " (diverged or failed) — the design stops there"
                          : "undecided: look " + std::to_string(j + 1) + " waits for " + whose +
                                " (not finished: `sweep run` goes on)";
        s.halted = ended;
        return;
      }
      b.push_back(base.at(seed));
      v.push_back(mine.at(seed));
    }
    const Comparison c = paired ? compare_paired(b, v) : compare_welch(b, v);
    const double t = std::min(1.0, static_cast<double>(s.looks[j]) / static_cast<double>(n_max));
    const double now_difference = spent(spending, alpha / 2, t), now_equivalence = spent(spending, alpha, t);
    const double diff_c = paired ? (*difference)[j] : upper_t(now_difference - spent_difference, c.df);
    const double eq_c = paired ? (*equivalence)[j] : upper_t(now_equivalence - spent_equivalence, c.df);
    spent_difference = now_difference;
    spent_equivalence = now_equivalence;
    const double half = c.se * diff_c, eq_half = c.se * eq_c;  // se 0: the estimate is exact
    const double low = c.se == 0 ? c.improvement : c.improvement - half;
    const double high = c.se == 0 ? c.improvement : c.improvement + half;
    const bool differs = low > 0 || high < 0;
    const bool equivalent = d.min_effect > 0 && (c.se == 0 ? std::abs(c.improvement) < d.min_effect
                                                            : c.improvement - eq_half > -d.min_effect &&
                                                                  c.improvement + eq_half < d.min_effect);
    s.improvement = c.improvement;
    s.ci_low = low;
    s.ci_high = high;
    if (differs || equivalent) {
      s.verdict = !differs ? "equivalent" : c.improvement > 0 ? "better" : "worse";
      s.below_min_effect = differs && equivalent;
      s.stopped = "decided at look " + std::to_string(j + 1) + " (" + plural(s.looks[j], "seed") + ")";
      return;
    }
  }
  const bool runner_would_add = in.metric == "test_loss" && in.min_effect_source != "--min-effect";
  s.stopped = static_cast<int64_t>(seeds.size()) >= d.max_seeds ? "undecided at the cap (" + plural(d.max_seeds, "seed") + ")"
              : runner_would_add ? "undecided after " + plural(static_cast<int64_t>(seeds.size()), "seed") +
                                       ": `sweep run --until-decided` adds more"
                                 : "undecided after " + plural(static_cast<int64_t>(seeds.size()), "seed");
}

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

// A finished run's test blocks in the metric's units: nats per token for test_loss, bits per byte
// for test_bpb (the run's own ratio of the two); empty for val_loss, which is not the test set.
std::optional<LossBlocks> metric_blocks(const ReportRun& r, const std::string& metric) {
  if (!r.value || r.test_blocks.empty() || metric == "val_loss") {
    return std::nullopt;
  }
  LossBlocks blocks = r.test_blocks;
  if (metric == "test_bpb") {
    if (!r.test_bpb || !r.test_loss || !(*r.test_loss > 0)) {
      return std::nullopt;
    }
    for (auto& b : blocks) {
      b.second *= *r.test_bpb / *r.test_loss;
    }
  }
  return blocks;
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

NoiseSummary noise_summary(const ReportInput& in, const std::vector<ReportRun>& baseline_runs) {
  NoiseSummary ns;
  const std::vector<ReportRun>& source_runs = in.noise_from ? in.noise_from->runs : baseline_runs;
  const std::vector<double> values = values_of(seed_values(source_runs));
  ns.n = static_cast<int64_t>(values.size());
  ns.sigma = summarize(values).sd;
  std::vector<SeedRun> seed_runs;
  for (const auto& r : source_runs) {
    if (r.value && std::isfinite(*r.value)) {
      seed_runs.push_back({r.init_seed, r.data_seed, r.repeat, *r.value});
    }
  }
  ns.components = variance_components(seed_runs);
  const std::string whose = in.noise_from ? "the baseline of sweep " + in.noise_from->sweep : "this sweep's baseline";
  if (ns.n >= 2) {
    ns.source = "σ = standard deviation of " + in.metric + " over " + plural(ns.n, "seed") + " of " + whose +
                (seed_runs.size() > values.size() ? " (identical-seed repeats averaged into one value per seed)" : "");
  } else if (ns.n == 1 && seed_runs.size() > 1) {
    ns.sigma = k_nan;
    ns.source = "σ refused: " + whose + " runs one seed pair (init " + std::to_string(seed_runs.front().init) +
                ", data " + std::to_string(seed_runs.front().data) + ") " + std::to_string(seed_runs.size()) +
                " times — their spread is run-to-run nondeterminism (σ_repeat), not the seed-to-seed noise a verdict "
                "must beat; take σ from a sweep that varies its seeds (experiments/noise.yaml)";
  } else {
    ns.sigma = k_nan;
    ns.source = "σ unknown: " + whose + " has " + plural(ns.n, "seed") + " with a finished run" +
                " — run it with more seeds, or pass --noise-from SWEEP with a seed study";
  }
  // The seed count most variants have (ties: the smaller).
  std::map<int64_t, int> counts;
  for (const auto& v : in.variants) {
    const auto n = static_cast<int64_t>(seed_values(v.runs).size());
    if (n > 0) {
      counts[n]++;
    }
  }
  ns.seeds = counts.empty() ? 0
                            : std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
                                return a.second < b.second;
                              })->first;
  // The half-width of a one-seed comparison's interval at `seeds` per side: t for σ's degrees of freedom.
  ns.band = ns.seeds > 0 && ns.n >= 2 ? t_quantile(1 - in.alpha, static_cast<double>(ns.n - 1)) * ns.sigma *
                                            std::sqrt(2.0 / static_cast<double>(ns.seeds))
                                      : k_nan;
  // At the level a verdict applies, as the seeds-for-80% column: alpha split across the interventions.
  ns.alpha = alpha_each(in);
  ns.detectable = in.power ? detectable_effect(ns.seeds, ns.sigma, false, ns.alpha) : k_nan;
  std::vector<double> test_se;
  for (const auto& r : source_runs) {
    if (const auto blocks = metric_blocks(r, in.metric)) {
      test_se.push_back(test_set_se({*blocks}));
      ns.test_blocks = static_cast<int64_t>(blocks->size());
    }
  }
  ns.test_se = percentile(test_se, 0.5);
  return ns;
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

// A combination at the baseline's grid point against the sum of its parts' improvements.
std::optional<Additivity> additivity(const ReportInput& in, const VariantRuns& combined, const VariantRuns& base) {
  if (combined.parts.size() < 2 || combined.name != combined.intervention) {
    return std::nullopt;  // not a combination, or one at another grid point (its parts there include the axes)
  }
  Additivity out;
  out.variant = combined.name;
  out.parts = combined.parts;
  std::vector<std::map<SeedKey, double>> parts;
  for (const auto& name : combined.parts) {
    const auto it = std::find_if(in.variants.begin(), in.variants.end(),
                                 [&](const VariantRuns& v) { return v.name == name; });
    if (it == in.variants.end()) {
      return std::nullopt;
    }
    parts.push_back(seed_values(it->runs));
  }
  const auto b = seed_values(base.runs), c = seed_values(combined.runs);
  const auto k = static_cast<double>(parts.size());
  // combined − Σ parts of improvements = (1 − k)·baseline − combined + Σ part
  const bool paired = c.size() >= 2 && same_seeds(b, c) &&
                      std::all_of(parts.begin(), parts.end(), [&](const auto& p) { return same_seeds(b, p); });
  Comparison cmp;
  if (paired) {
    std::vector<double> d;
    for (const auto& [seed, base_value] : b) {
      double v = (1 - k) * base_value - c.at(seed);
      for (const auto& p : parts) {
        v += p.at(seed);
      }
      d.push_back(v);
    }
    cmp = one_sample(d);
  } else {
    std::vector<std::vector<double>> groups{values_of(b), values_of(c)};
    std::vector<double> weights{1 - k, -1};
    for (const auto& p : parts) {
      groups.push_back(values_of(p));
      weights.push_back(1);
    }
    cmp = contrast(groups, weights);
  }
  out.method = paired ? "paired" : "welch";
  const double base_mean = summarize(values_of(b)).mean;
  out.combined = base_mean - summarize(values_of(c)).mean;
  out.sum_of_parts = 0;
  out.best_part = -std::numeric_limits<double>::infinity();
  for (const auto& p : parts) {
    const double improvement = base_mean - summarize(values_of(p)).mean;
    out.sum_of_parts += improvement;
    out.best_part = std::max(out.best_part, improvement);
  }
  out.difference = cmp.improvement;
  out.ci_low = cmp.ci_low;
  out.ci_high = cmp.ci_high;
  out.verdict = !std::isfinite(out.ci_low)    ? "unknown"
                : out.ci_low > 0              ? "better than the sum"
                : out.ci_high >= 0            ? "adds up"
                : out.combined >= out.best_part ? "overlaps"
                                                : "interferes";
  return out;
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

}  // namespace

std::map<SeedKey, double> seed_values(const std::vector<ReportRun>& runs) {
  std::map<SeedKey, std::pair<double, int>> sums;
  for (const auto& r : runs) {
    if (r.value && std::isfinite(*r.value)) {
      auto& [sum, n] = sums[{r.init_seed, r.data_seed}];
      sum += *r.value;
      ++n;
    }
  }
  std::map<SeedKey, double> out;
  for (const auto& [key, s] : sums) {
    out[key] = s.first / s.second;
  }
  return out;
}

namespace {

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

// What a report states before its rows: the sweep, its design, the noise of its baseline.
Analysis header(const ReportInput& in, const VariantRuns& baseline) {
  Analysis a;
  a.sweep = in.sweep;
  a.baseline = in.baseline;
  a.metric = in.metric;
  a.alpha = in.alpha;
  a.noise = noise_summary(in, baseline.runs);
  a.design = in.design;
  a.min_effect_source = in.min_effect_source;
  a.notes = in.notes;
  a.references = in.references;
  return a;
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
  s.tokens = mean_where(v.runs, [](const ReportRun& r) { return std::optional<double>(static_cast<double>(r.tokens)); });
  s.tokens_per_s = mean_where(v.runs, [](const ReportRun& r) { return r.tokens_per_s; });
  s.wall_seconds = mean_where(v.runs, [](const ReportRun& r) { return r.wall_seconds; });
  for (const auto& r : v.runs) {
    s.starts += r.starts;
  }
  s.improvement = s.ci_low = s.ci_high = s.p = s.p_holm = s.prob_improvement = s.correlation = k_nan;
  s.p_equivalence = s.p_equivalence_holm = s.seed_se = s.test_se = k_nan;
  if (s.diverged > 0) {
    notes.push_back(v.name + ": " + std::to_string(s.diverged) + " of " + plural(s.runs, "run") + " diverged" +
                    (s.finished > 0 ? "; its statistics use the " + std::to_string(s.finished) + " that finished" : ""));
  }
  if (const int64_t other = s.runs - s.finished - s.diverged; other > 0) {
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
  const std::vector<double> values = values_of(mine);
  const Comparison c = paired ? compare_paired(paired_base, paired_mine) : compare_welch(base.values, values);
  s.method = paired ? "paired" : "welch";
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
  if (in.design.min_effect > 0) {
    s.p_equivalence = tost_p(c, in.design.min_effect);
  }
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
  s.method = "band";
  s.improvement = summarize(base.values).mean - s.summary.mean;
  const double se = noise.sigma * std::sqrt(1.0 / static_cast<double>(base.values.size()) +
                                            1.0 / static_cast<double>(values.size()));
  const Comparison c = t_estimate(s.improvement, se, static_cast<double>(noise.n - 1));
  s.ci_low = c.ci_low;
  s.ci_high = c.ci_high;
  s.p = c.p;
  s.seed_se = se;
  s.seeds_needed = in.power ? seeds_needed(s.improvement, noise.sigma, false, alpha_each(in)) : -1;
  if (in.design.min_effect > 0) {
    s.p_equivalence = tost_p(c, in.design.min_effect);
  }
  s.verdict = std::isfinite(s.p) ? "undecided" : "unknown";
}

// The variant against the baseline: nothing to compare (no result on a side), the baseline
// itself, a test on seeds, or the noise band. Whether it gave a p-value (Holm's to adjust).
bool compare_to_baseline(const ReportInput& in, const Baseline& base, const VariantRuns& v, VariantStats& s,
                         Analysis& a, std::vector<double>& detectable) {
  if (s.finished == 0 || base.by_seed.empty()) {
    s.method = "none";
    s.verdict = s.finished == 0 && s.diverged == s.runs && s.runs > 0 ? "diverged"
                : s.is_baseline || s.finished == 0                    ? "no result"
                                                                      : "unknown";
    return false;
  }
  if (s.is_baseline) {
    s.method = "";
    s.verdict = "baseline";
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
  s.prob_improvement = probability_of_improvement(base.values, values, s.method == "paired");
  return std::isfinite(s.p);
}

// Notes on the runs as a whole: results still to come, repeats averaged, restarts in the wall time.
void note_progress(Analysis& a, int64_t repeated, int64_t restarted) {
  int64_t pending = 0, all_runs = 0;
  for (const auto& v : a.variants) {
    pending += v.runs - v.finished - v.diverged;
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
    s.verdict = s.p_holm < in.alpha ? (s.improvement > 0 ? "better" : "worse") : equivalent ? "equivalent" : "undecided";
    s.below_min_effect = s.p_holm < in.alpha && equivalent;
  }
}

// A variant with a diverged seed is judged by that first: its survivors alone are a biased sample
// (the seeds that trained badly are the ones missing), so it is never shown better, equivalent or
// worse on them.
void judge_diverged(Analysis& a) {
  for (auto& s : a.variants) {
    if (s.diverged > 0 && s.finished > 0 && !s.is_baseline) {
      s.verdict = "diverged " + std::to_string(s.diverged) + "/" + std::to_string(s.runs);
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
  if (in.design.sequential() && (in.min_effect_source == "--min-effect" || in.metric != "test_loss")) {
    a.notes.push_back("--until-decided added seeds by the verdicts on test_loss at the sweep file's min_effect; "
                      "these, on " + in.metric + (in.min_effect_source == "--min-effect" ? " at --min-effect" : "") +
                      ", read the same runs another way: the design's error rates are for its own");
  }
  if (in.design.min_effect <= 0 && in.min_effect_source.empty() && any_tested) {
    a.notes.push_back("no smallest effect of interest declared, so no intervention can be shown equivalent (undecided "
                      "only means not shown to differ)" +
                      (std::isfinite(a.suggested_min_effect)
                           ? ": these seeds detect about " + format_number("%.3g", a.suggested_min_effect) +
                                 " with power 0.8 — declare the effect that matters to you with `min_effect:` in the "
                                 "sweep file or `sweep report --min-effect`, e.g. " + format_number("%.2g", a.suggested_min_effect)
                           : std::string()));
  }
}

// Each combination of interventions against the sum of its parts (at the baseline's grid point).
void check_additivity(const ReportInput& in, const VariantRuns& base, Analysis& a) {
  int64_t combined_elsewhere = 0;  // combinations at the other grid points: not checked
  for (const auto& v : in.variants) {
    if (auto add = additivity(in, v, base)) {
      a.additivity.push_back(*add);
    } else {
      combined_elsewhere += v.parts.size() >= 2;
    }
  }
  if (combined_elsewhere > 0) {
    a.notes.push_back("combinations are checked against their parts at the baseline's grid point only: " +
                      plural(combined_elsewhere, "combination variant") + " at other points are not");
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
                      "proves for its own core only; the verdicts hold if the trainer does what its keys say");
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

Analysis analyze(const ReportInput& in) {
  if (in.ladder) {
    return analyze_ladder(in);
  }
  const VariantRuns& base_runs = baseline_of(in);
  Analysis a = header(in, base_runs);
  const auto base_by_seed = seed_values(base_runs.runs);
  const Baseline base{base_runs, base_by_seed, values_of(base_by_seed)};
  std::vector<double> detectable;  // per tested intervention: the effect its seeds detect
  std::vector<size_t> tested;      // indices into a.variants with a p-value
  int64_t repeated = 0, restarted = 0;
  for (size_t i = 0; i < in.variants.size(); ++i) {
    VariantStats s = count_runs(in, in.variants[i], i, a.notes);
    repeated += s.finished > s.seeds;
    restarted += s.starts > s.runs;
    if (compare_to_baseline(in, base, in.variants[i], s, a, detectable)) {
      tested.push_back(i);
    }
    a.variants.push_back(s);
  }
  note_progress(a, repeated, restarted);
  apply_holm(in, a, tested);
  judge_diverged(a);
  note_effect_size(in, a, std::move(detectable), !tested.empty());
  check_additivity(in, base_runs, a);
  note_own_trainers(in, a);
  a.responses = find_responses(in, a.notes);
  a.code = code_sentence(in, a.notes);
  rank(a);
  analyze_curves(in, a);
  return a;
}

std::map<std::string, int64_t> next_round(const Analysis& a) {
  std::map<std::string, int64_t> out;
  if (!a.design.sequential()) {
    return out;
  }
  if (a.ladder) {
    // Each rung as a study of its own; and an intervention whose trend is undecided while its
    // rungs are decided gets `first` more seeds at every rung (each rung's precision narrows the line).
    for (size_t k = 0; k < a.rungs.size(); ++k) {
      const Analysis& rung = a.rungs[k];
      for (const auto& [name, n] : next_round(rung)) {
        out[name] = n;
      }
      for (const auto& t : a.ladder->trends) {
        const auto v = std::find_if(rung.variants.begin(), rung.variants.end(),
                                    [&](const VariantStats& s) { return s.name == t.rung_variants[k]; });
        if (t.verdict != "undecided" || v == rung.variants.end() || v->halted || out.count(v->name) ||
            v->seeds_planned >= a.design.max_seeds) {
          continue;
        }
        const int64_t n = std::min(v->seeds_planned + a.design.first, a.design.max_seeds);
        out[v->name] = n;
        const auto base = std::find_if(rung.variants.begin(), rung.variants.end(),
                                       [](const VariantStats& s) { return s.is_baseline; });
        if (base != rung.variants.end() && n > base->seeds_planned) {
          out[base->name] = std::max(out[base->name], n);
        }
      }
    }
    return out;
  }
  int64_t most = 0;
  for (const auto& v : a.variants) {
    if (!v.is_baseline && v.verdict == "undecided" && !v.halted && v.seeds_planned < a.design.max_seeds) {
      const int64_t n = std::min(v.seeds_planned + a.design.first, a.design.max_seeds);
      out[v.name] = n;
      most = std::max(most, n);
    }
  }
  for (const auto& v : a.variants) {
    if (v.is_baseline && most > v.seeds_planned) {
      out[v.name] = most;
    }
  }
  return out;
}

}  // namespace sweep
