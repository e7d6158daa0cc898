#include "report/pool/pool.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "report/ladder/ladder.h"
#include "report/stats.h"
#include "util/text.h"

namespace sweep {

namespace {

// The setting's measurement of each intervention: its variant at the baseline's grid point (with a
// tune axis: the analysis's variants are the study at the base value, each arm's at its own base —
// a key the baseline leaves unset, Muon's learning rate, set there).
void add_setting(const std::string& name, const ReportInput& in, const Analysis& a, Pool& pool,
                 std::map<std::string, std::vector<PoolSetting>>& by_intervention, std::vector<std::string>& order) {
  const VariantRuns* base = find_variant(in, in.baseline);
  if (base == nullptr) {
    return;
  }
  if (!measures_anything(a)) {
    pool.notes.push_back(name + ": no finished baseline run — left out");
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
  pool.settings.push_back(name);
  for (const VariantStats& v : a.variants) {
    const VariantRuns* runs = find_variant(in, v.name);
    if (v.is_baseline || runs == nullptr || (!a.tuned && runs->axes != base->axes)) {
      continue;
    }
    const std::string intervention = runs->intervention.empty() ? v.name : runs->intervention;
    if (!(v.seed_se > 0) || !std::isfinite(v.improvement) || v.seeds < 2) {
      pool.notes.push_back(name + ": " + intervention +
                           " left out — its improvement has no standard error over seeds (fewer than 2 of its seeds "
                           "paired with a finished baseline run)");
      continue;
    }
    if (!by_intervention.count(intervention)) {
      order.push_back(intervention);
    }
    by_intervention[intervention].push_back(
        {name, v.name, v.improvement, v.seed_se, v.seeds, finished(*runs), finished(*base)});
  }
}

std::string interval_text(double low, double high) {
  return "[" + format_number("%+.4f", low) + ", " + format_number("%+.4f", high) + "]";
}

}  // namespace

MetaResult pool_effects(const std::vector<PoolSetting>& settings, double level) {
  std::vector<double> y, se;
  std::vector<int64_t> seeds;
  for (const auto& s : settings) {
    y.push_back(s.effect);
    se.push_back(s.se);
    seeds.push_back(s.seeds);
  }
  MetaResult m = random_effects(y, pooled_noise_se(se, seeds), level);
  m.spread_p = welch_anova(y, se, seeds).second;
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

Pool pool_studies(const std::vector<PoolStudy>& studies, const Metric& metric, double alpha) {
  Pool pool;
  pool.metric = metric;
  std::map<std::string, std::vector<PoolSetting>> by_intervention;
  std::vector<std::string> order;
  for (const PoolStudy& s : studies) {
    const ReportInput& in = *s.input;
    const Analysis& a = *s.analysis;
    if (a.ladder) {
      for (size_t k = 0; k < a.rungs.size() && k < a.ladder->rungs.size(); ++k) {
        const std::string rung = a.ladder->rungs[k].name;
        const ReportInput rin = rung_input(in, rung);
        add_setting(in.sweep + "/" + rung, rin, a.rungs[k], pool, by_intervention, order);
      }
    } else {
      add_setting(in.sweep, in, a, pool, by_intervention, order);
    }
  }
  const double level = 1 - alpha;
  for (const std::string& name : order) {
    // the same runs in two settings (a sweep file copied, or two sweeps sharing an arm) count once;
    // settings that share the baseline's runs are correlated, and said
    std::vector<PoolSetting> settings;
    for (const auto& s : by_intervention[name]) {
      const auto same =
          std::find_if(settings.begin(), settings.end(), [&](const PoolSetting& t) { return t.runs == s.runs; });
      if (same != settings.end()) {
        pool.notes.push_back(name + ": " + s.setting + " has the same runs as " + same->setting + " — counted once");
        continue;
      }
      for (const auto& t : settings) {
        const auto shared = [&](const std::string& r) { return t.baseline_runs.count(r) > 0; };
        if (std::any_of(s.baseline_runs.begin(), s.baseline_runs.end(), shared)) {
          pool.notes.push_back(name + ": " + s.setting + " and " + t.setting +
                               " share baseline runs — their effects are "
                               "correlated, and the pool treats them as independent");
        }
      }
      settings.push_back(s);
    }
    if (settings.size() < 2) {
      pool.notes.push_back(name + ": measured in one setting (" + settings.front().setting + ") — not pooled");
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
        const MetaResult m = pool_effects(others, level);
        const double half = t_quantile(level, static_cast<double>(m.k) - 2) *
                            std::sqrt(m.tau2 + m.se * m.se + settings[j].se * settings[j].se);
        LeftOut l{settings[j].setting, settings[j].effect, m.mean - half, m.mean + half, false};
        l.covered = l.low <= l.effect && l.effect <= l.high;
        p.left_out.push_back(l);
      }
    }
    pool.pooled.push_back(std::move(p));
  }
  return pool;
}

}  // namespace sweep
