#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "helpers.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"

using namespace sweep;

TEST_CASE("write_file_atomic replaces the whole file and leaves no temp file") {
  test::TempDir dir;
  const fs::path f = dir.path / "a.txt";
  write_file_atomic(f, "first");
  write_file_atomic(f, "second");
  CHECK(read_file(f) == "second");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) {
    ++entries;
  }
  CHECK(entries == 1);
}

TEST_CASE("a failing writer leaves the previous file untouched") {
  test::TempDir dir;
  const fs::path f = dir.path / "ckpt";
  write_file_atomic(f, "good");
  CHECK_THROWS(replace_file_atomic(f, [](const fs::path& tmp) {
    write_file_atomic(tmp, "half");  // something was written...
    throw Error("disk full");        // ...then the writer dies
  }));
  CHECK(read_file(f) == "good");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) {
    ++entries;
  }
  CHECK(entries == 1);
}

namespace {

// A malloc'ed block of n bytes, every page written (and so resident).
char* written_block(size_t n, char value) {
  char* p = static_cast<char*>(std::malloc(n));
  REQUIRE(p != nullptr);
  std::memset(p, value, n);
  asm volatile("" : : "r"(p) : "memory");  // the writes must happen
  return p;
}

}  // namespace

TEST_CASE("keep_freed_memory: a freed 64 MiB block comes back without page-faulting it in again") {
  keep_freed_memory();
  constexpr size_t n = size_t{64} << 20;  // 16,384 pages: each one faulted in again under glibc's defaults
  const auto faults = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
  };
  std::free(written_block(n, 1));
  const auto before = faults();
  std::free(written_block(n, 2));
  CHECK(faults() - before < 1000);
}

TEST_CASE("release_freed_memory: the pages keep_freed_memory kept go back to the kernel") {
  keep_freed_memory();
  const auto resident_mib = [] {
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
  };
  char* p = written_block(size_t{64} << 20, 1);
  const double used = resident_mib();
  std::free(p);
  CHECK(resident_mib() > used - 8);  // kept
  release_freed_memory();
  CHECK(resident_mib() < used - 56);  // given back
}

TEST_CASE("for_each_line: every line of a file of any size, the last without its newline too, an overlong one skipped") {
  test::TempDir dir;
  const std::string path = dir.str("lines.txt");
  std::string text;
  std::vector<std::string> want;
  for (int i = 0; i < 30000; ++i) {  // lines across the 64 KiB blocks
    want.push_back("line " + std::to_string(i));
    text += want.back() + "\n";
  }
  text += std::string(200000, 'x') + "\n";  // longer than the bound: skipped, never held whole
  want.emplace_back("");
  text += "\n";  // an empty line is a line
  want.emplace_back("the last, without a newline");
  text += want.back();
  write_file_atomic(path, text);
  std::vector<std::string> got;
  for_each_line(path, 100000, [&](const std::string& line) { got.push_back(line); });
  CHECK(got == want);
  CHECK_THROWS_AS(for_each_line(dir.str("none"), 10, [](const std::string&) {}), Error);
}
