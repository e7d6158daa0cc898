#include <doctest/doctest.h>

#include <cstring>
#include <fstream>

#include "data/dataset.h"
#include "data/token_shard.h"
#include "helpers.h"
#include "util/error.h"
#include "util/fs.h"

using namespace sweep;

namespace {

std::string error_of(const std::string& path, int64_t vocab) {
  return test::bad_input_message([&] { read_shard(path, vocab); });
}

}  // namespace

TEST_CASE("shards round-trip and keep llm.c's header") {
  test::TempDir dir;
  const std::vector<uint16_t> tokens{0, 1, 2, 65535, 17, 4095};
  write_shard(dir.str("a.bin"), tokens);
  CHECK(read_shard(dir.str("a.bin"), 65536) == tokens);
  const std::string raw = read_file(dir.str("a.bin"));
  REQUIRE(raw.size() == 1024 + 2 * tokens.size());
  int32_t header[3];
  std::memcpy(header, raw.data(), sizeof header);
  CHECK(header[0] == 20240520);
  CHECK(header[1] == 1);
  CHECK(header[2] == 6);
}

TEST_CASE("a truncated shard names the file and the missing bytes") {
  test::TempDir dir;
  write_shard(dir.str("t.bin"), std::vector<uint16_t>(100, 3));
  fs::resize_file(dir.str("t.bin"), 1024 + 150);
  const std::string msg = error_of(dir.str("t.bin"), 256);
  CHECK(msg.find(dir.str("t.bin")) != std::string::npos);
  CHECK(msg.find("truncated") != std::string::npos);
  CHECK(msg.find("100 tokens") != std::string::npos);

  fs::resize_file(dir.str("t.bin"), 500);
  CHECK(error_of(dir.str("t.bin"), 256).find("shorter than the 1024-byte header") != std::string::npos);
}

TEST_CASE("a wrong magic number is rejected") {
  test::TempDir dir;
  write_shard(dir.str("m.bin"), {1, 2, 3});
  std::fstream f(dir.str("m.bin"), std::ios::in | std::ios::out | std::ios::binary);
  const int32_t bad = 12345;
  f.write(reinterpret_cast<const char*>(&bad), 4);
  f.close();
  const std::string msg = error_of(dir.str("m.bin"), 256);
  CHECK(msg.find("bad magic number 12345") != std::string::npos);
  CHECK(msg.find(dir.str("m.bin")) != std::string::npos);
}

TEST_CASE("a token outside the vocabulary is rejected with its position") {
  test::TempDir dir;
  write_shard(dir.str("v.bin"), {1, 2, 300, 4});
  const std::string msg = error_of(dir.str("v.bin"), 256);
  CHECK(msg.find("token 300 at position 2 is outside the vocabulary (size 256)") != std::string::npos);
  CHECK(read_shard(dir.str("v.bin"), 301).size() == 4);
}

TEST_CASE("a malformed dataset.yaml, or shards that disagree with it, are reported by name") {
  test::TempDir dir;
  const std::string yaml = dir.str("dataset.yaml");
  auto problem = [&](const std::string& text) {
    write_file_atomic(yaml, text);
    try {
      check_shards(read_dataset(dir.str()));
    } catch (const Error& e) {
      CHECK(e.code() == Exit::bad_input);
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(problem("") == yaml + ": 'tokenizer' is missing — prepare the dataset again");
  // a tokenizer no sweep wrote is no dataset of bytes: decoding with the wrong one would be garbage
  CHECK(problem("vocab_size: 256\ntokenizer: tiktoken\n") ==
        yaml + ":2: 'tokenizer' is 'tiktoken', expected one of bytes, bpe, gpt2 — prepare the dataset again");
  CHECK(problem("tokenizer: bytes\nvocab_size: lots\n") == yaml + ":2: 'vocab_size' has the wrong type — prepare the dataset again");
  CHECK(problem("tokenizer: bytes\nvocab_size: 256\neot_token: 0\nsplits: 5\n") ==
        yaml + ": split 'train' is missing — prepare the dataset again");
  CHECK(problem("tokenizer: bytes\nvocab_size: -7\neot_token: 0\n") ==
        yaml + ": vocab_size -7 and eot_token 0 are no uint16 vocabulary (1 to 65536 tokens, the separator one of "
               "them) — prepare the dataset again");
  write_shard(dir.str("s.bin"), {1, 2, 3});
  const std::string split = "{documents: 1, tokens: 4, bytes: 4, shards: [s.bin]}";
  CHECK(problem("tokenizer: bytes\nvocab_size: 256\neot_token: 0\nsplits: {train: " + split + ", val: " + split +
                ", test: " + split + "}\n") ==
        yaml + ": the test split has 4 tokens, its shards hold 3 — prepare the dataset again");
}
