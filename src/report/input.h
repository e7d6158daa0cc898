// What a report is computed from: a sweep's runs by variant, as values (report/load.h reads them
// from the database), with the design and options they are judged under; and the lookups every
// part of the analysis shares. The bottom of report/ above its base (report/README.md).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/sweep_spec.h"
#include "protocol/run_state.h"
#include "report/metric.h"
#include "report/stats.h"
#include "report/verdict.h"
#include "store/store.h"

namespace sweep {

// A seed as pairing reads it: (init seed, data seed).
using SeedKey = std::pair<int64_t, int64_t>;

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
  int64_t end_tokens = 0;                           // the tokens its runs end at: whole steps of them (0: unknown)
  // Its runs branched from the baseline's at this many tokens (config/branch.h; 0: trained from step 0)
  int64_t branch_tokens = 0;
  int64_t branch_step = 0;
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

// The level each intervention's power figures are computed at: alpha split across the
// interventions (Bonferroni, a bound on Holm's first step).
double alpha_each(const ReportInput& in);

// The variant of that name (null: none).
const VariantRuns* find_variant(const ReportInput& in, const std::string& name);

}  // namespace sweep
