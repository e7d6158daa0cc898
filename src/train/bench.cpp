#include "train/bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "train/model.h"
#include "train/trainer.h"

namespace sweep {

RunConfig bench_reference_config() {
  RunConfig c;
  c.model.n_layer = 4;
  c.model.n_head = 4;
  c.model.n_embd = 256;
  c.model.block_size = 256;
  c.model.vocab_size = 256;
  c.model.dropout = 0.0;
  c.train.micro_batch = 16;
  c.train.grad_accum = 1;
  c.train.grad_clip = 1.0;
  c.train.tokens = 1'000'000'000;
  c.eval.every = 0;
  return c;
}

double flops_per_token(const ModelConfig& m) {
  const double L = static_cast<double>(m.n_layer), C = static_cast<double>(m.n_embd);
  const double T = static_cast<double>(m.block_size), V = static_cast<double>(m.padded_vocab());
  const double matmul_weights = L * 12.0 * C * C + V * C;  // qkv 3C², proj C², mlp 8C²; the head
  return 6.0 * matmul_weights + 12.0 * L * C * T;
}

double measure_matmul_peak(const std::string& precision, int64_t n) {
  auto dtype = precision == "bf16" ? torch::kBFloat16 : torch::kFloat;
  torch::NoGradGuard no_grad;
  auto a = torch::randn({n, n}).to(dtype);
  auto b = torch::randn({n, n}).to(dtype);
  auto c = torch::mm(a, b);
  double best = 1e30;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    torch::mm_out(c, a, b);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / best;
}

std::vector<BenchResult> run_bench(const RunConfig& base, const std::vector<std::string>& precisions,
                                   int64_t steps, int64_t warmup, std::ostream& out) {
  // Synthetic tokens: throughput does not depend on their values.
  auto data = std::make_shared<TrainData>();
  data->vocab_size = base.model.vocab_size > 0 ? base.model.vocab_size : 256;
  std::mt19937 rng(1234);
  const int64_t n_tokens = std::max<int64_t>(1 << 20, base.tokens_per_step() * 4);
  data->train.resize(static_cast<size_t>(n_tokens));
  for (auto& t : data->train) {
    t = static_cast<uint16_t>(rng() % static_cast<uint32_t>(data->vocab_size));
  }
  data->val = data->test = std::vector<uint16_t>(data->train.begin(), data->train.begin() + 4096);

  char line[256];
  const ModelConfig& m = base.model;
  std::snprintf(line, sizeof line,
                "sweep bench: %lld layers × %lld heads × %lld wide, block %lld, micro-batch %lld × accum %lld, vocab "
                "%lld, %d threads, %s attention, %lld steps after %lld warm-up\n",
                static_cast<long long>(m.n_layer), static_cast<long long>(m.n_head), static_cast<long long>(m.n_embd),
                static_cast<long long>(m.block_size), static_cast<long long>(base.train.micro_batch),
                static_cast<long long>(base.train.grad_accum), static_cast<long long>(data->vocab_size),
                at::get_num_threads(), uses_sdpa() ? "sdpa" : "manual", static_cast<long long>(steps),
                static_cast<long long>(warmup));
  out << line;
  out << "precision   tokens/s   step ms   model GFLOP/s   matmul peak GFLOP/s   MFU\n";
  std::vector<BenchResult> results;
  for (const auto& precision : precisions) {
    RunConfig c = base;
    c.train.precision = precision;
    c.model.vocab_size = data->vocab_size;
    Trainer trainer(c, data);
    std::vector<double> times;
    for (int64_t i = 0; i < warmup + steps; ++i) {
      const StepStats s = trainer.train_step();
      if (i >= warmup) {
        times.push_back(s.seconds);
      }
    }
    std::sort(times.begin(), times.end());
    BenchResult r;
    r.precision = precision;
    r.step_ms = 1e3 * times[times.size() / 2];
    r.tokens_per_s = static_cast<double>(c.tokens_per_step()) / (r.step_ms / 1e3);
    r.flops_per_token = flops_per_token(c.model);
    r.achieved_flops = r.tokens_per_s * r.flops_per_token;
    r.peak_flops = measure_matmul_peak(precision);
    std::snprintf(line, sizeof line, "%-9s %10.0f %9.1f %15.1f %21.1f %5.1f%%\n", precision.c_str(), r.tokens_per_s,
                  r.step_ms, r.achieved_flops / 1e9, r.peak_flops / 1e9, 100.0 * r.achieved_flops / r.peak_flops);
    out << line << std::flush;
    results.push_back(r);
  }
  return results;
}

}  // namespace sweep
