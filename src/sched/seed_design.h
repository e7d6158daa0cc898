// The seed design of a `sweep run`: what --until-decided needs the sweep file to declare, and the
// design a run goes on with — the file's, or the one an earlier --until-decided run of the sweep
// recorded, whose looks were judged by it and so may not change. Checked before anything is written.
#pragma once

#include <cstdint>
#include <optional>

#include "config/sweep_spec.h"
#include "store/store.h"

namespace sweep {

// --until-decided (`until_decided`, its cap `max_seeds`; 0: none given): a seed list of at least
// 2, a min_effect, a cap at or above the declared seeds and within SeedDesign::k_max_looks looks.
// --max-seeds alone is refused. Throws Error (bad input).
void check_until_decided(const SweepSpec& spec, bool until_decided, int64_t max_seeds);

// The file's design with its cap (4 × the declared seeds unless --max-seeds) — or, when the sweep
// was run --until-decided before (`recorded`), that design, which goes on unless --until-decided
// gives a new cap: refused (Error) when the file changed its seeds, min_effect, interventions or
// a variant's runs since, or asks for another cap.
SeedDesign seed_design(const SweepSpec& spec, bool until_decided, int64_t max_seeds,
                       const std::optional<SweepInfo>& recorded);

}  // namespace sweep
