// A prepared dataset: a folder with train_*.bin, val_*.bin, test_*.bin token shards and
// dataset.yaml (tokenizer, vocabulary size, per-split documents, tokens and text bytes, the
// last giving bits per byte). dataset.yaml is written last, so its presence means complete.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace sweep {

struct SplitInfo {
  int64_t documents = 0;
  int64_t tokens = 0;
  int64_t bytes = 0;  // UTF-8 bytes of the split's text, for bits per byte
  std::vector<std::string> shards;  // file names inside the dataset folder
};

struct DatasetInfo {
  std::string dir;
  TokenizerKind tokenizer = TokenizerKind::bytes;
  std::string tokenizer_model;  // its file in the folder: the SentencePiece model, encoder.json ("" for bytes)
  int64_t vocab_size = 0;
  int64_t eot_token = 0;  // separates documents
  std::map<std::string, SplitInfo> splits;  // train, val, test

  double bytes_per_token(const std::string& split) const;
};

DatasetInfo read_dataset(const std::string& dir);
void write_dataset_yaml(const DatasetInfo& info, const std::string& dir);

// Checks that every shard is whole and that each split's shards hold the tokens dataset.yaml
// says (headers and file sizes only: milliseconds). Throws a bad-input Error naming the file.
void check_shards(const DatasetInfo& info);

}  // namespace sweep
