// `sweep check`'s statistics: the sweep's baseline trained twice with each of a few seeds (an A/A
// test) — whether the twins agree to the last digit, the run-to-run noise σ_repeat and the seed
// noise σ_seed net of it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace sweep {

struct AaCheck {
  int pairs = 0;            // seeds with both twins finished
  double largest_gap = 0;   // the largest |twin − twin|: 0 = deterministic given its seeds
  double sigma_repeat = 0;  // pooled within-seed σ (report/stats.h variance_components)
  double sigma_seed = 0;    // σ between seeds: the seed means' variance holds σ_seed² + σ_repeat²/2
};

// `by_seed`: each seed's finished values (a seed without both twins counts in no figure).
// pairs < 2: too few to say more (σ NaN).
AaCheck aa_check(const std::map<int64_t, std::vector<double>>& by_seed);

}  // namespace sweep
