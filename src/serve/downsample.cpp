#include "serve/downsample.h"

#include <algorithm>
#include <cmath>

namespace sweep {

std::vector<size_t> minmax_keep(const std::vector<double>& x, const std::vector<double>& y, size_t buckets) {
  const size_t n = std::min(x.size(), y.size());
  std::vector<size_t> keep;
  if (n <= 2 * buckets + 2 || buckets == 0) {
    keep.resize(n);
    for (size_t i = 0; i < n; ++i) {
      keep[i] = i;
    }
    return keep;
  }
  const double x0 = x.front(), span = x.back() - x.front();
  keep.push_back(0);
  size_t i = 1;
  for (size_t b = 0; b < buckets && i < n - 1; ++b) {
    // bucket b holds the inner points with x < x0 + span × (b + 1) / buckets (the last takes the rest)
    const double end = b + 1 == buckets ? INFINITY : x0 + span * static_cast<double>(b + 1) / static_cast<double>(buckets);
    size_t lo = n, hi = n;
    for (; i < n - 1 && x[i] < end; ++i) {
      if (!std::isfinite(y[i])) {
        continue;
      }
      if (lo == n || y[i] < y[lo]) {
        lo = i;
      }
      if (hi == n || y[i] > y[hi]) {
        hi = i;
      }
    }
    if (lo != n) {
      keep.push_back(std::min(lo, hi));
      if (hi != lo) {
        keep.push_back(std::max(lo, hi));
      }
    }
  }
  keep.push_back(n - 1);
  return keep;
}

std::vector<size_t> minmax_keep_all(const std::vector<double>& x, const std::vector<const std::vector<double>*>& ys,
                                    size_t buckets) {
  std::vector<size_t> keep;
  for (const auto* y : ys) {
    const auto k = minmax_keep(x, *y, buckets);
    keep.insert(keep.end(), k.begin(), k.end());
  }
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  return keep;
}

size_t shared_buckets(size_t buckets, size_t curves) {
  constexpr size_t k_points = 200000, k_least = 25;
  return std::min(buckets, std::max(k_least, k_points / std::max<size_t>(1, 2 * curves)));
}

}  // namespace sweep
