#include "train/evaluate.h"

#include "data/loader.h"
#include "train/precision.h"

namespace sweep {

EvalLoss evaluate_loss(GPT& model, const Tokens& tokens, int64_t limit, int64_t batch,
                       const std::string& precision, const torch::Device& device, bool per_window) {
  const int64_t T = model->config.block_size;
  auto windows = eval_windows(tokens.size(), T, limit);
  std::vector<uint16_t> window(static_cast<size_t>(T + 1));
  const bool was_training = model->is_training();
  model->eval();
  torch::NoGradGuard no_grad;
  EvalLoss total;
  // Windows of one length go through together; only the last window can be shorter.
  size_t i = 0;
  while (i < windows.size()) {
    const int64_t len = windows[i].second;
    size_t j = i;
    while (j < windows.size() && j - i < static_cast<size_t>(batch) && windows[j].second == len) {
      ++j;
    }
    const int64_t B = static_cast<int64_t>(j - i);
    auto x = torch::empty({B, len - 1}, torch::kLong);  // (B, t)
    auto y = torch::empty({B, len - 1}, torch::kLong);  // (B, t)
    auto* xp = x.data_ptr<int64_t>();
    auto* yp = y.data_ptr<int64_t>();
    for (int64_t b = 0; b < B; ++b) {
      tokens.read(windows[i + b].first, len, window.data());
      const uint16_t* w = window.data();
      for (int64_t t = 0; t < len - 1; ++t) {
        xp[b * (len - 1) + t] = w[t];
        yp[b * (len - 1) + t] = w[t + 1];
      }
    }
    torch::Tensor logits;
    {
      AutocastScope autocast(precision, device.type());
      logits = model->forward(x.to(device));  // (B, t, V)
    }
    const auto flat_logits = logits.reshape({-1, logits.size(-1)}).to(torch::kFloat);
    const auto flat_targets = y.to(device).reshape({-1});
    auto nll = torch::nn::functional::cross_entropy(flat_logits, flat_targets,
                                                    torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    total.sum_nats += nll.item<double>();
    total.count += B * (len - 1);
    if (per_window) {
      const auto rows = torch::nn::functional::cross_entropy(
                            flat_logits, flat_targets,
                            torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone))
                            .reshape({B, len - 1})
                            .to(torch::kDouble)
                            .sum(1)
                            .cpu();
      for (int64_t b = 0; b < B; ++b) {
        total.window_nats.push_back(rows[b].item<double>());
        total.window_tokens.push_back(len - 1);
      }
    }
    i = j;
  }
  if (was_training) {
    model->train();
  }
  return total;
}

std::vector<std::pair<int64_t, double>> loss_blocks(const EvalLoss& loss, size_t most) {
  std::vector<std::pair<int64_t, double>> out;
  const size_t n = loss.window_nats.size();
  const size_t per_block = std::max<size_t>(1, (n + most - 1) / most);
  for (size_t i = 0; i < n; i += per_block) {
    std::pair<int64_t, double> block{0, 0.0};
    for (size_t j = i; j < std::min(n, i + per_block); ++j) {
      block.first += loss.window_tokens[j];
      block.second += loss.window_nats[j];
    }
    out.push_back(block);
  }
  return out;
}

}  // namespace sweep
