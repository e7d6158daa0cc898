// `sweep data prepare`: reads documents (a folder: one document per file; a .txt or .txt.gz
// file: documents separated by blank lines), splits them into train/val/test BY DOCUMENT with a
// seeded shuffle (test text is never seen in training), trains or picks the tokenizer, and
// writes the shards and dataset.yaml. The output appears whole or not at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace sweep {

struct PrepareOptions {
  std::string input;
  std::string tokenizer = "bytes";  // bytes | bpe:<vocab> | gpt2
  std::string tokenizer_dir;        // gpt2: where encoder.json and vocab.bpe are ("" = sweep's cache)
  std::string out;
  double val_fraction = 0.05;
  double test_fraction = 0.05;
  int64_t seed = 1234;
  bool strip_tags = false;  // word/TAG → word (tagged corpora such as Brown)
  bool force = false;       // replace an existing dataset
  int64_t shard_tokens = 100'000'000;
  int threads = 1;
};

std::vector<std::string> read_documents(const std::string& input, bool strip_tags);
std::string strip_pos_tags(const std::string& text);

// `encode_seconds`: set to the time the tokenizer took to encode every document.
DatasetInfo prepare_dataset(const PrepareOptions& options, double* encode_seconds = nullptr);

}  // namespace sweep
