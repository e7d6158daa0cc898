#include <doctest/doctest.h>

#include "helpers.h"
#include "util/error.h"
#include "util/fs.h"

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
