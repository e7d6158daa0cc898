#include "train/evaluate_loss.h"

#include "data/loader.h"
#include "train/precision.h"

namespace sweep {

EvalLoss evaluate_loss(GPT& model, const Tokens& tokens, int64_t limit, int64_t batch,
                       Precision precision, const torch::Device& device, bool per_window,
                       const std::function<void()>& alive) {
  const int64_t T = model->config.block_size;
  auto windows = eval_windows(tokens.size(), T, limit);
  std::vector<uint16_t> window(static_cast<size_t>(T + 1));
  const bool was_training = model->is_training();
  model->eval();
  torch::NoGradGuard no_grad;
  EvalLoss total;
  // Each window's summed nats, kept on the device and read once at the end (a read per batch
  // would wait for each). Allocated once, before the loop: a small tensor kept per batch would
  // land between the batch's freed logits in the heap of a training process (which never trims
  // it, util/process.h), and each next batch's logits could then need fresh pages — a test split
  // of 89 batches grew the process by 50 MiB a batch, 0.9 GiB in all.
  const auto f64 = torch::TensorOptions().dtype(torch::kDouble).device(device);
  const torch::Tensor window_nats = torch::empty({static_cast<int64_t>(windows.size())}, f64);
  if (per_window) {
    total.window_tokens.reserve(windows.size());
  }
  // Windows of one length go through together; only the last window can be shorter.
  size_t i = 0;
  while (i < windows.size()) {
    const int64_t len = windows[i].second;
    size_t j = i;
    while (j < windows.size() && j - i < static_cast<size_t>(batch) && windows[j].second == len) {
      ++j;
    }
    const int64_t B = static_cast<int64_t>(j - i);
    const auto host = torch::TensorOptions().dtype(torch::kLong).pinned_memory(device.is_cuda());
    auto x = torch::empty({B, len - 1}, host);  // (B, t)
    auto y = torch::empty({B, len - 1}, host);  // (B, t)
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
      logits = model->forward(x.to(device, /*non_blocking=*/true));  // (B, t, V)
    }
    const auto nll = torch::nn::functional::cross_entropy(
        logits.reshape({-1, logits.size(-1)}).to(torch::kFloat), y.to(device, /*non_blocking=*/true).reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));  // (B·t)
    auto rows = window_nats.narrow(0, static_cast<int64_t>(i), B);
    at::sum_out(rows, nll.reshape({B, len - 1}).to(torch::kDouble), 1);
    total.count += B * (len - 1);
    if (per_window) {
      total.window_tokens.insert(total.window_tokens.end(), static_cast<size_t>(B), len - 1);
    }
    if (alive) {
      alive();
    }
    i = j;
  }
  // The total from the windows' sums whether or not they are kept: the same to the bit.
  total.sum_nats = window_nats.sum().item<double>();
  if (per_window) {
    const auto host_rows = window_nats.cpu();
    total.window_nats.assign(host_rows.data_ptr<double>(), host_rows.data_ptr<double>() + host_rows.numel());
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
