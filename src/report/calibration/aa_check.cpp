#include "report/calibration/aa_check.h"

#include <algorithm>
#include <cmath>

#include "report/stats.h"

namespace sweep {

AaCheck aa_check(const std::map<int64_t, std::vector<double>>& by_seed) {
  AaCheck out;
  std::vector<SeedRun> twins;
  std::vector<double> means;
  for (const auto& [seed, values] : by_seed) {
    if (values.size() != 2) {
      continue;
    }
    out.largest_gap = std::max(out.largest_gap, std::abs(values[0] - values[1]));
    twins.push_back({seed, seed, 0, values[0]});
    twins.push_back({seed, seed, 1, values[1]});
    means.push_back((values[0] + values[1]) / 2);
    ++out.pairs;
  }
  if (out.pairs < 2) {
    out.sigma_repeat = out.sigma_seed = k_nan;
    return out;
  }
  out.sigma_repeat = variance_components(twins).sigma_repeat;
  const double var_means = std::pow(summarize(means).sd, 2);
  out.sigma_seed = std::sqrt(std::max(0.0, var_means - out.sigma_repeat * out.sigma_repeat / 2));
  return out;
}

}  // namespace sweep
