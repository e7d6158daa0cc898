#include "report/seeds.h"

#include <algorithm>
#include <cmath>

namespace sweep {

std::vector<double> values_of(const std::map<SeedKey, double>& by_seed) {
  std::vector<double> out;
  for (const auto& [key, v] : by_seed) {
    out.push_back(v);
  }
  return out;
}

bool same_seeds(const std::map<SeedKey, double>& a, const std::map<SeedKey, double>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](const auto& x, const auto& y) { return x.first == y.first; });
}

std::pair<std::vector<double>, std::vector<double>> common(const std::map<SeedKey, double>& a,
                                                           const std::map<SeedKey, double>& b) {
  std::pair<std::vector<double>, std::vector<double>> out;
  for (const auto& [key, v] : a) {
    if (const auto it = b.find(key); it != b.end()) {
      out.first.push_back(v);
      out.second.push_back(it->second);
    }
  }
  return out;
}

std::map<SeedKey, double> seed_values(const std::vector<ReportRun>& runs) {
  std::map<SeedKey, std::pair<double, int>> sums;
  for (const auto& r : runs) {
    if (r.value && std::isfinite(*r.value)) {
      auto& [sum, n] = sums[{r.init_seed, r.data_seed}];
      sum += *r.value;
      ++n;
    }
  }
  std::map<SeedKey, double> out;
  for (const auto& [key, s] : sums) {
    out[key] = s.first / s.second;
  }
  return out;
}

}  // namespace sweep
