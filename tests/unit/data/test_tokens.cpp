#include <doctest/doctest.h>

#include <fstream>
#include <random>

#include "data/dataset.h"
#include "data/loader.h"
#include "data/token_shard.h"
#include "data/tokens.h"
#include "helpers.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"

using namespace sweep;

namespace {

// A train split written as shards of the given sizes (an empty one among them), and the same
// tokens in memory.
struct Sharded {
  DatasetInfo info;
  std::vector<uint16_t> all;
  Sharded(const test::TempDir& dir, const std::vector<int64_t>& sizes, int64_t vocab, uint32_t seed = 3) {
    info.dir = dir.str();
    info.vocab_size = vocab;
    std::mt19937 rng(seed);
    SplitInfo& split = info.splits["train"];
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<uint16_t> part(static_cast<size_t>(sizes[i]));
      for (auto& t : part) {
        t = static_cast<uint16_t>(rng() % vocab);
      }
      const std::string name = "fineweb_train_" + std::to_string(100000 + i).substr(1) + ".bin";
      write_shard(dir.str(name), part);
      split.shards.push_back(name);
      split.tokens += sizes[i];
      all.insert(all.end(), part.begin(), part.end());
    }
  }
};

std::vector<int64_t> batch(BatchLoader& l, int64_t first, int64_t count, int64_t T) {
  std::vector<int64_t> x(count * T), y(count * T);
  l.fill(first, count, x.data(), y.data());
  x.insert(x.end(), y.begin(), y.end());
  return x;
}

int64_t rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stoll(line.substr(line.find(':') + 1));
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("shards read exactly as the same tokens in memory, across shard boundaries") {
  test::TempDir dir;
  const Sharded s(dir, {1000, 37, 0, 2048, 5, 999}, 50257);
  const ShardTokens mapped(s.info, "train");
  const MemoryTokens memory(s.all);
  REQUIRE(mapped.size() == memory.size());
  CHECK(mapped.all() == s.all);
  for (int64_t start : {0, 990, 1000, 1030, 1037, 3080, 3084, 3085, 4088}) {
    for (int64_t n : {1, 7, 60, 1000}) {
      if (start + n > mapped.size()) {
        continue;
      }
      std::vector<uint16_t> a(n), b(n);
      mapped.read(start, n, a.data());
      memory.read(start, n, b.data());
      CHECK(a == b);
    }
  }
  CHECK_THROWS_AS(mapped.read(4080, 10, std::vector<uint16_t>(10).data()), std::out_of_range);
}

TEST_CASE("the loader over shards on disk gives the in-memory loader's batches, window for window, after a resume too") {
  test::TempDir dir;
  const Sharded s(dir, {3000, 513, 4096, 1, 2500}, 4096);
  const ShardTokens mapped(s.info, "train");
  const MemoryTokens memory(s.all);
  const int64_t T = 64, B = 4;
  BatchLoader a(mapped, T, 11), b(memory, T, 11);
  REQUIRE(a.windows_per_epoch() == b.windows_per_epoch());
  const int64_t steps = 2 * a.windows_per_epoch() / B + 3;  // past the second epoch's start
  std::vector<std::vector<int64_t>> straight;
  for (int64_t step = 0; step < steps; ++step) {
    straight.push_back(batch(a, step * B, B, T));
    CHECK(straight.back() == batch(b, step * B, B, T));
  }
  // A resumed run builds a new loader and asks for the sequence it stopped at.
  for (int64_t stop : {int64_t{1}, a.windows_per_epoch() / B, steps - 2}) {
    const ShardTokens reopened(s.info, "train");
    BatchLoader resumed(reopened, T, 11);
    for (int64_t step = stop; step < steps; ++step) {
      CHECK(batch(resumed, step * B, B, T) == straight[step]);
    }
  }
}

TEST_CASE("reading every window of shards on disk keeps resident memory bounded") {
  // 192 MiB of shards: read into memory they would add as much to the resident set.
  test::TempDir dir;
  const int64_t per_shard = 16 << 20, n_shards = 6, T = 1024;
  Sharded s(dir, std::vector<int64_t>(n_shards, per_shard), 50257);
  s.all = std::vector<uint16_t>();
  release_freed_memory();
  const ShardTokens mapped(s.info, "train");
  BatchLoader loader(mapped, T, 5);
  const int64_t before = rss_kib();
  std::vector<int64_t> x(16 * T), y(16 * T);
  int64_t checksum = 0;
  for (int64_t first = 0; first + 16 <= loader.windows_per_epoch(); first += 16) {
    loader.fill(first, 16, x.data(), y.data());
    checksum += x[0];
  }
  const int64_t grown = rss_kib() - before;
  MESSAGE("read " << n_shards * per_shard * 2 / (1 << 20) << " MiB of shards; resident memory grew by " << grown / 1024
                  << " MiB (checksum " << checksum << ")");
  CHECK(grown < 16 * 1024);  // a memory map grew by all 192 MiB here (see tokens.h)
}

TEST_CASE("a token outside the vocabulary is an error naming the shard and position when it is read") {
  test::TempDir dir;
  Sharded s(dir, {100, 100}, 300);
  std::vector<uint16_t> bad(100, 7);
  bad[42] = 300;
  write_shard(dir.str("fineweb_train_00001.bin"), bad);
  const ShardTokens mapped(s.info, "train");
  std::vector<uint16_t> out(200);
  mapped.read(0, 100, out.data());  // the first shard is fine
  try {
    mapped.read(90, 60, out.data());
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Exit::bad_input);
    CHECK(std::string(e.what()).find("fineweb_train_00001.bin: token 300 at position 42 is outside the vocabulary") !=
          std::string::npos);
  }
}

TEST_CASE("a split whose shards do not hold dataset.yaml's tokens is refused before anything is read") {
  test::TempDir dir;
  Sharded s(dir, {100, 50}, 300);
  s.info.splits["train"].tokens = 151;
  CHECK_THROWS_WITH_AS(ShardTokens(s.info, "train"), doctest::Contains("the train split has 151 tokens, its shards hold 150"),
                       Error);
  s.info.splits["train"].tokens = 150;
  std::ofstream(dir.str("fineweb_train_00001.bin"), std::ios::app) << "xx";  // the header now lies about the length
  CHECK_THROWS_WITH_AS(ShardTokens(s.info, "train"), doctest::Contains("fineweb_train_00001.bin: has trailing bytes"),
                       Error);
}
