#include "sched/seed_design.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "config/branch.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

void check_until_decided(const SweepSpec& spec, bool until_decided, int64_t max_seeds) {
  if (!until_decided) {
    if (max_seeds > 0) {
      throw Error("--max-seeds " + std::to_string(max_seeds) + " needs --until-decided (it caps the seeds that adds)",
                  Exit::bad_input);
    }
    return;
  }
  const SeedDesign& d = spec.design;
  if (any_branched(spec)) {
    throw Error("--until-decided: " + spec.file + " branches its interventions from the baseline's checkpoint "
                "(`branch:`), and seeds added round by round are not branched yet — run it without --until-decided",
                Exit::bad_input);
  }
  if (!d.seed_list) {
    throw Error("--until-decided: " + spec.file + " declares seeds as {init, data} or with repeat; seeds are added "
                "to a list — write seeds: [1, 2, 3] (init = data) to use it", Exit::bad_input);
  }
  if (d.first < 2) {
    throw Error("--until-decided: " + spec.file + " declares 1 seed; the first look needs at least 2 per variant to "
                "measure the seed noise — declare seeds: [1, 2] or more", Exit::bad_input);
  }
  if (d.min_effect <= 0) {
    throw Error("--until-decided: " + spec.file + " declares no min_effect — without the smallest improvement that "
                "matters no intervention can be decided equivalent, and every one without an effect would run to the "
                "cap; add e.g. `min_effect: 0.01` (in test_loss's units) to it", Exit::bad_input);
  }
  if (max_seeds > 0 && max_seeds < d.first) {
    throw Error("--max-seeds " + std::to_string(max_seeds) + " is below the " + std::to_string(d.first) +
                " seeds " + spec.file + " declares: pass at least " + std::to_string(d.first), Exit::bad_input);
  }
  if (const int64_t cap = max_seeds > 0 ? max_seeds : 4 * d.first;
      (cap + d.first - 1) / d.first > SeedDesign::k_max_looks) {
    throw Error("--max-seeds " + std::to_string(cap) + " gives more than " + std::to_string(SeedDesign::k_max_looks) +
                    " looks of " + std::to_string(d.first) + " seeds: declare more seeds in " + spec.file +
                    " or pass a lower --max-seeds",
                Exit::bad_input);
  }
}

SeedDesign seed_design(const SweepSpec& spec, bool until_decided, int64_t max_seeds,
                       const std::optional<SweepInfo>& recorded) {
  SeedDesign d = spec.design;
  if (!recorded || !recorded->design.sequential()) {
    d.max_seeds = !until_decided ? 0 : max_seeds > 0 ? max_seeds : 4 * d.first;
    return d;
  }
  const SeedDesign& was = recorded->design;
  d.max_seeds = until_decided && max_seeds > 0 ? max_seeds : was.max_seeds;
  d.spending = was.spending;  // its looks were judged so
  const auto interventions = static_cast<int64_t>(spec.variants.size()) - 1;
  // the margin decides seeds too: a better intervention with its margin open gets more
  const bool margin_changed = d.better_by != was.better_by || (was.better_by > 0 && d.better_by_alpha != was.better_by_alpha);
  if (d.max_seeds != was.max_seeds || d.min_effect != was.min_effect || d.first != was.first || margin_changed ||
      (was.interventions > 0 && was.interventions != interventions)) {
    char buf[320];
    std::snprintf(buf, sizeof buf, "%lld seeds, min_effect %g%s and --max-seeds %lld, alpha split among %lld interventions",
                  static_cast<long long>(was.first), was.min_effect,
                  was.better_by > 0 ? (", better_by " + format_number("%g", was.better_by) + " at " +
                                       format_number("%g", was.better_by_alpha)).c_str()
                                    : ", no better_by",
                  static_cast<long long>(was.max_seeds), static_cast<long long>(was.interventions));
    throw Error("sweep " + spec.name + " was run --until-decided with " + buf +
                    ": its looks were judged by those, so they stay — run it with them, or rename the sweep (sweep:) "
                    "for a new design",
                Exit::bad_input);
  }
  for (const auto& [variant, run_id] : was.variant_runs) {  // a variant is what its runs train
    const auto same = std::find_if(spec.runs.begin(), spec.runs.end(),
                                   [&](const PlannedRun& r) { return r.variant == variant && r.run_id == run_id; });
    if (same == spec.runs.end()) {
      throw Error("sweep " + spec.name + " was run --until-decided, and " + spec.file + " changes (or drops) '" +
                      variant + "' since its looks were judged — run it unchanged, or rename the sweep (sweep:) for "
                      "a new design",
                  Exit::bad_input);
    }
  }
  return d;
}

}  // namespace sweep
