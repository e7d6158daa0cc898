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
  pool.settings.push_back(name);
  for (const VariantStats& v : a.variants) {
    const VariantRuns* runs = find_variant(in, v.name);
    if (v.is_baseline || runs == nullptr || (!a.tuned && runs->axes != base->axes)) {
      continue;
    }
    const std::string intervention = runs->intervention.empty() ? v.name : runs->intervention;
    if (!(v.seed_se > 0) || !std::isfinite(v.improvement) || v.seeds < 2) {
      pool.notes.push_back(name + ": " + intervention +
                           " left out — its improvement has no standard error over seeds (" +
                           plural(v.seeds, "seed") + " paired with the baseline's)");
      continue;
    }
    if (!by_intervention.count(intervention)) {
      order.push_back(intervention);
    }
    by_intervention[intervention].push_back({name, v.name, v.improvement, v.seed_se, v.seeds});
  }
}

MetaResult meta_of(const std::vector<PoolSetting>& settings, double level) {
  std::vector<double> y, se;
  std::vector<int64_t> seeds;
  for (const auto& s : settings) {
    y.push_back(s.effect);
    se.push_back(s.se);
    seeds.push_back(s.seeds);
  }
  return random_effects(y, pooled_noise_se(se, seeds), level);
}

std::string interval_text(double low, double high) {
  return "[" + format_number("%+.4f", low) + ", " + format_number("%+.4f", high) + "]";
}

}  // namespace

void judge_pooled(PooledIntervention& p, double alpha) {
  const MetaResult& m = p.meta;
  const std::string pi = interval_text(m.pi_low, m.pi_high);
  if (m.k < 3) {
    p.verdict = PoolVerdict::undecided;
    p.why = plural(m.k, "setting") + ": no prediction interval for a new one (it needs 3)";
  } else if (m.pi_low > 0 || m.pi_high < 0) {
    p.verdict = PoolVerdict::holds;
    p.why = std::string(m.pi_low > 0 ? "better" : "worse") + " in a new setting like these: " + pi;
  } else if (m.q_p < alpha) {
    p.verdict = PoolVerdict::varies;
    p.why = "the settings differ beyond their seed noise (Q p " + format_number("%.2g", m.q_p) + ", τ " +
            format_number("%.4f", std::sqrt(m.tau2)) + "); a new setting's effect in " + pi;
  } else {
    p.verdict = PoolVerdict::undecided;
    p.why = "a new setting's effect in " + pi + ": its sign is not shown, nor that the settings differ";
  }
}

Pool pool_studies(const std::vector<PoolStudy>& studies, double alpha) {
  Pool pool;
  std::map<std::string, std::vector<PoolSetting>> by_intervention;
  std::vector<std::string> order;
  for (const PoolStudy& s : studies) {
    const ReportInput& in = *s.input;
    const Analysis& a = *s.analysis;
    if (pool.settings.empty()) {
      pool.metric = a.metric;
    }
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
    const auto& settings = by_intervention[name];
    if (settings.size() < 2) {
      pool.notes.push_back(name + ": measured in one setting (" + settings.front().setting + ") — not pooled");
      continue;
    }
    PooledIntervention p;
    p.intervention = name;
    p.settings = settings;
    p.meta = meta_of(settings, level);
    judge_pooled(p, alpha);
    if (settings.size() >= 4) {
      for (size_t j = 0; j < settings.size(); ++j) {
        std::vector<PoolSetting> others = settings;
        others.erase(others.begin() + static_cast<std::ptrdiff_t>(j));
        const MetaResult m = meta_of(others, level);
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
