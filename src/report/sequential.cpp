#include "report/sequential.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "util/text.h"

namespace sweep {

namespace {

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

}  // namespace

void decide_sequentially(const ReportInput& in, VariantStats& s, const std::map<SeedKey, double>& base,
                         const std::map<SeedKey, double>& mine, const std::vector<ReportRun>& base_runs,
                         const std::vector<ReportRun>& runs, bool paired) {
  const SeedDesign& d = in.design;
  const double alpha = alpha_each(in);
  // `better by more than better_by`: a one-sided repeated bound at better_by_alpha, Bonferroni
  // across the interventions as the design's alpha is
  const double margin_alpha = d.better_by_alpha * alpha / in.alpha;
  const Spending spending = d.spending;
  // The margin's claim spends O'Brien–Fleming-type whatever the verdicts do: it only adds to a
  // `better` already decided, and the runner adds seeds while it is open, so an early claim saves
  // few seeds — keeping its alpha for the last looks raises its power there. Its futility stop
  // ("out of reach": the upper repeated bound at or below m) keeps the verdicts' spending, which
  // stops early: a stop can only withhold the claim, and the upper bound is a valid one of its own.
  const Spending margin_spending = Spending::obrien_fleming;
  std::set<SeedKey> planned;
  for (const auto& r : runs) {
    planned.insert({r.init_seed, r.data_seed});
  }
  const std::vector<SeedKey> seeds(planned.begin(), planned.end());  // added seeds sort after the declared
  s.looks = d.looks(static_cast<int64_t>(seeds.size()));
  const int64_t n_max = std::max<int64_t>(d.max_seeds, static_cast<int64_t>(seeds.size()));
  const std::vector<double>* difference = nullptr;
  const std::vector<double>* equivalence = nullptr;
  const std::vector<double>* margin = nullptr;
  const std::vector<double>* reach = nullptr;
  if (paired) {
    difference = &boundaries(s.looks, n_max, alpha, spending, true);
    equivalence = &boundaries(s.looks, n_max, alpha, spending, false);
    margin = d.better_by > 0 ? &boundaries(s.looks, n_max, margin_alpha, margin_spending, false) : nullptr;
    reach = d.better_by > 0 ? &boundaries(s.looks, n_max, margin_alpha, spending, false) : nullptr;
  }
  s.verdict = Verdict::undecided;
  const bool runner_would_add = in.metric == Metric::Kind::test_loss && in.min_effect_source != MinEffectSource::option;
  const bool capped = static_cast<int64_t>(seeds.size()) >= d.max_seeds;
  // The look that decided the verdict ("" while none has). A `better` with a margin to test goes
  // on looking for the margin — shown, out of reach or still open: repeated bounds cover at every
  // look at once, so a later look's is as valid as the deciding one's. The verdict, its estimate
  // and its interval stay the deciding look's (a later look's interval could contain 0 beside a
  // `better`); the margin's look is in `stopped`.
  std::string decided;
  size_t decided_look = 0;
  double spent_difference = 0, spent_equivalence = 0, spent_margin = 0, spent_reach = 0;
  for (size_t j = 0; j < s.looks.size(); ++j) {
    const std::string look = "look " + std::to_string(j + 1);
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
        const std::string what = decided.empty() ? "undecided: " : decided + "; the margin's ";
        s.stopped = ended ? what + look + " lacks a result for " + whose + " (diverged or failed) — the design stops there"
                          : what + look + " waits for " + whose + " (not finished: `sweep run` goes on)";
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
    const double now_margin = spent(margin_spending, margin_alpha, t), now_reach = spent(spending, margin_alpha, t);
    const double margin_c = d.better_by <= 0 ? k_nan : paired ? (*margin)[j] : upper_t(now_margin - spent_margin, c.df);
    const double reach_c = d.better_by <= 0 ? k_nan : paired ? (*reach)[j] : upper_t(now_reach - spent_reach, c.df);
    spent_difference = now_difference;
    spent_equivalence = now_equivalence;
    spent_margin = now_margin;
    spent_reach = now_reach;
    const double half = c.se * diff_c, eq_half = c.se * eq_c;  // se 0: the estimate is exact
    if (decided.empty()) {
      s.improvement = c.improvement;
      s.ci_low = c.se == 0 ? c.improvement : c.improvement - half;
      s.ci_high = c.se == 0 ? c.improvement : c.improvement + half;
      const bool differs = s.ci_low > 0 || s.ci_high < 0;
      const bool equivalent = d.min_effect > 0 && (c.se == 0 ? std::abs(c.improvement) < d.min_effect
                                                              : c.improvement - eq_half > -d.min_effect &&
                                                                    c.improvement + eq_half < d.min_effect);
      if (!differs && !equivalent) {
        continue;
      }
      s.verdict = !differs ? Verdict::equivalent : c.improvement > 0 ? Verdict::better : Verdict::worse;
      s.below_min_effect = differs && equivalent;
      decided = "decided at " + look + " (" + plural(s.looks[j], "seed") + ")";
      decided_look = j;
      s.stopped = decided;
      if (!(d.better_by > 0 && s.verdict == Verdict::better)) {
        return;
      }
    }
    // better, with a margin to test: its one-sided repeated bounds at this look
    const double margin_half = c.se == 0 ? 0 : c.se * margin_c, reach_half = c.se == 0 ? 0 : c.se * reach_c;
    const std::string by = format_number("%g", d.better_by);
    if (c.improvement - margin_half > d.better_by) {
      s.better_by = true;
      s.stopped = decided + (j == decided_look ? ", better by > " + by
                                               : "; better by > " + by + " at " + look + " (" + plural(s.looks[j], "seed") + ")");
      return;
    }
    if (c.improvement + reach_half <= d.better_by) {  // the margin is out of reach: no seeds more for it
      s.stopped = decided + "; not better by > " + by + " (at most " +
                  format_number("%.4f", c.improvement + reach_half) + " at " + look + ")";
      return;
    }
    if (s.below_min_effect && d.better_by >= d.min_effect) {  // shown smaller than δ ≤ m: out of reach too
      s.stopped = decided + "; not better by > " + by + " (shown smaller than min_effect " +
                  format_number("%g", d.min_effect) + ")";
      return;
    }
  }
  if (!decided.empty()) {  // better, its margin open
    const bool runner_adds = runner_would_add && !in.better_by_option;  // the runner tests the file's margin
    s.margin_open = !capped && runner_adds;
    s.stopped = decided + "; its margin open " + (capped ? "at the cap (" + plural(d.max_seeds, "seed") + ")"
                                                 : "after " + plural(static_cast<int64_t>(seeds.size()), "seed") +
                                                       (runner_adds ? ": `sweep run --until-decided` adds more" : ""));
    return;
  }
  s.stopped = capped ? "undecided at the cap (" + plural(d.max_seeds, "seed") + ")"
              : runner_would_add ? "undecided after " + plural(static_cast<int64_t>(seeds.size()), "seed") +
                                       ": `sweep run --until-decided` adds more"
                                 : "undecided after " + plural(static_cast<int64_t>(seeds.size()), "seed");
}

}  // namespace sweep
