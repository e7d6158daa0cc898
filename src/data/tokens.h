// A split's tokens as the loader and the evaluation read them: a window at a time, by position
// in the split (its shards concatenated in order). Two sources: tokens in memory (synthetic data,
// small tests) and a prepared split's shards read where they lie, so a 20 GB split costs neither
// memory nor start-up time; the kernel's page cache serves re-reads.
//
// Why pread and not a memory map: measured on this project's machines (Linux 6.18, ext4), the page
// cache holds freshly written shards in 2 MiB folios and a fault on a mapping maps the whole folio,
// so each randomly placed window made 2 MiB resident; 100,000 windows of a 192 MiB split left its
// every page in the resident set, and neither madvise(MADV_DONTNEED) nor unmapping every 512
// windows bounded it. A read copies the window and maps nothing: the resident set stays flat
// (the unit test measures it) at one system call per window, microseconds against a step's
// hundreds of milliseconds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace sweep {

class Tokens {
 public:
  virtual ~Tokens() = default;
  virtual int64_t size() const = 0;
  // Copies tokens [start, start + n) to `out`. Throws a bad-input Error naming the shard when a
  // token is outside the vocabulary. Safe to call from several threads at once.
  virtual void read(int64_t start, int64_t n, uint16_t* out) const = 0;
  std::vector<uint16_t> all() const;  // every token (small splits and tests)
};

class MemoryTokens : public Tokens {
 public:
  explicit MemoryTokens(std::vector<uint16_t> tokens) : m_tokens(std::move(tokens)) {}
  int64_t size() const override { return static_cast<int64_t>(m_tokens.size()); }
  void read(int64_t start, int64_t n, uint16_t* out) const override;

 private:
  std::vector<uint16_t> m_tokens;
};

class ShardTokens : public Tokens {
 public:
  // Opens the split's shards after checking each header, exact length and the split's total
  // against dataset.yaml (errors as check_shards'). Tokens are checked against the vocabulary as
  // they are read.
  ShardTokens(const DatasetInfo& info, const std::string& split);
  ~ShardTokens() override;
  ShardTokens(const ShardTokens&) = delete;
  ShardTokens& operator=(const ShardTokens&) = delete;

  int64_t size() const override { return m_size; }
  void read(int64_t start, int64_t n, uint16_t* out) const override;

 private:
  struct Shard {
    std::string path;
    int fd = -1;
    int64_t first = 0;  // the split's position of its first token
    int64_t count = 0;
  };

  std::vector<Shard> m_shards;
  int64_t m_size = 0;
  int64_t m_vocab = 0;
};

}  // namespace sweep
