#include "report/tuned/tuned.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "report/response.h"
#include "util/text.h"

namespace sweep {

namespace {

// Whether two variants sit at the same position of the tune axis: every tuned key has one value
// in both, except a key one of them ignores ("null": AdamW's runs leave train.muon_lr out).
bool same_position(const VariantRuns& a, const VariantRuns& b, const SweepAxis& tune) {
  for (const auto& key : tune.keys) {
    const auto x = a.axes.find(key), y = b.axes.find(key);
    const std::string u = x == a.axes.end() ? "null" : x->second, w = y == b.axes.end() ? "null" : y->second;
    if (u != w && u != "null" && w != "null") {
      return false;
    }
  }
  return true;
}

// Where a curve's best may lie beyond the values tried: its fitted minimum at an end of them, or
// its lowest measured mean there (a curve still falling at the last value: the quadratic's vertex
// inside is the fit's guess, not the data's). Empty when neither; else "below 0.0005" or
// "above 0.004".
std::string beyond_edge(const Response& r) {
  std::vector<const ResponsePoint*> measured;
  for (const auto& p : r.points) {
    if (!p.values.empty()) {
      measured.push_back(&p);
    }
  }
  if (measured.size() < 2 || !r.fit.fitted) {
    return "";
  }
  const double low = measured.front()->x, high = measured.back()->x;
  const auto lowest = std::min_element(measured.begin(), measured.end(), [](const ResponsePoint* a, const ResponsePoint* b) {
    return a->summary.mean < b->summary.mean;
  });
  const bool at_low = !r.fit.inside ? std::abs(r.fit.best - low) <= std::abs(r.fit.best - high) : (*lowest)->x == low;
  if (r.fit.inside && (*lowest)->x != low && (*lowest)->x != high) {
    return "";
  }
  // a value past that end was tried (its runs diverged, or have not finished): never extend past it
  if (at_low ? r.points.front().x < low : r.points.back().x > high) {
    return "";
  }
  char text[96];
  std::snprintf(text, sizeof text, "%s %g", at_low ? "below" : "above", at_low ? low : high);
  return text;
}

// A variant's runs that diverged.
int64_t diverged_runs(const VariantRuns& v) {
  return std::count_if(v.runs.begin(), v.runs.end(), [](const ReportRun& r) { return r.status == RunState::diverged; });
}

// One value an arm diverged at, as the notes and the outcome say it: "0.004 (2/5)", `also` inside the brackets.
std::string diverged_at(const TunedDivergence& d, const std::string& also = "") {
  return format_number("%g", d.value) + " (" + std::to_string(d.diverged) + "/" + std::to_string(d.runs) + also + ")";
}

}  // namespace

const SweepAxis* tune_axis(const ReportInput& in) {
  for (const auto& a : in.axes) {
    if (a.kind == AxisKind::tune) {
      return &a;
    }
  }
  return nullptr;
}

ReportInput base_value_input(const ReportInput& in) {
  const SweepAxis* tune = tune_axis(in);
  ReportInput out = in;
  if (tune == nullptr) {
    return out;
  }
  const VariantRuns* base = find_variant(in, in.baseline);
  out.variants.clear();
  if (base != nullptr) {
    for (const auto& v : in.variants) {
      if (same_position(v, *base, *tune)) {
        out.variants.push_back(v);
      }
    }
  }
  out.axes.erase(std::remove_if(out.axes.begin(), out.axes.end(), [](const SweepAxis& a) { return a.kind == AxisKind::tune; }),
                 out.axes.end());
  return out;
}

double tuned_value(const std::vector<std::pair<double, double>>& points) {
  if (points.empty()) {
    return k_nan;
  }
  const bool log_x = std::min_element(points.begin(), points.end())->first > 0;
  const std::optional<FittedCurve> c = fit_curve(points, log_x);
  return c ? c->q.at(argmin_on(c->q, c->lo, c->hi)) : k_nan;
}

ReportInput tuned_input(const ReportInput& in, std::vector<std::string>& notes) {
  const SweepAxis* tune = tune_axis(in);
  ReportInput out = base_value_input(in);
  if (tune == nullptr) {
    return out;
  }
  const ReportInput at_base = out;
  out.variants.clear();
  const std::optional<std::string> x = first_numeric_key(in, tune->keys);
  if (!x) {
    notes.push_back("no tuned key has a number in every variant: no tuned values");
    return out;
  }
  const std::string& x_key = *x;
  int64_t short_seeds = 0;
  for (const auto& [series, members] : series_along(in, tune->keys)) {
    // the arm's variant at the base value names it
    const auto named = std::find_if(at_base.variants.begin(), at_base.variants.end(),
                                    [&](const VariantRuns& v) { return series_of(v, tune->keys) == series; });
    if (named == at_base.variants.end()) {
      continue;
    }
    std::map<SeedKey, std::vector<std::pair<double, double>>> by_seed;
    std::set<SeedKey> planned;
    std::map<SeedKey, int64_t> numerics;  // the oldest numerics among a seed's runs: what pairing asks
    for (const VariantRuns* v : members) {
      const double value_x = *axis_number(v->axes.at(x_key));
      for (const auto& r : v->runs) {
        planned.insert({r.init_seed, r.data_seed});
        if (r.value) {
          const SeedKey seed{r.init_seed, r.data_seed};
          numerics[seed] = std::min(numerics.count(seed) ? numerics[seed] : int64_t{1} << 40, r.numerics.value_or(1));
        }
      }
      for (const auto& [seed, value] : seed_values(v->runs)) {
        by_seed[seed].push_back({value_x, value});
      }
    }
    VariantRuns arm = *named;
    arm.runs.clear();
    for (const SeedKey& seed : planned) {
      ReportRun r;
      r.run_id = named->name + "@" + std::to_string(seed.first) + "," + std::to_string(seed.second);
      r.init_seed = seed.first;
      r.data_seed = seed.second;
      const double value = by_seed.count(seed) ? tuned_value(by_seed.at(seed)) : k_nan;
      if (std::isfinite(value)) {
        r.status = RunState::done;
        r.value = value;
        r.numerics = numerics.at(seed);
      } else {
        r.status = RunState::pending;  // results at fewer than 3 values, so far
        ++short_seeds;
      }
      arm.runs.push_back(r);
    }
    out.variants.push_back(arm);
  }
  if (short_seeds > 0) {
    notes.push_back(plural(short_seeds, "seed") + " of the arms have no tuned value: results at fewer than 3 values of " +
                    x_key + " (unfinished or diverged runs), or a degenerate fit");
  }
  out.notes.clear();
  return out;
}

void judge_tuned_arm(TunedArm& arm, const Response* curve, const Response* baseline_curve, const std::string& key) {
  const std::string confounded = short_key(key) + "-confounded";
  // Unstable where the baseline trains: the plain table's rule ("diverged k/n"), value by value —
  // its best among the values it survives is no verdict on it.
  std::string unstable;
  for (const auto& d : arm.diverged) {
    if (d.baseline_trains) {
      unstable += (unstable.empty() ? "" : ", ") + diverged_at(d);
    }
  }
  if (!unstable.empty()) {
    arm.outcome = TunedOutcome::diverges;
    arm.at_best = Verdict::diverged;
    arm.why = "diverged at " + short_key(key) + " " + unstable + ", where the baseline trains: less stable, never equivalent";
    return;
  }
  if (curve == nullptr || !curve->fit.fitted) {
    arm.outcome = TunedOutcome::no_result;
    arm.why = "no best " + short_key(key) + ": " + (curve ? curve->fit.note : "no curve along " + key);
    return;
  }
  for (const Response* c : {curve, baseline_curve}) {
    if (const std::string beyond = c == nullptr ? "" : beyond_edge(*c); !beyond.empty()) {
      arm.outcome = TunedOutcome::extend_grid;
      arm.why = (arm.at_base == Verdict::baseline ? "" : confounded + ": ") + (c == curve ? "its" : "the baseline's") +
                " best " + short_key(key) + " may lie beyond the values tried — extend the grid " + beyond;
      return;
    }
  }
  if (arm.at_base != arm.at_best) {
    arm.outcome = TunedOutcome::confounded;
    arm.why = confounded + ": " + to_string(arm.at_base) + " at the base " + short_key(key) + ", " +
              to_string(arm.at_best) + " with each arm at its own best";
    return;
  }
  arm.outcome = TunedOutcome::agrees;
  if (arm.at_base == Verdict::baseline) {
    arm.why = "its best " + short_key(key) + " lies inside the values tried";
    return;
  }
  arm.why = std::string(to_string(arm.at_best)) + " at the base " + short_key(key) + " and at each arm's best";
}

Analysis analyze_tuned(const ReportInput& in) {
  const SweepAxis* tune = tune_axis(in);
  Analysis a = analyze_plain(base_value_input(in));
  if (tune == nullptr) {
    return a;
  }
  // the curves along the tune axis: each arm's best value
  ReportInput along = in;
  along.axes = {*tune};
  TunedSummary t;
  t.keys = tune->keys;  // the fits' x first
  if (const std::optional<std::string> x = first_numeric_key(in, tune->keys)) {
    std::stable_partition(t.keys.begin(), t.keys.end(), [&](const std::string& k) { return k == *x; });
  }
  const std::vector<Response> responses = find_responses(along, t.notes);
  a.responses.insert(a.responses.end(), responses.begin(), responses.end());
  const ReportInput best_input = tuned_input(in, t.notes);
  t.at_best = analyze_plain(best_input).variants;  // its notes would repeat the first table's, about made-up runs
  if (const VariantRuns* base = find_variant(in, in.baseline); base != nullptr && base->axes.count(t.keys.front())) {
    t.base_value = base->axes.at(t.keys.front());
  }
  const auto curve_of = [&](const std::string& series) -> const Response* {
    for (const auto& r : responses) {
      if (r.series == series) {
        return &r;
      }
    }
    return nullptr;
  };
  const auto verdict_in = [](const std::vector<VariantStats>& stats, const std::string& name) {
    for (const auto& s : stats) {
      if (s.name == name) {
        return s.verdict;
      }
    }
    return Verdict::no_result;
  };
  const VariantRuns* baseline = find_variant(best_input, in.baseline);
  const Response* baseline_curve = baseline ? curve_of(series_of(*baseline, tune->keys)) : nullptr;
  const auto arms = series_along(in, tune->keys);
  const auto value_of = [&](const VariantRuns& m) {
    return m.axes.count(tune->keys.front()) ? axis_number(m.axes.at(tune->keys.front())).value_or(0.0) : 0.0;
  };
  // the values where the baseline's runs all trained (none diverged, one at least finished)
  std::set<double> baseline_trains;
  for (const auto& [series, members] : arms) {
    if (baseline != nullptr && series == series_of(*baseline, tune->keys)) {
      for (const VariantRuns* m : members) {
        if (diverged_runs(*m) == 0 && std::any_of(m->runs.begin(), m->runs.end(), [](const ReportRun& r) { return r.value.has_value(); })) {
          baseline_trains.insert(value_of(*m));
        }
      }
    }
  }
  for (const auto& v : best_input.variants) {
    TunedArm arm;
    arm.arm = v.name;
    arm.series = series_of(v, tune->keys);
    for (const auto& [series, members] : arms) {
      if (series == arm.series) {
        // in the order of the values tried (the baseline's arm, first in the file, would lead with the base value)
        std::vector<std::pair<double, std::string>> by_value;
        for (const VariantRuns* m : members) {
          const auto x = m->axes.count(tune->keys.front()) ? axis_number(m->axes.at(tune->keys.front())) : std::nullopt;
          by_value.emplace_back(x.value_or(0.0), m->name);
        }
        std::stable_sort(by_value.begin(), by_value.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
        for (const auto& named : by_value) {
          arm.variants.push_back(named.second);
        }
        for (const VariantRuns* m : members) {
          TunedDivergence d;
          d.value = value_of(*m);
          d.runs = static_cast<int64_t>(m->runs.size());
          d.diverged = diverged_runs(*m);
          d.baseline_trains = baseline_trains.count(d.value) > 0;
          if (d.diverged > 0) {
            arm.diverged.push_back(d);
          }
        }
        std::sort(arm.diverged.begin(), arm.diverged.end(), [](const auto& l, const auto& r) { return l.value < r.value; });
      }
    }
    const Response* curve = curve_of(arm.series);
    if (curve != nullptr) {
      arm.fit = curve->fit;
    }
    // a 2× error in the value moves log x by ln 2 from the fitted minimum: a·ln²2 higher on the curve
    arm.sensitivity = arm.fit.fitted && arm.fit.inside && arm.fit.log_x ? arm.fit.curve.a * std::log(2.0) * std::log(2.0) : k_nan;
    arm.at_base = verdict_in(a.variants, v.name);
    arm.at_best = verdict_in(t.at_best, v.name);
    judge_tuned_arm(arm, curve, v.name == in.baseline ? nullptr : baseline_curve, t.keys.front());
    if (!arm.diverged.empty()) {  // said, for every arm, the baseline's too
      std::string where;
      for (const auto& d : arm.diverged) {
        where += (where.empty() ? "" : ", ") + diverged_at(d, d.baseline_trains ? ", where the baseline trains" : "");
      }
      t.notes.push_back(arm.arm + " diverged at " + short_key(t.keys.front()) + " " + where);
    }
    if (arm.outcome == TunedOutcome::diverges) {  // its verdict at its best, as the plain table's for a diverged seed
      for (auto& s : t.at_best) {
        s.verdict = s.name == arm.arm ? Verdict::diverged : s.verdict;
      }
    }
    t.arms.push_back(arm);
  }
  a.tuned = t;
  return a;
}

}  // namespace sweep
