// Text generation from a trained model of either family: the next token drawn from the softmax
// of the last position's logits (temperature, top-k), from a generator seeded by `seed` alone,
// so the same seed gives the same text. Keys and values come from a KV cache (MLA: the latent);
// once the context fills block_size, each token is predicted from the last block_size tokens
// recomputed in full, as nanoGPT's generate does.
#pragma once

#include <cstdint>
#include <vector>

#include "train/model.h"

namespace sweep {

struct SampleOptions {
  int64_t tokens = 200;      // how many to generate
  double temperature = 0.8;  // 0: always the most likely token
  int64_t top_k = 200;       // draw among the k most likely (0: all)
  uint64_t seed = 1;
  bool kv_cache = true;  // false: every token from the whole context recomputed (the reference)
};

// `prompt` (at least one token id) continued by options.tokens ids below `vocab` (the data's
// vocabulary: the padded rows of the head are never drawn).
std::vector<int64_t> generate(GPT& model, const std::vector<int64_t>& prompt, int64_t vocab, const SampleOptions& options);

}  // namespace sweep
