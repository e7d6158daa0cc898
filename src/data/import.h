// `sweep data import DIR`: llm.c's prepared datasets as they come (FineWeb, TinyStories, ...):
// shards named *_train*.bin and *_val*.bin in DIR, GPT-2 tokens (header version 1, uint16), each
// document starting with <|endoftext|>. Writes DIR/dataset.yaml, the train split being llm.c's
// train shards where they lie. llm.c ships no test split; one is carved from val by a seeded rule
// (each val document goes to test when a hash of (seed, its index) falls under the fraction),
// or named shards (--test) are the test split. Besides dataset.yaml the import writes only a folder
// of its own, DIR/sweep-import-<microseconds>-<pid>/ (the carved shards, GPT-2's tables), named afresh
// each time and renamed into place before dataset.yaml, which is written last; one import of a
// folder at a time (a lock file), and an earlier import's folder removed only after. Every token is checked to be
// GPT-2's and counted as GPT-2's bytes, so bits per byte are exact. Nothing is written before
// every shard has been checked; the carved shards and dataset.yaml appear whole or not at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace sweep {

struct ImportOptions {
  std::string dir;
  std::vector<std::string> test_shards;  // file names in dir: the test split instead of a carved one
  double test_fraction = 0.5;            // of val's documents, when carving
  int64_t seed = 1234;
  std::string tokenizer_dir;  // GPT-2's tables ("" = sweep's cache)
  bool force = false;         // replace an existing dataset.yaml
};

struct ImportStats {
  int64_t scanned_tokens = 0;
  double seconds = 0;
};

DatasetInfo import_llmc(const ImportOptions& options, ImportStats* stats = nullptr);

// Whether a carved val document (its index in val, from 0) goes to the test split.
bool carved_to_test(int64_t document, int64_t seed, double fraction);

}  // namespace sweep
