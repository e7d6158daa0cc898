// A variant's runs as one value per seed, and how two variants' seeds meet: what every
// comparison in the report reads.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "report/input.h"

namespace sweep {

// One observation per seed: the mean of a seed's finished runs (identical-seed repeats are one
// observation, not several), keyed by (init seed, data seed).
std::map<SeedKey, double> seed_values(const std::vector<ReportRun>& runs);

// The per-seed values, in seed order.
std::vector<double> values_of(const std::map<SeedKey, double>& by_seed);

// Whether `a` and `b` have exactly the same seeds.
bool same_seeds(const std::map<SeedKey, double>& a, const std::map<SeedKey, double>& b);

// The values of `a` and `b` at the seeds both have, in one order.
std::pair<std::vector<double>, std::vector<double>> common(const std::map<SeedKey, double>& a,
                                                           const std::map<SeedKey, double>& b);

}  // namespace sweep
