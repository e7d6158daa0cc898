#include "report/pool/pool.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "report/eliminate/live.h"
#include "report/ladder/ladder.h"
#include "report/seeds.h"
#include "report/stats.h"
#include "util/text.h"

namespace sweep {

namespace {

// A seed's test loss (its finished runs' mean, as seed_values averages a seed's repeats).
std::map<SeedKey, double> seed_test_losses(const std::vector<ReportRun>& runs) {
  std::vector<ReportRun> tested;
  for (const ReportRun& r : runs) {
    if (r.value && r.test_loss) {
      tested.push_back(r);
      tested.back().value = r.test_loss;
    }
  }
  return seed_values(tested);
}

// The (baseline, arm) values of the seeds both have, in value order: what was measured, whatever the
// seeds are called.
std::vector<std::pair<double, double>> pairs_of(const std::map<SeedKey, double>& arm,
                                                const std::map<SeedKey, double>& base) {
  std::vector<std::pair<double, double>> pairs;
  for (const auto& [seed, value] : arm) {
    if (const auto b = base.find(seed); b != base.end()) {
      pairs.emplace_back(b->second, value);
    }
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

// The same pairs to rounding (a relative 1e-9: a loss printed and read back, never two trainings).
bool same_pairs(const std::vector<std::pair<double, double>>& a, const std::vector<std::pair<double, double>>& b) {
  const auto close = [](double x, double y) { return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(x)); };
  if (a.empty() || a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (!close(a[i].first, b[i].first) || !close(a[i].second, b[i].second)) {
      return false;
    }
  }
  return true;
}

// The setting's measurement of each intervention: its variant at the baseline's grid point (with a
// tune axis: the analysis's variants are the study at the base value, each arm's at its own base —
// a key the baseline leaves unset, Muon's learning rate, set there).
void measure_setting(const std::string& name, const ReportInput& in, const Analysis& a, Measured& out) {
  const VariantRuns* base = find_variant(in, in.baseline);
  if (base == nullptr) {
    return;
  }
  if (!measures_anything(a)) {
    out.notes.push_back(name + ": no finished baseline run — left out");
    return;
  }
  const auto finished = [](const VariantRuns& v) {
    std::set<std::string> ids;
    for (const auto& r : v.runs) {
      if (r.value) {
        ids.insert(r.run_id);
      }
    }
    return ids;
  };
  const auto base_stats = std::find_if(a.variants.begin(), a.variants.end(),
                                       [](const VariantStats& v) { return v.is_baseline; });
  if (base_stats != a.variants.end() && base_stats->diverged > 0) {
    out.notes.push_back(baseline_diverged(name, base_stats->diverged, base_stats->runs));
    return;
  }
  out.settings.push_back(name);
  for (const VariantStats& v : a.variants) {
    const VariantRuns* runs = find_variant(in, v.name);
    if (v.is_baseline || runs == nullptr || (!a.tuned && runs->axes != base->axes)) {
      continue;
    }
    PoolSetting s{name, runs->intervention.empty() ? v.name : runs->intervention, v.name, v.improvement, v.seed_se,
                  v.seeds, finished(*runs), finished(*base)};
    s.values = seed_values(runs->runs);
    s.baseline_values = seed_values(base->runs);
    s.test_values = seed_test_losses(runs->runs);
    s.baseline_test_values = seed_test_losses(base->runs);
    s.runs_planned = v.runs;
    s.diverged = v.diverged;
    s.eliminated = stop_of(in, *runs) != nullptr ? v.stopped : "";
    if (const std::string why = unpoolable(s); !why.empty()) {
      out.notes.push_back(why);
      continue;
    }
    out.measured.push_back(std::move(s));
  }
}

// The settings' effects, standard errors and seeds, as the meta-analysis takes them.
struct Columns {
  std::vector<double> y, se;
  std::vector<int64_t> seeds;
};
Columns columns(const std::vector<PoolSetting>& settings) {
  Columns c;
  for (const auto& s : settings) {
    c.y.push_back(s.effect);
    c.se.push_back(s.se);
    c.seeds.push_back(s.seeds);
  }
  return c;
}

std::string interval_text(double low, double high) {
  return "[" + format_number("%+.4f", low) + ", " + format_number("%+.4f", high) + "]";
}

// Why a setting's standard error is the 0 it approximates ("" when it is not): under
// k_negligible_se_ratio of the largest of its intervention's settings', or under k_rounding_se of
// its baseline's loss (a float's rounding of it).
std::string negligible_error(const PoolSetting& s, double largest) {
  if (s.se < k_negligible_se_ratio * largest) {
    return "under a thousandth of its settings' largest (" + format_number("%.3g", largest) + ")";
  }
  double level = 0;
  for (const auto& [seed, value] : s.baseline_values) {
    level += std::abs(value) / static_cast<double>(s.baseline_values.size());
  }
  if (s.se < k_rounding_se * level) {
    return "under a millionth of its baseline's loss (" + format_number("%.4g", level) + ")";
  }
  return "";
}

// The intervention's settings, each measured once: two with the same measurement (same_measurement:
// a sweep file copied, a key that does not change training, a report read twice) are one setting, as
// are two that share runs of the arm (the better seeded counted) and an intervention listed twice in
// one setting; a setting whose standard error is negligible (negligible_error) is left out as an
// error of 0 is. Each said in `notes`; settings that share the baseline's runs are correlated, and said.
std::vector<PoolSetting> one_each(const std::string& name, const std::vector<PoolSetting>& measured,
                                  std::vector<std::string>& notes) {
  std::vector<PoolSetting> settings;
  for (const auto& s : measured) {
    const auto same = std::find_if(settings.begin(), settings.end(),
                                   [&](const PoolSetting& t) { return same_measurement(s, t); });
    if (same != settings.end()) {
      const bool runs = !s.runs.empty() && s.runs == same->runs;
      notes.push_back(name + ": " + s.setting + " has the same " +
                      (runs ? "runs" : "per-seed results, to 9 digits,") + " as " + same->setting +
                      " — one setting, counted once");
      continue;
    }
    // overlapping runs of the arm (the same sweep with a seed more or less): one experiment — the
    // setting with more seeds counted
    const auto overlap = std::find_if(settings.begin(), settings.end(),
                                      [&](const PoolSetting& t) { return shares_runs(s, t); });
    if (overlap != settings.end()) {
      const bool more = s.seeds > overlap->seeds;
      notes.push_back(name + ": " + s.setting + " and " + overlap->setting + " share runs of the arm — one " +
                      "experiment, counted once (" + (more ? s.setting : overlap->setting) + ", with more seeds)");
      if (more) {
        *overlap = s;
      }
      continue;
    }
    const auto twice = std::find_if(settings.begin(), settings.end(),
                                    [&](const PoolSetting& t) { return t.setting == s.setting; });
    if (twice != settings.end()) {
      notes.push_back(name + ": listed twice in " + s.setting + " (variants `" + twice->variant + "` and `" +
                      s.variant + "`) — the first counted, a setting is one measurement");
      continue;
    }
    for (const auto& t : settings) {
      const auto shared = [&](const std::string& r) { return t.baseline_runs.count(r) > 0; };
      if (std::any_of(s.baseline_runs.begin(), s.baseline_runs.end(), shared)) {
        notes.push_back(name + ": " + s.setting + " and " + t.setting +
                        " share baseline runs — their effects are "
                        "correlated, and the pool treats them as independent");
      }
    }
    settings.push_back(s);
  }
  if (settings.size() < 2) {
    return settings;
  }
  double largest = 0;
  for (const auto& s : settings) {
    largest = std::max(largest, s.se);
  }
  std::vector<PoolSetting> kept;
  for (auto& s : settings) {
    if (const std::string why = negligible_error(s, largest); !why.empty()) {
      notes.push_back(s.setting + ": " + name + " left out — its standard error (" + format_number("%.3g", s.se) +
                      ") is " + why + ": the same improvement on every seed up to rounding, as an error of 0 is");
      continue;
    }
    kept.push_back(std::move(s));
  }
  return kept;
}

}  // namespace

MetaResult pool_effects(const std::vector<PoolSetting>& settings, double level) {
  const Columns c = columns(settings);
  MetaResult m = random_effects(c.y, pooled_noise_se(c.se, c.seeds), level);
  m.spread_p = welch_anova(c.y, c.se, c.seeds).second;
  return m;
}

bool measures_anything(const Analysis& a) {
  const auto baseline_measured = [](const Analysis& x) {
    return std::any_of(x.variants.begin(), x.variants.end(),
                       [](const VariantStats& v) { return v.is_baseline && v.seeds > 0; });
  };
  return baseline_measured(a) || std::any_of(a.rungs.begin(), a.rungs.end(), baseline_measured);
}

void judge_pooled(PooledIntervention& p, double alpha) {
  const MetaResult& m = p.meta;
  const std::string pi = interval_text(m.pi_low, m.pi_high);
  if (m.k < 3) {
    p.verdict = PoolVerdict::undecided;
    p.why = plural(m.k, "setting") + ": no prediction interval for a new one (it needs 3)";
  } else if (m.pi_low > 0 || m.pi_high < 0) {
    p.verdict = PoolVerdict::holds;
    p.why = std::string(m.pi_low > 0 ? "better" : "worse") + " in a new setting like these: " + pi;
  } else if (m.spread_p < alpha) {
    p.verdict = PoolVerdict::varies;
    p.why = "the settings differ beyond their seed noise (Welch's test p " + format_number("%.2g", m.spread_p) +
            ", τ " +
            format_number("%.4f", std::sqrt(m.tau2)) + "); a new setting's effect in " + pi;
  } else {
    p.verdict = PoolVerdict::undecided;
    p.why = "a new setting's effect in " + pi + ": its sign is not shown, nor that the settings differ";
  }
}

std::string baseline_diverged(const std::string& setting, int64_t diverged, int64_t runs) {
  return setting + ": left out — " + std::to_string(diverged) + " of " + plural(std::max(runs, diverged), "run") +
         " of its baseline diverged, and its survivors are no baseline to judge an arm by";
}

std::string unpoolable(const PoolSetting& s) {
  const std::string head = s.setting + ": " + s.intervention + " left out — ";
  // a loss difference and its error, not any number (1e300 squared is no variance)
  const auto sane = [](double x) { return std::isfinite(x) && std::abs(x) < 1e100; };
  if (!s.eliminated.empty()) {
    return head + "--eliminate " + s.eliminated + "; its runs have no final result to pool (`sweep run` without "
                  "--eliminate trains them to the end)";
  }
  if (s.diverged > 0) {
    return head + std::to_string(s.diverged) + " of " + plural(std::max(s.runs_planned, s.diverged), "run") +
           " diverged, and an arm is never judged on its survivors (its report says `diverged`)";
  }
  if (std::isnan(s.effect) && s.seeds == 0) {
    return head + "no finished run of it is paired with a finished baseline run yet";
  }
  if (!sane(s.effect)) {
    return head + "its improvement (" + format_number("%g", s.effect) + ") is no difference of losses";
  }
  if (s.seeds < 2) {
    return head + "its improvement has no standard error over seeds (fewer than 2 of its seeds paired with a "
                  "finished baseline run)";
  }
  if (std::isnan(s.se)) {
    return head + "its report gives its improvement no standard error over seeds";
  }
  if (!sane(s.se) || s.se < 0) {
    return head + "its standard error (" + format_number("%g", s.se) + ") is no spread of seeds";
  }
  if (s.se == 0) {
    return head + "its improvement is the same on every seed (" + format_number("%+.4g", s.effect) +
           ", standard error 0): nothing to weigh it by";
  }
  return "";
}

bool same_measurement(const PoolSetting& a, const PoolSetting& b) {
  if (!a.runs.empty() && a.runs == b.runs) {
    return true;
  }
  return same_pairs(pairs_of(a.values, a.baseline_values), pairs_of(b.values, b.baseline_values)) ||
         same_pairs(pairs_of(a.test_values, a.baseline_test_values), pairs_of(b.test_values, b.baseline_test_values));
}

bool shares_runs(const PoolSetting& a, const PoolSetting& b) {
  return std::any_of(a.runs.begin(), a.runs.end(), [&](const std::string& r) { return b.runs.count(r) > 0; });
}

Measured measure_study(const PoolStudy& study) {
  const ReportInput& in = *study.input;
  const Analysis& a = *study.analysis;
  Measured out;
  if (a.ladder) {
    for (size_t k = 0; k < a.rungs.size() && k < a.ladder->rungs.size(); ++k) {
      const std::string rung = a.ladder->rungs[k].name;
      measure_setting(in.sweep + "/" + rung, rung_input(in, rung), a.rungs[k], out);
    }
  } else {
    measure_setting(in.sweep, in, a, out);
  }
  return out;
}

Pool pool_studies(const std::vector<PoolStudy>& studies, const Metric& metric, double alpha) {
  std::vector<Measured> measured;
  std::vector<std::string> copies;
  std::map<std::set<std::string>, std::string> first;  // a study's run ids -> its name
  for (const PoolStudy& s : studies) {
    std::set<std::string> runs;
    for (const VariantRuns& v : s.input->variants) {
      for (const ReportRun& r : v.runs) {
        runs.insert(r.run_id);
      }
    }
    if (const auto [seen, added] = first.emplace(runs, s.input->sweep); !added && !runs.empty()) {
      copies.push_back(s.input->sweep + ": the same runs as " + seen->second + " — pooled once");
      continue;
    }
    measured.push_back(measure_study(s));
  }
  Pool pool = pool_measured(measured, metric, alpha);
  pool.notes.insert(pool.notes.begin(), copies.begin(), copies.end());
  return pool;
}

Pool pool_measured(const std::vector<Measured>& studies, const Metric& metric, double alpha) {
  Pool pool;
  pool.metric = metric;
  std::map<std::string, std::vector<PoolSetting>> by_intervention;
  std::vector<std::string> order;
  for (const Measured& m : studies) {
    pool.settings.insert(pool.settings.end(), m.settings.begin(), m.settings.end());
    pool.notes.insert(pool.notes.end(), m.notes.begin(), m.notes.end());
    for (const PoolSetting& s : m.measured) {
      if (!by_intervention.count(s.intervention)) {
        order.push_back(s.intervention);
      }
      by_intervention[s.intervention].push_back(s);
    }
  }
  const double level = 1 - alpha;
  for (const std::string& name : order) {
    std::vector<PoolSetting> settings = one_each(name, by_intervention[name], pool.notes);
    if (settings.size() < 2) {
      pool.notes.push_back(name + (settings.empty() ? ": no setting left — not pooled"
                                                    : ": measured in one setting (" + settings.front().setting +
                                                          ") — not pooled"));
      continue;
    }
    PooledIntervention p;
    p.intervention = name;
    p.settings = settings;
    p.meta = pool_effects(settings, level);
    judge_pooled(p, alpha);
    if (settings.size() >= 4) {
      for (size_t j = 0; j < settings.size(); ++j) {
        std::vector<PoolSetting> others = settings;
        others.erase(others.begin() + static_cast<std::ptrdiff_t>(j));
        const Columns c = columns(others);
        const auto [low, high] =
            predictive_interval(c.y, pooled_noise_se(c.se, c.seeds), level, settings[j].se * settings[j].se);
        LeftOut l{settings[j].setting, settings[j].effect, low, high, false};
        l.covered = l.low <= l.effect && l.effect <= l.high;
        p.left_out.push_back(l);
      }
    }
    pool.pooled.push_back(std::move(p));
  }
  return pool;
}

}  // namespace sweep
