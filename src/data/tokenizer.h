// Tokenizers for `sweep data prepare`: raw bytes (vocabulary 256, NUL as the document
// separator — it never occurs in text, which is stripped of NULs), SentencePiece BPE
// trained on the training documents (byte fallback, so any text encodes), and GPT-2's. SentencePiece runs
// in the helper program sweep-sentencepiece (see sentencepiece_tool.cpp for why).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/choices.h"

namespace sweep {

// What a prepared dataset's dataset.yaml names as its tokenizer.
enum class TokenizerKind { bytes, bpe, gpt2 };
template <>
struct Choices<TokenizerKind> {
  static constexpr std::array<std::string_view, 3> names{"bytes", "bpe", "gpt2"};
};

struct Encoded {
  int64_t vocab_size = 0;
  int64_t eot_token = 0;  // appended after every document
  std::vector<std::vector<int>> documents;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual Encoded encode(const std::vector<std::string>& documents) const = 0;
  // The text of `ids` (ids of one document: no separator among them).
  virtual std::string decode(const std::vector<int>& ids) const = 0;
};

std::unique_ptr<Tokenizer> make_bytes_tokenizer();
// GPT-2's byte-level BPE (see gpt2.h): vocabulary 50257, <|endoftext|> as the separator.
std::unique_ptr<Tokenizer> make_gpt2_tokenizer(const std::string& encoder_json, const std::string& vocab_bpe);
// The tokenizer of a prepared dataset: bytes, bpe with the SentencePiece model in `dir`, or gpt2
// with encoder.json (model_file, a path inside `dir`) and vocab.bpe beside it.
std::unique_ptr<Tokenizer> open_tokenizer(TokenizerKind kind, const std::string& dir, const std::string& model_file);

// Trains a BPE model of `vocab_size` pieces on `documents`; writes `model_prefix`.model.
std::unique_ptr<Tokenizer> train_bpe_tokenizer(const std::vector<std::string>& documents, int64_t vocab_size,
                                               const std::string& model_prefix, int threads);

}  // namespace sweep
