#include "train/sample.h"

#include <algorithm>
#include <limits>

namespace sweep {

namespace {

// The logits of the last of `ids`' final `window` tokens, going through `cache` when given.
torch::Tensor last_logits(GPT& model, const std::vector<int64_t>& ids, size_t window, KVCache* cache,
                          const torch::Device& device) {
  const std::vector<int64_t> context(ids.end() - static_cast<std::ptrdiff_t>(window), ids.end());
  const auto idx = torch::tensor(context, torch::kLong).view({1, -1}).to(device);
  return model->forward(idx, cache).select(1, -1).squeeze(0).to(torch::kCPU, torch::kFloat);  // (V_padded)
}

int64_t pick(torch::Tensor logits, int64_t vocab, const SampleOptions& o, at::Generator& generator) {
  logits = logits.narrow(0, 0, vocab);
  if (o.temperature == 0) {
    return logits.argmax().item<int64_t>();
  }
  logits = logits / o.temperature;
  if (o.top_k > 0 && o.top_k < vocab) {
    const auto kth = std::get<0>(logits.topk(o.top_k)).min();
    logits = logits.masked_fill(logits < kth, -std::numeric_limits<float>::infinity());
  }
  // The inverse of the CDF at one uniform draw, in double: a seed gives the same token whatever
  // way a LibTorch version implements multinomial.
  const auto cdf = torch::softmax(logits.to(torch::kDouble), 0).cumsum(0);
  const double u = torch::rand({1}, generator, torch::kDouble).item<double>() * cdf[-1].item<double>();
  const int64_t i = (cdf <= u).sum().item<int64_t>();
  return std::min(i, vocab - 1);
}

}  // namespace

std::vector<int64_t> generate(GPT& model, const std::vector<int64_t>& prompt, int64_t vocab, const SampleOptions& o) {
  TORCH_CHECK(!prompt.empty(), "generate: the prompt needs at least one token");
  torch::NoGradGuard no_grad;
  model->eval();
  const torch::Device device = model->parameters().front().device();
  const auto block = static_cast<size_t>(model->config.block_size);
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(o.seed);
  std::vector<int64_t> ids = prompt, out;
  KVCache cache;
  auto recompute = [&]() {  // the last block_size tokens, from scratch
    cache = KVCache();
    return last_logits(model, ids, std::min(block, ids.size()), o.kv_cache ? &cache : nullptr, device);
  };
  torch::Tensor logits = recompute();
  for (int64_t n = 0; n < o.tokens; ++n) {
    const int64_t next = pick(logits, vocab, o, generator);
    ids.push_back(next);
    out.push_back(next);
    if (n + 1 == o.tokens) {
      break;
    }
    logits = o.kv_cache && static_cast<size_t>(cache.length) < block ? last_logits(model, ids, 1, &cache, device)
                                                                    : recompute();
  }
  return out;
}

}  // namespace sweep
