// `sweep pool`: does an intervention's effect carry across settings? Each setting — a sweep, or a
// rung of a ladder — measures an intervention's paired improvement over its baseline (at the
// baseline's grid point) with its standard error over seeds; an intervention measured in two or
// more settings is pooled by random effects (report/pool/meta.h): the pooled effect, the spread τ
// between settings, and a prediction interval for a new setting. With 4 or more settings each is
// also left out in turn and its measured effect compared with the interval from the others.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "report/analysis.h"
#include "report/input.h"
#include "report/pool/meta.h"

namespace sweep {

// holds: the prediction interval for a new setting excludes 0 (the effect keeps its sign);
// varies: the settings differ beyond their seed noise (Q test) and the interval holds 0;
// undecided: neither, or fewer than 3 settings (no prediction interval).
enum class PoolVerdict { holds, varies, undecided };
constexpr const char* to_string(PoolVerdict v) {
  switch (v) {
    case PoolVerdict::holds: return "holds across settings";
    case PoolVerdict::varies: return "varies with the setting";
    case PoolVerdict::undecided: return "undecided";
  }
  return "undecided";
}

// One setting's measurement of an intervention.
struct PoolSetting {
  std::string setting;       // the sweep, "sweep/rung" for a ladder's rung
  std::string intervention;  // what is pooled across settings
  std::string variant;       // its variant there
  double effect = 0, se = 0;  // paired improvement (baseline − variant) and its standard error
  int64_t seeds = 0;
  std::set<std::string> runs{}, baseline_runs{};  // the finished runs of the variant and of its baseline
  // Its per-seed values and its baseline's (a seed's repeats averaged): two settings equal in these, to
  // rounding, measured the same thing (a key that does not change training) and are one setting.
  std::map<SeedKey, double> values{}, baseline_values{};
  // Their test losses, where the runs are read (not a report.json): the same training measured on
  // another metric (val_lastK of runs that differ only in eval.every) is recognised by these.
  std::map<SeedKey, double> test_values{}, baseline_test_values{};
  int64_t runs_planned = 0, diverged = 0;  // its runs, and those that diverged (never pooled on its survivors)
  std::string eliminated{};  // where --eliminate stopped it ("" when it did not): no final result
};

// A setting left out: its measured effect against the prediction interval from the others, its
// own standard error added (the interval is for what it measured).
struct LeftOut {
  std::string setting;
  double effect = 0, low = 0, high = 0;
  bool covered = false;
};

struct PooledIntervention {
  std::string intervention;
  std::vector<PoolSetting> settings;
  MetaResult meta;
  PoolVerdict verdict = PoolVerdict::undecided;
  std::string why;
  std::vector<LeftOut> left_out;  // 4 or more settings
};

struct Pool {
  Metric metric;
  std::vector<std::string> settings;          // every setting read, in order
  std::vector<PooledIntervention> pooled;     // in order of first appearance
  std::vector<std::string> notes;             // single-setting interventions, settings left out, and why
};

// One study as pooling reads it: its input and its analysis (a ladder's rungs are settings each).
struct PoolStudy {
  const ReportInput* input = nullptr;
  const Analysis* analysis = nullptr;
};

// What one study measured, ready to pool: its settings (a ladder's rungs), each intervention's
// measurement there, and what was left out and why.
struct Measured {
  std::vector<std::string> settings;
  std::vector<PoolSetting> measured;
  std::vector<std::string> notes;
};

// Why a setting's measurement cannot be pooled, in a note naming the setting and the intervention
// ("" when it can): --eliminate stopped it (no final result), a run of it diverged (`sweep report`
// never judges an arm on its survivors), no finished run paired with the baseline's yet, no
// standard error over seeds, or one of 0 (the same improvement on every seed).
std::string unpoolable(const PoolSetting& s);

// The note of a setting left out whole: `diverged` of its baseline's `runs` diverged (an arm is never
// judged against its baseline's survivors).
std::string baseline_diverged(const std::string& setting, int64_t diverged, int64_t runs);

// Whether two measurements are one: the same finished runs, or the same (baseline, arm) values of
// their paired seeds, whatever the seeds are called, to rounding (a relative 1e-9) — on the metric, or
// on the test loss (the same training).
bool same_measurement(const PoolSetting& a, const PoolSetting& b);
// Whether two settings share runs of the arm (a sweep and its copy with a seed more): one experiment.
bool shares_runs(const PoolSetting& a, const PoolSetting& b);

// A standard error treated as the 0 it approximates: below k_negligible_se_ratio of the largest of
// the intervention's settings' errors — with 3 seeds a setting's sampling variance falls to a
// millionth of the true one (its SE to a thousandth) once in a million (χ²₂ below 2·10⁻⁶), so such an
// error is no seed noise but an arm the seeds do not move — or below k_rounding_se of its baseline's
// loss, where an improvement is the rounding of a float's loss (a change of summation order alone).
// Weighed by either, Welch's test calls any two settings different (p 0).
constexpr double k_negligible_se_ratio = 1e-3;
constexpr double k_rounding_se = 1e-6;

// A study from its runs. A study that measures nothing (no finished baseline run, at a rung of a
// ladder too) is left out and said.
Measured measure_study(const PoolStudy& study);

// Each intervention measured in two or more settings pooled, in order of first appearance; the
// same runs in two settings count once.
Pool pool_measured(const std::vector<Measured>& studies, const Metric& metric, double alpha = 0.05);

// measure_study of each, pooled; a study with the same runs as one before it (a sweep file copied
// under another name) pooled once, and said — as `sweep pool` does.
Pool pool_studies(const std::vector<PoolStudy>& studies, const Metric& metric, double alpha = 0.05);

// Whether a study has a finished baseline run on its metric (at some rung of a ladder): else it
// measures nothing to pool.
bool measures_anything(const Analysis& a);

// The settings pooled: weights, τ², the pooled effect and the prediction interval from the seed
// variance pooled over the settings (pooled_noise_se); whether they differ — the test of "varies" —
// by Welch's ANOVA on each setting's own standard error and seeds (welch_anova).
MetaResult pool_effects(const std::vector<PoolSetting>& settings, double level = 0.95);

// The verdict of a pooled intervention at `alpha` (the level of its intervals: 1 − alpha).
void judge_pooled(PooledIntervention& p, double alpha);

}  // namespace sweep
