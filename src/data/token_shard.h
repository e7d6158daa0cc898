// The token-shard format, compatible with llm.c: a header of 256 int32 (magic 20240520,
// version 1, token count, the rest zero) followed by the tokens as little-endian uint16.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sweep {

constexpr int32_t k_shard_magic = 20240520;
constexpr int32_t k_shard_version = 1;
constexpr int k_shard_header_ints = 256;

// Writes atomically (temp + fsync + rename).
void write_shard(const std::string& path, const std::vector<uint16_t>& tokens);

// A shard's token count, from its header, after checking the header and the exact length
// (errors as read_shard's): cheap, it reads no token.
int64_t shard_tokens(const std::string& path);

// Reads and validates a shard: header, exact length, every token < vocab_size. Errors name the
// file and say what is wrong (exit code 2).
std::vector<uint16_t> read_shard(const std::string& path, int64_t vocab_size);

}  // namespace sweep
