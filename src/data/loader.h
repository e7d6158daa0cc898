// The training loader: a split is cut into non-overlapping windows of block_size+1 tokens
// (inputs and next-token targets); a seeded permutation per epoch, from data_seed alone, orders
// them into one global stream of sequences. Whoever consumes it asks for sequences by their
// index in that stream, so the position is just a number (saved in checkpoints) and ranks of a
// data-parallel run take disjoint slices of the same global order. Evaluation windows are
// fixed and ordered. No torch here: the trainer wraps the buffers. The tokens are read a window
// at a time (see tokens.h), so a split of any size costs no memory beyond the permutation.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "data/tokens.h"

namespace sweep {

class BatchLoader {
 public:
  BatchLoader(const Tokens& tokens, int64_t block_size, int64_t data_seed);

  int64_t windows_per_epoch() const { return m_windows; }

  // Fills x and y, each (count, block_size), with the sequences [first, first + count) of the
  // global stream. Epochs follow each other, each with its own permutation.
  void fill(int64_t first, int64_t count, int64_t* x, int64_t* y);

  // The window start of the sequence with global index `s`.
  int64_t window_start(int64_t s);

 private:
  const Tokens& m_tokens;
  int64_t m_block;
  int64_t m_seed;
  int64_t m_windows;
  int64_t m_epoch = -1;
  std::vector<uint32_t> m_perm;  // window indices of the cached epoch (4 bytes per window: 8 MiB per 2^21 windows)
  std::vector<uint16_t> m_window;  // one window's tokens
};

// Fixed evaluation windows over the first `limit` tokens of a split (limit <= 0: all of it):
// (start, length) with length <= block_size + 1; the last window takes the remainder, so every
// token but the first is predicted exactly once.
std::vector<std::pair<int64_t, int64_t>> eval_windows(int64_t n_tokens, int64_t block_size, int64_t limit);

}  // namespace sweep
