#include "data/loader.h"

#include <random>
#include <string>

#include "util/error.h"

namespace sweep {

BatchLoader::BatchLoader(const Tokens& tokens, int64_t block_size, int64_t data_seed)
    : m_tokens(tokens), m_block(block_size), m_seed(data_seed), m_window(static_cast<size_t>(block_size + 1)) {
  m_windows = (tokens.size() - 1) / block_size;
  if (m_windows >= (int64_t{1} << 32)) {
    throw Error("the training split has " + std::to_string(tokens.size()) + " tokens, more than 2^32 windows of " +
                    std::to_string(block_size) + " — use a larger block_size or a part of the split",
                Exit::bad_input);
  }
  if (m_windows < 1) {
    throw Error("the training split has " + std::to_string(tokens.size()) +
                    " tokens, fewer than one window of block_size+1 = " + std::to_string(block_size + 1),
                Exit::bad_input);
  }
}

int64_t BatchLoader::window_start(int64_t s) {
  int64_t epoch = s / m_windows;
  if (epoch != m_epoch) {
    // One generator per (data_seed, epoch): any epoch can be produced without the others,
    // so resuming needs nothing but the sequence index.
    std::seed_seq seq{static_cast<uint32_t>(m_seed), static_cast<uint32_t>(m_seed >> 32),
                      static_cast<uint32_t>(epoch), static_cast<uint32_t>(epoch >> 32), 0x5eedu};
    std::mt19937_64 rng(seq);
    m_perm.resize(static_cast<size_t>(m_windows));
    for (int64_t i = 0; i < m_windows; ++i) {
      m_perm[i] = static_cast<uint32_t>(i);
    }
    for (int64_t i = m_windows; i > 1; --i) {
      int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i));
      std::swap(m_perm[i - 1], m_perm[j]);
    }
    m_epoch = epoch;
  }
  return static_cast<int64_t>(m_perm[s % m_windows]) * m_block;
}

void BatchLoader::fill(int64_t first, int64_t count, int64_t* x, int64_t* y) {
  for (int64_t b = 0; b < count; ++b) {
    m_tokens.read(window_start(first + b), m_block + 1, m_window.data());
    const uint16_t* w = m_window.data();
    for (int64_t t = 0; t < m_block; ++t) {
      x[b * m_block + t] = w[t];
      y[b * m_block + t] = w[t + 1];
    }
  }
}

std::vector<std::pair<int64_t, int64_t>> eval_windows(int64_t n_tokens, int64_t block_size, int64_t limit) {
  int64_t n = limit > 0 ? std::min(limit, n_tokens) : n_tokens;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t start = 0; start + 1 < n; start += block_size) {
    out.emplace_back(start, std::min(block_size + 1, n - start));
  }
  return out;
}

}  // namespace sweep
