#include <doctest/doctest.h>

#include <set>

#include "data/loader.h"

using namespace sweep;

namespace {

MemoryTokens ramp(int64_t n) {
  std::vector<uint16_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    t[i] = static_cast<uint16_t>(i % 60000);
  }
  return MemoryTokens(std::move(t));
}

std::vector<int64_t> starts(BatchLoader& l, int64_t first, int64_t count) {
  std::vector<int64_t> out;
  for (int64_t s = first; s < first + count; ++s) {
    out.push_back(l.window_start(s));
  }
  return out;
}

}  // namespace

TEST_CASE("windows are block_size+1 contiguous tokens and y is x shifted by one") {
  const auto tokens = ramp(1000);
  BatchLoader l(tokens, 8, 1);
  CHECK(l.windows_per_epoch() == (1000 - 1) / 8);
  std::vector<int64_t> x(3 * 8), y(3 * 8);
  l.fill(0, 3, x.data(), y.data());
  for (int b = 0; b < 3; ++b) {
    for (int t = 0; t < 8; ++t) {
      CHECK(y[b * 8 + t] == x[b * 8 + t] + 1);
      if (t > 0) {
        CHECK(x[b * 8 + t] == x[b * 8 + t - 1] + 1);
      }
    }
    CHECK(x[b * 8] % 8 == 0);  // windows start on multiples of block_size
  }
}

TEST_CASE("each epoch is a permutation of all windows, ordered by data_seed alone") {
  const auto tokens = ramp(4001);
  BatchLoader a(tokens, 16, 42), b(tokens, 16, 42), c(tokens, 16, 43);
  const int64_t n = a.windows_per_epoch();
  auto epoch0 = starts(a, 0, n);
  auto epoch1 = starts(a, n, n);
  CHECK(std::set<int64_t>(epoch0.begin(), epoch0.end()).size() == static_cast<size_t>(n));
  CHECK(std::set<int64_t>(epoch1.begin(), epoch1.end()).size() == static_cast<size_t>(n));
  CHECK(epoch0 != epoch1);                // a new order every epoch
  CHECK(starts(b, 0, n) == epoch0);       // same seed, same order
  CHECK(starts(c, 0, n) != epoch0);       // another seed, another order
  CHECK(starts(b, n + 5, 3) == std::vector<int64_t>(epoch1.begin() + 5, epoch1.begin() + 8));  // random access
}

TEST_CASE("ranks take disjoint slices of one global order") {
  // The trainer's indexing: sequence = step·B·accum·world + (micro·world + rank)·B + i.
  const auto tokens = ramp(20000);
  BatchLoader l(tokens, 16, 7);
  const int64_t B = 4;
  auto seqs = [&](int64_t world, int64_t accum, int64_t step) {
    std::multiset<int64_t> all;
    for (int64_t rank = 0; rank < world; ++rank) {
      for (int64_t micro = 0; micro < accum; ++micro) {
        for (int64_t i = 0; i < B; ++i) {
          all.insert(l.window_start(step * B * accum * world + (micro * world + rank) * B + i));
        }
      }
    }
    return all;
  };
  for (int64_t step = 0; step < 3; ++step) {
    CHECK(seqs(2, 1, step) == seqs(1, 2, step));
    CHECK(seqs(2, 2, step) == seqs(1, 4, step));
  }
}

TEST_CASE("evaluation windows predict every token but the first exactly once") {
  auto w = eval_windows(100, 16, 0);
  int64_t predicted = 0;
  int64_t next = 0;
  for (const auto& [start, len] : w) {
    CHECK(start == next);
    CHECK(len <= 17);
    predicted += len - 1;
    next = start + len - 1;
  }
  CHECK(predicted == 99);
  CHECK(w.back().second == 100 - 96);  // the remainder window
  auto limited = eval_windows(100, 16, 33);
  CHECK(limited.size() == 2);
  CHECK(limited.back() == std::pair<int64_t, int64_t>{16, 17});
}
