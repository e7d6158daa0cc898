// What `sweep report` concludes: each variant against the baseline on one metric, ranked by
// improvement, with a verdict (better / worse / in the noise) and where the noise estimate came
// from; the response of the metric along each numeric grid/zip axis, with the best value; and
// whether combinations add up. Pure: the runs come in as values (report/load.h reads them from
// the database).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "config/sweep_spec.h"
#include "protocol/run_state.h"
#include "report/metric.h"
#include "report/stats.h"
#include "report/verdict.h"
#include "store/store.h"

namespace sweep {

// One run as the report sees it.
struct ReportRun {
  std::string run_id;
  RunState status = RunState::pending;
  int64_t init_seed = 0, data_seed = 0, repeat = 0;
  std::optional<double> value;  // the metric; empty unless the run finished with a finite value
  std::optional<double> test_loss, test_bpb, val_loss;
  int64_t tokens = 0;
  std::optional<double> tokens_per_s, wall_seconds;  // over the run's steps; over all its starts
  int64_t starts = 0;                                 // worker starts: 1 = trained in one go
  std::vector<std::string> codes;                     // the code versions that trained it ("<commit> numerics N")
  std::optional<int64_t> numerics;                    // the oldest numerics version among them; empty: unknown
  std::vector<std::pair<int64_t, double>> val_curve;  // (tokens, validation loss), finite points
  struct TrainPoint {
    int64_t tokens = 0;
    double loss = 0, grad_norm = 0;  // NaN when not finite
    double seconds = std::numeric_limits<double>::quiet_NaN();  // training time to the end of this step (NaN: unknown)
    double moe_load = std::numeric_limits<double>::quiet_NaN();  // MoE models: busiest expert ÷ mean load
    double lr = std::numeric_limits<double>::quiet_NaN();            // the step's learning rate (NaN: not recorded)
    double tokens_per_s = std::numeric_limits<double>::quiet_NaN();  // the step's own speed (NaN: not recorded)
  };
  std::vector<TrainPoint> train_curve;  // every optimizer step
  LossBlocks test_blocks;               // the test loss in blocks (empty: its worker did not say)
};

struct VariantRuns {
  std::string name;
  std::vector<ReportRun> runs;
  std::string intervention;                         // what it expands (its own name when not a grid point)
  std::vector<std::string> parts;                   // a combination's interventions
  std::map<std::string, std::string> axes;          // grid/zip key -> its value (JSON text)
  double batch_sequences = 0;                       // micro_batch × grad_accum × ranks (0: unknown)
  double params = 0, flops_per_token = 0;           // its model's parameters, training FLOPs per token (0: unknown)
  std::string model;                                // the model section of its config (JSON): its parameter set
  std::string dataset;                              // its config's data.dataset
  int64_t train_tokens = 0;                         // its config's train.tokens
  std::string trainer;                              // a user's trainer trained it: "name@version" ("" = sweep's core)
};

struct NoiseSource {
  std::string sweep;             // the --noise-from sweep
  std::vector<ReportRun> runs;   // its baseline's runs
};

struct ReportInput {
  std::string sweep, baseline;
  Metric metric;
  std::string file, spec;             // the sweep file's path and text as it was run
  std::vector<SweepAxis> axes;        // grid/zip dimensions
  std::optional<Ladder> ladder;       // a scale ladder: each rung judged on its own, then the trends
  std::vector<VariantRuns> variants;  // in the sweep file's order
  std::optional<NoiseSource> noise_from;
  double alpha = 0.05;
  SeedDesign design;               // as the sweep was last run; min_effect possibly from --min-effect
  MinEffectSource min_effect_source = MinEffectSource::none;
  bool better_by_option = false;   // the margin or its level from `sweep report`'s options, not the runner's design
  bool power = true;               // seeds for 80% and detectable effects (the calibration skips them)
  std::vector<std::string> notes;  // what loading found that the reader must know
  std::vector<ReferenceScore> references;  // models the sweep file names as references, as scored
};

// One observation per seed: the mean of a seed's finished runs (identical-seed repeats are one
// observation, not several), keyed by (init seed, data seed).
using SeedKey = std::pair<int64_t, int64_t>;
std::map<SeedKey, double> seed_values(const std::vector<ReportRun>& runs);

struct VariantStats {
  std::string name;
  int position = 0;  // in the sweep file: fixes the variant's colour in every plot
  bool is_baseline = false;
  int64_t runs = 0, finished = 0, diverged = 0;
  int64_t seeds = 0;             // observations: seeds with a finished run (repeats averaged)
  int64_t seeds_planned = 0;     // seeds among all its runs
  Summary summary;               // over the seeds' values
  Method method = Method::none;
  double improvement = 0;        // mean(baseline) − mean(variant): positive = better
  double ci_low = 0, ci_high = 0;
  double p = 0, p_holm = 0;      // NaN when there is no test (band, none, baseline)
  double correlation = 0;        // Pearson r of its per-seed values with the baseline's (NaN: < 3 common seeds)
  double prob_improvement = 0;   // share of seed pairs the variant wins
  int64_t seeds_needed = -1;     // for power 0.8 at the observed effect and alpha / interventions;
                                 // -1 when it cannot be said
  Verdict verdict = Verdict::undecided;
  bool below_min_effect = false; // better or worse, and yet shown smaller than the smallest effect of interest
  double p_equivalence = 0, p_equivalence_holm = 0;  // TOST within ±min_effect (fixed design); NaN: no test
  double p_better_by = 0, p_better_by_holm = 0;  // one-sided, improvement > better_by (fixed design); NaN: no test
  bool better_by = false;        // better, and shown better by more than the design's better_by margin
  std::vector<int64_t> looks;    // --until-decided: the seed counts it was analysed at
  std::string stopped;           // --until-decided: why it has the seeds it has
  bool halted = false;           // --until-decided: a look lacks a result; no seeds are added
  bool margin_open = false;      // --until-decided: better, its better_by margin neither shown nor out of reach,
                                 // below the cap: the runner adds seeds for it
  double seed_se = 0;            // standard error of the improvement from seed noise (the test's)
  double test_se = 0;            // ... from the finite test set (paired, test metrics; NaN: unknown)
  double tokens = 0, tokens_per_s = 0, wall_seconds = 0;  // means over runs that report them
  int64_t starts = 0;            // worker starts over its runs
};

// One metric's signal across a sweep's arms (report/signal.h).
struct MetricSignal {
  Metric metric;
  int64_t arms = 0, seeds = 0;  // arms with 2 or more seeds; seeds per arm (the median)
  double signal = 0;            // the sd of the arms' means
  double noise = 0;             // the seed-to-seed sd within an arm (pooled)
  double snr = 0;               // signal / noise
  double detectable = 0;        // the improvement these seeds detect with power 0.8, paired (median over the arms)
  bool compared = false;          // with min_effect: one is declared, in this metric's units (not bits per byte)
  bool hides_min_effect = false;  // detectable > min_effect: too noisy to separate the effect that matters
};

struct NoiseSummary {
  int64_t n = 0;             // seeds σ is computed from
  double sigma = 0;          // the σ of one seed's metric (NaN when unknown)
  std::string source;        // a sentence: where σ comes from
  VarianceComponents components;  // of the source's runs (NaN fields when not measured)
  int64_t seeds = 0;         // seeds per variant in this sweep (the most common count)
  double band = 0;           // ±t·σ·√(2/seeds), t for σ's n − 1 degrees of freedom: a one-seed comparison's 95% half-width
  double alpha = 0.05;       // the level of `detectable` and of the seeds-for-80% column: alpha / interventions
  double detectable = 0;     // smallest effect detectable with `seeds` seeds (power 0.8, at `alpha`), unpaired
  double test_se = 0;        // a baseline run's test-metric SE from the finite test set (median; NaN: unknown)
  int64_t test_blocks = 0;   // blocks of its test split
};

// The metric along one grid/zip dimension, for one series (an intervention, the other axes fixed).
struct ResponsePoint {
  std::string variant;
  double x = 0;
  std::map<SeedKey, double> values;  // one per seed
  Summary summary;
};
struct OptimumFit {
  bool fitted = false;
  std::string note;           // why there is no fit, or what to know about it
  bool log_x = true;          // fitted against log(x) (false: some x ≤ 0, fitted against x)
  Quadratic curve;            // metric ≈ curve(log x) (or curve(x))
  double fit_low = 0, fit_high = 0;  // the x's the curve was fitted over: its 3 values'
  double best = 0;            // where the fitted curve is lowest within the tried range
  bool inside = false;        // a true minimum inside the range (else the best lies at an end, or beyond)
  double ci_low = 0, ci_high = 0;  // bootstrap 95% over seeds (NaN with one seed)
  double share_inside = 0;    // of the resamples whose minimum lay inside the range
  int64_t seeds = 0, resamples = 0, points = 0;
};
struct Response {
  std::string label;               // "batch size (sequences)", or the axis key
  std::vector<std::string> keys;   // the dimension's keys
  std::string series;              // what the curve holds fixed
  bool log_x = false;              // x spans a factor ≥ 4 (and is positive): shown on a log axis
  std::vector<ResponsePoint> points;  // by x
  OptimumFit fit;
};

// A combination against the sum of its parts (each an improvement over the baseline).
struct Additivity {
  std::string variant;
  std::vector<std::string> parts;
  double combined = 0, sum_of_parts = 0, best_part = 0;
  double difference = 0, ci_low = 0, ci_high = 0;  // combined − sum, 95% CI
  Method method = Method::welch;  // paired when every side shares the seeds
  SumVerdict verdict = SumVerdict::unknown;
};

// The paired Δ-loss curve of an intervention: at each token count it was evaluated at, the
// improvement over the baseline's validation loss at the same seed (the baseline's curve
// interpolated linearly there), over the seeds both have.
struct DeltaCurve {
  std::string variant;
  int position = 0;
  std::vector<std::pair<int64_t, Summary>> points;  // tokens, improvement over seeds (95% t CI)
};

// Tokens-to-target: the tokens an intervention needs to reach the baseline's final validation
// loss (same seed; both curves interpolated linearly to the first crossing), as the share of the
// baseline's tokens it saves — 1 − tokens(variant) / tokens(baseline): 0.18 = 18% fewer. The same
// in training FLOPs (tokens × the model's FLOPs per token) and in measured training time.
struct TokensToTarget {
  std::string variant;
  int position = 0;
  int64_t seeds = 0, reached = 0;  // seeds compared; of them, those where the variant reaches it
  Summary saving;                  // over the seeds that reached it; its CI only when all did
  int64_t flops_reached = 0, time_seeds = 0, time_reached = 0;  // time: seeds whose runs have their steps' speeds
  Summary flops_saving, time_saving;
  std::vector<double> flops_speedups;  // per seed that reached it: the baseline's FLOPs to it ÷ the variant's
};

// An intervention against the baseline at equal compute: the final validation loss's improvement
// (baseline − variant, paired by seed, 95% t CI over seeds) at equal tokens, at equal training
// FLOPs and at equal measured training time — each at the smaller of the two runs' totals, the
// curves interpolated linearly there.
struct ComputeMatch {
  std::string variant;
  int position = 0;
  double flops_ratio = 0;  // its FLOPs per token ÷ the baseline's
  double time_ratio = 0;   // its training seconds per token ÷ the baseline's (mean over seeds; NaN: unknown)
  Summary at_tokens, at_flops, at_time;
};

// A scale ladder's rung, as its baseline has it.
struct RungInfo {
  std::string name;
  double params = 0, tokens = 0, flops = 0;  // parameters, training tokens, training FLOPs (flops/token × tokens)
};

// How one intervention's improvement changes across a ladder's rungs: an ordinary least squares
// line through every seed's paired improvement against x = log10(its rung's training FLOPs).
struct Trend {
  std::string intervention;
  int position = 0;
  std::vector<std::string> rung_variants;  // its variant at each rung ("" where it has none)
  int64_t pairs = 0, rungs = 0;            // the seeds paired with the baseline, over the rungs that have them
  double mean = 0;                          // the fitted improvement at the pairs' mean x
  double slope = 0, slope_low = 0, slope_high = 0;  // change of the improvement per 10× training FLOPs, 95% CI
  double df = 0, p = 0, p_holm = 0;         // the intervention × scale interaction: slope ≠ 0 (t-test, Holm)
  double change = 0;                        // slope × the ladder's span in decades: the change across it
  double p_holds = 0, p_holds_holm = 0;     // TOST: the change lies within ±min_effect (NaN: no min_effect)
  double low_end = 0, low_end_lo = 0, low_end_hi = 0;     // the line at the smallest rung, 95% CI
  double high_end = 0, high_end_lo = 0, high_end_hi = 0;  // ... at the largest
  double crossover = 0, crossover_low = 0, crossover_high = 0;  // FLOPs where the line crosses 0 (Fieller CI; NaN: none/unbounded)
  double tau = 0;                           // the rungs' scatter about the line beyond seed noise
  double at_target = 0, target_low = 0, target_high = 0;  // extrapolated improvement, 95% prediction interval
  TrendVerdict verdict = TrendVerdict::no_result;
  std::string why;  // the verdict's reason, in words
  std::vector<std::vector<double>> paired;  // per rung: its seeds' paired improvements (the line's data)
};

// How an intervention's speed-up changes across a ladder's rungs: at each rung, the training FLOPs
// the baseline needs to reach its final validation loss ÷ the FLOPs the intervention needs (per
// seed; the seeds whose intervention reaches it), and a line through their natural logarithms
// against log10(the rung's training FLOPs) — `line`'s values are ln(speed-up), its slope the
// change of ln(speed-up) per 10× FLOPs; no `holds` (no margin is declared for speed-ups).
struct SpeedupTrend {
  std::string intervention;
  std::vector<std::string> rung_variants;  // as its Trend's
  std::vector<int64_t> seeds, reached;     // per rung: the seeds compared, those that reached the target
  std::vector<double> at_rung;             // per rung: the geometric mean speed-up (NaN: no seed reached it)
  Trend line;
};

// A ladder's backtest (report/backtest.h): one rung hidden, each intervention's improvement there
// predicted from the rungs below it and compared with what the rung measured.
struct BacktestPrediction {
  std::string intervention;
  double measured = 0;                // the hidden rung's mean paired improvement
  int64_t seeds = 0;                  // ... over that many seeds
  double trend = 0, pi_low = 0, pi_high = 0;  // the line through the rungs below, read at the hidden rung; 95% PI
  double single = 0;                  // the largest rung below's mean paired improvement (the single-scale rule)
};
struct BacktestRow {
  std::string sweep, hidden;          // the ladder and the rung hidden
  int64_t rungs_below = 0;            // the rungs the predictions come from
  double compute_ratio = 0;           // training FLOPs of the largest rung below ÷ the hidden rung's
  std::vector<BacktestPrediction> predictions;  // the interventions with results on both sides
  // shares over the interventions (sign) and over pairs of arms, the baseline one of them (decision
  // accuracy, as DataDecide defines it); NaN where there is nothing to compare
  double trend_sign = 0, single_sign = 0, trend_accuracy = 0, single_accuracy = 0;
  int64_t arm_pairs = 0;
  double coverage = 0;                // share of the trend's 95% PIs that hold the measured improvement
};
struct Backtest {
  std::vector<BacktestRow> rows;      // every rung with 2 or more rungs below it, smallest first
  std::string why;                    // when there are none: what is missing
  std::vector<std::string> unscored;  // rungs not hidden, and why: no more FLOPs than the rung below
};

struct LadderSummary {
  Ladder ladder;
  std::vector<RungInfo> rungs;
  double target_flops = 0;   // the target in training FLOPs (NaN: none)
  double target_factor = 0;  // the target ÷ the largest rung, in the target's unit
  bool far = false;          // target_factor > ladder.beyond
  std::string target_rule;   // how a params target became FLOPs
  std::vector<Trend> trends;  // in the sweep file's order
  std::vector<SpeedupTrend> speedups;  // the same interventions, in FLOPs to the baseline's final loss
  Backtest backtest;          // every rung that can be hidden, predicted from the rungs below it
};

// An arm of a sweep with a tune axis (report/tuned.h): an intervention, the other axes fixed.
// Where an arm's runs diverged along the tune axis: at one value, how many of how many, and whether
// the baseline's runs all trained there.
struct TunedDivergence {
  double value = 0;
  int64_t diverged = 0, runs = 0;
  bool baseline_trains = false;
};

struct TunedArm {
  std::string arm;             // its variant at the base value: its name in both tables
  std::string series;          // its curve along the tune axis (Response::series)
  std::vector<std::string> variants;  // its variants, one per value tried (--until-decided adds seeds to all)
  OptimumFit fit;              // along the tune axis, over all its seeds
  double sensitivity = 0;      // the loss a 2× error in the value costs at the fitted best (NaN: no minimum inside)
  Verdict at_base = Verdict::undecided, at_best = Verdict::undecided;
  TunedOutcome outcome = TunedOutcome::no_result;
  std::string why;             // the outcome in words
  std::vector<TunedDivergence> diverged;  // the values where some of its runs diverged, in order
};

struct TunedSummary {
  std::vector<std::string> keys;     // the tuned keys (the first is the fits' x)
  std::string base_value;            // the baseline's value of the first key
  std::vector<VariantStats> at_best;  // each arm's per-seed tuned values against the baseline's, ranked
  std::vector<TunedArm> arms;        // in the sweep file's order, the baseline first
  std::vector<std::string> notes;    // what the tuned comparison's reader must know
};

struct Analysis {
  std::string sweep, baseline;
  Metric metric;
  double alpha = 0.05;
  SeedDesign design;
  MinEffectSource min_effect_source = MinEffectSource::none;
  bool better_by_option = false;  // the margin from `sweep report`'s options: not one the runner added seeds for
  double suggested_min_effect = 0;     // the effect these seeds detect with power 0.8 (median; NaN: unknown)
  std::vector<VariantStats> variants;  // ranked: best improvement first, no-result variants last
  NoiseSummary noise;
  std::vector<MetricSignal> signals;  // per metric recorded, highest signal-to-noise first
  std::vector<Response> responses;
  std::vector<Additivity> additivity;
  std::vector<DeltaCurve> deltas;         // per intervention with paired validation curves
  std::vector<TokensToTarget> targets;
  std::vector<ComputeMatch> matched;      // per intervention with paired validation curves
  std::string code;                    // which code trained the sweep's runs (a sentence)
  std::vector<std::string> notes;      // things the reader must know (diverged runs, unpaired seeds...)
  std::vector<ReferenceScore> references;  // scored on the test split: shown beside the baseline
  // A scale ladder: each rung's own analysis (variants judged against the baseline at the rung),
  // and the trends across them. `variants` then holds every rung's variants, rung by rung.
  std::vector<Analysis> rungs;
  std::optional<LadderSummary> ladder;
  std::optional<TunedSummary> tuned;  // a tune axis: the verdicts at each arm's own best (`variants`: at the base value)
};

// The report's analysis of a sweep: a dispatcher over the three kinds — a scale ladder's
// (analyze_ladder), a tune axis's (analyze_tuned) and the plain one — which call the plain one,
// never this.
Analysis analyze(const ReportInput& input);
// The plain analysis: every variant against the baseline, as one study (no ladder, no tune axis).
Analysis analyze_plain(const ReportInput& input);

// What an analysis states before its rows, as the input gives it: the sweep, its baseline, metric,
// alpha and design, its notes and references (the noise and everything after are analyze's).
Analysis analysis_header(const ReportInput& in);

// The level each intervention's power figures are computed at: alpha split across the
// interventions (Bonferroni, a bound on Holm's first step).
double alpha_each(const ReportInput& in);

// The variant of that name (null: none).
const VariantRuns* find_variant(const ReportInput& in, const std::string& name);

// A ladder's analysis (report/ladder.cpp): each rung as a study of its own, then the trends.
Analysis analyze_ladder(const ReportInput& input);
// The variants of one rung as a study of their own: the ladder's input, its baseline the rung's.
ReportInput rung_input(const ReportInput& input, const std::string& rung);
// The line through paired improvements d[r] (baseline − variant, one per seed) at x[r] =
// log10(rung r's training FLOPs): everything but the Holm-adjusted p-values and the verdict.
// `x_target` NaN: no extrapolation.
// `min_rungs`: the fewest rungs with pairs it fits (2: the backtest's, whose scatter between rungs
// then cannot be told from seed noise and counts all of it). `new_seeds` > 0: the prediction
// interval at x_target is for the mean of that many new seeds there (their noise added), not
// for the line itself.
Trend fit_trend(const std::vector<double>& x, const std::vector<std::vector<double>>& d, double min_effect,
                double x_target, double level = 0.95, int64_t min_rungs = 3, double new_seeds = 0);
// The verdict from the Holm-adjusted p-values: flips sign, grows or shrinks when the slope differs
// from 0 (flips when the line's 95% CIs at the two ends exclude 0 on opposite sides); holds when
// the change across the ladder is shown within ±min_effect; else undecided.
void judge_trend(Trend& t, double alpha, double min_effect);

}  // namespace sweep
