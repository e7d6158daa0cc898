#include "data/token_shard.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "util/error.h"
#include "util/fs.h"

namespace sweep {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "shards are little-endian");

void write_shard(const std::string& path, const std::vector<uint16_t>& tokens) {
  if (tokens.size() > static_cast<size_t>(INT32_MAX)) {
    throw Error("token shard " + path + " would hold more than 2^31 tokens — split it");
  }
  replace_file_atomic(path, [&](const fs::path& tmp) {
    int32_t header[k_shard_header_ints] = {};
    header[0] = k_shard_magic;
    header[1] = k_shard_version;
    header[2] = static_cast<int32_t>(tokens.size());
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out.write(reinterpret_cast<const char*>(tokens.data()),
              static_cast<std::streamsize>(tokens.size() * sizeof(uint16_t)));
    out.close();
    if (!out) {
      throw io_error("write the token shard", path, errno);
    }
  });
}

namespace {

[[noreturn]] void bad_shard(const std::string& path, const std::string& what) {
  throw Error("token shard " + path + ": " + what, Exit::bad_input);
}

// Opens a shard and checks its header and exact length: the token count, the stream at the tokens.
int64_t open_shard(const std::string& path, std::ifstream& in) {
  in.open(path, std::ios::binary | std::ios::ate);
  if (!in) {
    bad_shard(path, "cannot open it");
  }
  const int64_t size = in.tellg();
  in.seekg(0);
  int32_t header[k_shard_header_ints];
  if (size < static_cast<int64_t>(sizeof header)) {
    bad_shard(path, "truncated: " + std::to_string(size) + " bytes, shorter than the 1024-byte header");
  }
  in.read(reinterpret_cast<char*>(header), sizeof header);
  if (header[0] != k_shard_magic) {
    bad_shard(path, "bad magic number " + std::to_string(header[0]) + " (expected " + std::to_string(k_shard_magic) +
                        ") — not an llm.c/sweep token shard");
  }
  if (header[1] != k_shard_version) {
    bad_shard(path, "unsupported version " + std::to_string(header[1]) + " (expected 1: uint16 tokens)");
  }
  const int64_t count = header[2];
  const int64_t expected = static_cast<int64_t>(sizeof header) + count * 2;
  if (count < 0 || size != expected) {
    bad_shard(path, (size < expected ? "truncated" : "has trailing bytes") + std::string(": the header says ") +
                        std::to_string(count) + " tokens (" + std::to_string(expected) + " bytes), the file has " +
                        std::to_string(size) + " bytes — prepare it again");
  }
  return count;
}

}  // namespace

int64_t shard_tokens(const std::string& path) {
  std::ifstream in;
  return open_shard(path, in);
}

std::vector<uint16_t> read_shard(const std::string& path, int64_t vocab_size) {
  std::ifstream in;
  const int64_t count = open_shard(path, in);
  std::vector<uint16_t> tokens(static_cast<size_t>(count));
  in.read(reinterpret_cast<char*>(tokens.data()), count * 2);
  if (!in) {
    bad_shard(path, "read error");
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] >= vocab_size) {
      bad_shard(path, "token " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                          " is outside the vocabulary (size " + std::to_string(vocab_size) +
                          ") — the shard and dataset.yaml disagree");
    }
  }
  return tokens;
}

}  // namespace sweep
