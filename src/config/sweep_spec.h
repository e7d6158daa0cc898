// A sweep file: a baseline RunConfig (`base`), named interventions (dotted overrides of base),
// `combine` (variants made of several interventions), `grid` (cartesian axes over every
// variant), `zip` (axes varied together) and seeds. Loading validates the WHOLE sweep — every
// expanded run as a RunConfig, with errors at the file:line:col of the offending override —
// and expands it into runs with content-addressed ids. An expanded variant is named by what it
// changes: its intervention, then the axis values that differ from that intervention's own
// config ("clip+grad_accum=4"; the baseline's family drops its name: "grad_accum=4"), so the
// baseline keeps its bare name at the grid point equal to `base`, which must exist.
// Nothing here runs or writes anything.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/elimination.h"
#include "config/run_config.h"

namespace sweep {

struct Variant {
  std::string name;
  std::vector<Override> overrides;  // in application order
  std::string intervention;         // the named intervention or combination it expands
  std::vector<std::string> parts;   // a combination's interventions, in the file's order
  nlohmann::ordered_json axes = nlohmann::ordered_json::object();  // grid/zip key -> its resolved value
  // `branch: {at: f}`: its runs start at f of training from the baseline's checkpoint
  // (config/branch.h); 0: from scratch. Where the file said it.
  double branch_at = 0;
  Origin branch_origin{};
};

// One dimension of `grid` (a key), of `zip` (keys that vary together), of `tune` (keys tuned
// together: every variant at every value, each compared at its own best) or `scale` (the keys
// its rungs set, train.tokens among them when the ladder derives it).
struct SweepAxis {
  AxisKind kind = AxisKind::grid;
  std::vector<std::string> keys;  // dotted keys
};

// `scale:` — a ladder of model sizes. Every intervention runs at every rung (the rung's keys over
// base, then the intervention's), with the sweep's seeds, and is compared with the baseline at
// its own rung; the report follows each improvement across the rungs. A variant at a rung is
// named `<intervention>+<rung>` (the baseline's too); its axes hold {"scale": rung}.
struct Ladder {
  std::vector<std::string> rungs;  // names, smallest first
  double tokens_per_param = 0;     // > 0: each rung trains round(ratio × its baseline's parameters) tokens
  std::optional<TargetUnit> target_unit;  // none: no target
  double target = 0;               // where the report extrapolates each trend
  double beyond = 10;              // the report flags a target more than this factor past the largest rung

  nlohmann::json to_json() const;
  static Ladder from_json(const nlohmann::json& j);
};

struct PlannedRun {
  std::string variant;
  int64_t repeat = 0;  // 0.. for `repeat: k` (identical seeds, to measure nondeterminism)
  RunConfig config;    // resolved: base + overrides + seeds
  std::string run_id;  // hash of the config's identity (+ repeat)
};

// How many seeds each variant gets, and the effect that matters. A fixed design runs the declared
// seeds. `sweep run --until-decided` (a seed list only) runs them first, then adds `first` more
// at a time to the interventions still undecided and to the baseline, up to max_seeds: seed k
// (from 0) of a variant is the declared seeds' k-th, then max(declared) + 1, + 2, …
struct SeedDesign {
  int64_t first = 0;      // declared seeds per variant
  bool seed_list = true;  // `seeds: [...]` without repeats (init = data): seeds can be added
  int64_t max_seeds = 0;  // --until-decided: the most seeds per variant; 0: a fixed design
  double min_effect = 0;  // `min_effect:`, the smallest improvement that matters (the metric's units); 0: none
  double better_by = 0;   // `better_by:`, a margin an improvement must be shown to exceed (one-sided); 0: none
  double better_by_alpha = 0.05;  // `better_by_alpha:`, that one-sided test's level
  Spending spending = Spending::pocock;  // --until-decided's alpha spending
  int64_t interventions = 0;        // --until-decided: the variants alpha is split among (0: not recorded)
  std::map<std::string, std::string> variant_runs;  // --until-decided: each variant's first run id, as judged
  std::optional<EliminationDesign> eliminate;  // --eliminate: its rule's settings and the arms it stopped

  bool sequential() const { return max_seeds > 0; }
  // The most looks a design may have: the simulated boundaries keep every look of 400,000 studies.
  static constexpr int64_t k_max_looks = 64;
  // The seed counts at which a variant with n seeds was analysed: first, 2·first, … ≤ n, then n.
  std::vector<int64_t> looks(int64_t n) const;
};

// A model the study did not train, scored on the test split of the baseline's dataset (`sweep
// eval`'s way) so the report can show it beside the baseline, e.g. GPT-2's published weights.
struct ReferenceModel {
  std::string name;
  std::string model;   // the state dict file, as found from the sweep file's folder
  std::string config;  // a run's config.yaml for the architecture ("" = GPT-2's, from the shapes)
  int64_t n_head = 0;  // without config: 0 = the file's model_args, or GPT-2's published shapes' 64-wide heads
  bool ignore_extra = false;  // score it although it holds tensors the model does not have
};

struct SweepSpec {
  std::string file;
  std::string text;  // the sweep file as written
  std::string name;
  std::string baseline;
  std::vector<SweepAxis> axes;    // grid keys in the file's order, then the zip and the tune (a dimension each); or the scale
  std::optional<Ladder> ladder;   // `scale:`
  std::optional<TrainerSpec> trainer;  // `trainer:` a user's own program trains the runs (config/trainer.h)
  // `resources.device` as the file states it (in base, or alike in every variant): the kind of
  // device its runs must train on (sched/planning.h); none stated: the slots decide.
  std::optional<std::string> device;
  Origin device_origin;
  std::vector<Variant> variants;  // the baseline first
  std::vector<PlannedRun> runs;   // variants × seeds (× repeats)
  SeedDesign design;
  std::vector<ReferenceModel> references;
};

// The runs that take `variant` from its declared seeds to n seeds in all (none when n is not more
// than the declared seeds): copies of its first run with the next seeds, their ids recomputed.
std::vector<PlannedRun> added_seed_runs(const SweepSpec& spec, const std::string& variant, int64_t n);

// A run id: the first 16 hex digits of SHA-256 over the canonical identity JSON — as a worker of
// numerics version `numerics` had it, when given (a run folder trained by an older core).
std::string run_id_of(const RunConfig& config, int64_t repeat, std::optional<int64_t> numerics = std::nullopt);
// The pieces of run_id_of: the config's identity (RunConfig::identity_json) as a worker of numerics
// version `numerics` had it, and the id of an identity at a repeat.
nlohmann::json identity_at(const RunConfig& config, std::optional<int64_t> numerics);
std::string run_id_of_identity(nlohmann::json identity, int64_t repeat);

// Every run of `spec` trained on `device` ("cpu" or "cuda": the kind of the slots `sweep run` is
// given, which the workers train on whatever the file says), its id recomputed: the kind of
// device is part of what a run is (RunConfig::identity_json).
void train_on(SweepSpec& spec, const std::string& device);

// A dotted key's last part ("train.lr" -> "lr"), as variant names and reports show it.
std::string short_key(const std::string& path);

// Names become directory and table keys: letters, digits, '_', '-', '.', '+', '=' and ',',
// starting with a letter or digit, at most 100 characters.
bool is_safe_name(const std::string& name);

}  // namespace sweep
