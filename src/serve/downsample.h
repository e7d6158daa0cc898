// Curves thinned to what a chart can draw, keeping their extremes: the x range is cut into
// `buckets` equal spans and each span keeps the point with the smallest and the one with the
// largest y, in x order, so a spike or a dip survives however far a 2,000-step curve is thinned
// (plain every-k-th sampling hides both). The first and last points are always kept. Pure.
#pragma once

#include <cstddef>
#include <vector>

namespace sweep {

// The indices of the points to keep, ascending. `x` ascending, `y` the same length; a point whose
// y is not finite is never a bucket's extreme, so a thinned curve loses its gaps (an unthinned one
// keeps them). At most 2 × buckets + 2 indices; all of them when there are no more points than that.
std::vector<size_t> minmax_keep(const std::vector<double>& x, const std::vector<double>& y, size_t buckets);

// The union of minmax_keep over several series that share `x` (a mean and its band's edges):
// each series keeps its own extremes.
std::vector<size_t> minmax_keep_all(const std::vector<double>& x, const std::vector<const std::vector<double>*>& ys,
                                    size_t buckets);

// The buckets each of `curves` curves drawn together gets: its share of 200,000 points (a bucket
// keeps 2), at least 25 and at most `buckets`. Every seed of 1,000 runs at 1,000 buckets each was
// 70 MB of JSON, more than a browser draws; at 100 buckets each it is a tenth of that.
size_t shared_buckets(size_t buckets, size_t curves);

}  // namespace sweep
