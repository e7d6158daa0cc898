// The readers of a sweep file's sections — seeds, interventions, grid and zip, scale, references —
// and the checks of a ladder's rungs: the parts load_sweep (load_sweep.cpp) assembles a SweepSpec
// from. Internal to src/config.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/sweep_spec.h"

namespace sweep::sections {

// The top-level `seeds:`: (init, data) pairs, each run `repeat` times.
struct SeedPlan {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  int64_t repeat = 1;
};

// One point of the grid × zip: the axis overrides it adds, one per axis key (located at the
// key, as every override is), and where each value is written.
struct Combo {
  std::vector<Override> overrides;
  std::vector<Origin> values_at;
  std::string rung;  // a ladder's rung: names the variant instead of the axis values
};

// Where a node is written (file:line:col), and a diagnostic there.
Origin origin_of(const std::string& file, const YAML::Node& node);
Diagnostic at(const Origin& o, const std::string& message);

// A value as written: a scalar's text, else its flow YAML.
std::string scalar_text(const YAML::Node& value);

// `seeds:`: a list (init = data), or {init: [...], data: [...], repeat: k}.
SeedPlan read_seeds(const YAML::Node& node, Diagnostics& diags);

// Seeds are the sweep's (its top-level `seeds:`), never a variant's: a seed set in base or in an
// override would be replaced by the sweep's seeds without a word.
void refuse_seeds(const std::string& path, const YAML::Mark& at, Diagnostics& diags);

// A map of dotted overrides ({train.lr: 1e-3, ...}: an intervention, a rung), each located at its key.
std::vector<Override> read_overrides(const YAML::Node& node, const std::string& file, const std::string& where,
                                     Diagnostics& diags);

// A variant's, rung's or reference's name is safe as a table key and a file name (is_safe_name).
void check_name(const std::string& name, const YAML::Node& at, const std::string& what, Diagnostics& diags);

// "the sweep expands to more than N variants (...) — ...", for an expansion past --max-variants.
std::string too_many(size_t max_variants, const std::string& why);

// Reads `grid` (each key its own dimension), `zip` (its keys one dimension) and `tune` (the
// same, numbers only, 3 values or more: every variant at every value, each compared at its own
// best) into the points of their cartesian product, and the dimensions into `axes` — or stops,
// reporting it, before the points would pass `max_points`.
std::vector<Combo> read_axes(const YAML::Node& grid, const YAML::Node& zip, const YAML::Node& tune,
                             const std::string& file, std::vector<SweepAxis>& axes, size_t max_points, Diagnostics& diags);

// Reads `scale:` into the ladder and one point per rung, and the rung keys into `axes` (one
// dimension). The tokens a `tokens_per_param` ladder trains are set later, once the baseline's
// parameters at each rung are known (they depend on the dataset's vocabulary).
std::vector<Combo> read_scale(const YAML::Node& node, const std::string& file, std::vector<SweepAxis>& axes,
                              std::optional<Ladder>& ladder, Diagnostics& diags);

// references: {NAME: {model: FILE, config: RUN_CONFIG, n_head: N, ignore_extra: BOOL}}, files relative to the sweep file.
std::vector<ReferenceModel> read_references(const YAML::Node& node, const std::string& path, Diagnostics& diags);

// A ladder's rung `rung` as its baseline `c` (vocabulary filled in) has it: larger than the rung
// before (`previous`, the baseline one rung down), its tokens under `tokens_per_param`, and —
// at the smallest rung — below the target.
void check_rung(const YAML::Node& root, const std::string& path, const Ladder& ladder, size_t rung, const RunConfig& c,
                const RunConfig* previous, std::vector<int64_t>& rung_tokens, std::vector<Diagnostic>& problems);

}  // namespace sweep::sections
