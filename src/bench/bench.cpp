#include "bench/bench.h"

#include <ATen/record_function.h>
#include <c10/core/CPUAllocator.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <tuple>

#include "bench/rows.h"
#include "bench/nanogpt.h"
#include "bench/tensor_memory.h"
#include "kernels/attention.h"
#include "kernels/attention_amx.h"
#include "kernels/cpu/ops.h"
#include "kernels/cross_entropy.h"
#include "kernels/activation.h"
#include "kernels/layer_norm.h"
#include "kernels/linear.h"
#include "memory_plan/memory.h"
#include "train/model.h"
#include "train/optim.h"
#include "train/precision.h"
#include "train/trainer.h"
#include "data/loader.h"
#include "data/token_shard.h"
#include "data/tokens.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/text.h"

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

RunConfig bench_gpt2_small_config() {
  RunConfig c = bench_reference_config();
  c.model.n_layer = 12;
  c.model.n_head = 12;
  c.model.n_embd = 768;
  c.model.block_size = 1024;
  c.model.vocab_size = 50257;
  c.model.pad_vocab_to = 64;  // 50304
  c.model.tie_weights = true;
  c.train.precision = Precision::bf16;
  return c;
}

double measure_matmul_peak(Precision precision, bool fused, int64_t n) {
  auto dtype = precision == Precision::bf16 ? torch::kBFloat16 : torch::kFloat;
  torch::NoGradGuard no_grad;
  auto a = torch::randn({n, n}).to(dtype);
  auto b = torch::randn({n, n}).to(dtype);
  auto c = torch::mm(a, b);
  // the fused path's matmuls: kernels::linear's sgemm, or kernels::linear_bf16's product (bf16
  // products, or on a CPU without them the operands widened to fp32: kernels::linear_path)
  const auto w = b.to(torch::kFloat);
  double best = 1e30;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (fused && dtype == torch::kBFloat16 && !kernels::cpu::ops().bf16_matmul) {
      c = kernels::matmul(a, b);  // the widened product alone (linear_bf16 would also round w each call)
    } else if (fused) {
      c = dtype == torch::kFloat ? kernels::linear(a, w) : kernels::linear_bf16(a, w);
    } else {
      torch::mm_out(c, a, b);
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / best;
}

namespace {

// ---- peak resident memory: Linux's high-water mark, reset through clear_refs ----

void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

// A memory line of /proc/self/status ("VmHWM:", "VmRSS:"), in MiB.
double status_mib(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key, 0) == 0) {
      return std::stod(line.substr(key.size())) / 1024.0;  // kB
    }
  }
  return 0;
}

double peak_rss_mib() { return status_mib("VmHWM:"); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ---- --profile: every op's self time (its time minus its children's), from RecordFunction ----

struct Frame {
  std::string name;
  std::chrono::steady_clock::time_point start;
  double children = 0;
};
thread_local std::vector<Frame> t_frames;
std::mutex g_profile_mutex;
std::map<std::string, std::pair<int64_t, double>> g_profile;  // name -> (calls, self seconds)

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  t_frames.push_back({fn.name(), std::chrono::steady_clock::now(), 0});
  return nullptr;
}

void on_op_end(const at::RecordFunction&, at::ObserverContext*) {
  if (t_frames.empty()) {
    return;
  }
  const Frame f = t_frames.back();
  t_frames.pop_back();
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - f.start).count();
  if (!t_frames.empty()) {
    t_frames.back().children += total;
  }
  std::lock_guard<std::mutex> lock(g_profile_mutex);
  auto& entry = g_profile[f.name];
  entry.first += 1;
  entry.second += total - f.children;
}

void print_profile(int64_t steps, double step_seconds, std::ostream& out) {
  std::vector<std::pair<std::string, std::pair<int64_t, double>>> rows(g_profile.begin(), g_profile.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  char line[256];
  out << "  top ops by self time per step (share of the step's wall time):\n";
  for (size_t i = 0; i < rows.size() && i < 15; ++i) {
    const double per_step = rows[i].second.second / static_cast<double>(steps);
    std::snprintf(line, sizeof line, "    %-48s %8.2f ms %5.1f%%  %6.1f calls\n", rows[i].first.c_str(), 1e3 * per_step,
                  100.0 * per_step / step_seconds,
                  static_cast<double>(rows[i].second.first) / static_cast<double>(steps));
    out << line;
  }
}

// ---- each fused op against its reference, forward + backward, at the config's shapes ----

struct OpTiming {
  double ms = 0;
  double peak_mib = 0;  // peak tensor memory the op allocated above its inputs
};

template <typename F>
OpTiming time_op(F&& f, int reps) {
  f();  // warm-up: first-touch allocations, JIT kernels
  double peak = 0;
  {
    CountingAllocator counting;
    f();
    peak = counting.peak_mib();
  }
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return {1e3 * median(times), peak};
}

// An MoE layer of the config, forward + backward at the step's shapes: the whole layer against
// its experts alone on the same rows, already grouped — the difference is what routing and
// dispatch cost (router, top-k, sort, gather, scatter, the aux loss and statistics).
void bench_moe(const RunConfig& c, Precision precision, double step_ms, std::ostream& out) {
  const ModelConfig m = c.model.resolved();
  const int64_t B = c.train.micro_batch, T = m.block_size, C = m.n_embd, E = m.n_routed_experts;
  const int64_t layers = m.n_layer - m.first_k_dense;
  MoE moe(m);
  moe->train();
  moe->set_fused(c.train.fused);
  const auto x = torch::randn({B, T, C}).requires_grad_(true);
  const auto grad = torch::randn({B, T, C});
  const int reps = 10;
  AutocastScope autocast(precision, torch::kCPU);
  const OpTiming whole = time_op(
      [&] {
        moe->forward(x).backward(grad);
        moe->zero_grad();
        moe->step_stats = torch::Tensor();
      },
      reps);
  // each expert on its even share of the rows (padded as the layer pads them), the shared experts on all
  const int64_t per_expert = (B * T * m.moe_top_k / E + k_expert_rows - 1) / k_expert_rows * k_expert_rows;
  const auto rows = torch::randn({per_expert, C}).requires_grad_(true);
  const auto flat = x.detach().reshape({B * T, C}).requires_grad_(true);
  const OpTiming experts = time_op(
      [&] {
        torch::Tensor sum = torch::zeros({}, torch::kFloat);
        for (const auto& e : *moe->experts) {
          sum = sum + e->as<MLP>()->forward(rows).to(torch::kFloat).sum();
        }
        if (moe->shared_experts) {
          sum = sum + moe->shared_experts->forward(flat).to(torch::kFloat).sum();
        }
        sum.backward();
        moe->zero_grad();
      },
      reps);
  const double dispatch = std::max(0.0, whole.ms - experts.ms);
  char line[320];
  std::snprintf(line, sizeof line,
                "  MoE layer (%s, forward + backward, median of %d): %.2f ms, its experts alone %.2f ms — routing and "
                "dispatch %.2f ms (%.0f%% of the layer); × %lld MoE layers = %.0f%% of the step\n",
                to_string(precision).c_str(), reps, whole.ms, experts.ms, dispatch, 100.0 * dispatch / whole.ms,
                static_cast<long long>(layers), 100.0 * dispatch * static_cast<double>(layers * c.train.grad_accum) / step_ms);
  out << line;
}

void bench_ops(const RunConfig& c, Precision precision, std::ostream& out) {
  const auto dtype = precision == Precision::bf16 ? torch::kBFloat16 : torch::kFloat;
  const int64_t B = c.train.micro_batch, T = c.model.block_size, C = c.model.n_embd, nh = c.model.n_head;
  const int64_t V = c.model.padded_vocab(), N = B * T;
  const int reps = 10;
  torch::manual_seed(1);
  char line[256];
  std::snprintf(line, sizeof line, "  ops (%s; forward + backward per call, median of %d; peak tensor memory the op allocates):\n",
                to_string(precision).c_str(), reps);
  out << line;
  out << "    op                                  reference      fused   speed-up    reference      fused   fused path\n";
  auto row = [&](const std::string& name, const OpTiming& ref, const OpTiming& fused, const std::string& path) {
    std::snprintf(line, sizeof line, "    %-34s %9.2f ms %7.2f ms %8.2f×  %7.1f MiB %6.1f MiB   %s\n", name.c_str(),
                  ref.ms, fused.ms, ref.ms / fused.ms, ref.peak_mib, fused.peak_mib, path.c_str());
    out << line;
  };
  // the instructions each fused op ran on: the vector kernels' width; bf16 products on AMX tiles
  // (oneDNN's matmul) or AVX512-BF16 dot products
  const auto& ops = kernels::cpu::ops();
  const std::string isa = ops.isa, vector = isa == "AVX2" ? "AVX2" : "AVX-512";
  const bool bf16 = dtype == torch::kBFloat16;
  const std::string bf16_products = ops.amx ? "AMX" : isa == "AVX512_BF16" ? "AVX512-BF16" : vector;
  {
    auto qkv = torch::randn({B, T, 3 * C}).to(dtype).requires_grad_(true);
    auto grad = torch::randn({B, T, C}).to(dtype);
    auto run = [&](bool fused) {
      return [&, fused] {
        auto y = fused ? kernels::causal_attention(qkv, nh) : kernels::causal_attention_reference(qkv, nh);
        y.backward(grad);
        qkv.mutable_grad() = torch::Tensor();
      };
    };
    const auto ref = time_op(run(false), reps);
    kernels::cpu::AttentionArgs args{B, T, nh, C / nh};
    const std::string path = kernels::amx::takes(args, dtype) ? "AMX" : bf16 ? bf16_products : vector;
    row("causal attention (B, T, 3C)", ref, time_op(run(true), reps), path);
  }
  for (const auto& [act, name] : {std::pair{kernels::Activation::gelu, "GELU"}, std::pair{kernels::Activation::relu2, "ReLU²"}}) {
    auto h = torch::randn({N, 4 * C}).to(dtype).requires_grad_(true);
    auto bias = torch::randn({4 * C}).requires_grad_(true);
    auto grad = torch::randn({N, 4 * C}).to(dtype);
    auto run = [&, act = act](bool fused) {
      return [&, fused, act] {
        auto y = fused ? kernels::bias_activation(h, bias, act) : kernels::bias_activation_reference(h, bias.to(dtype), act);
        y.backward(grad);
        h.mutable_grad() = torch::Tensor();
        bias.mutable_grad() = torch::Tensor();
      };
    };
    const auto ref = time_op(run(false), reps);
    row(std::string("bias + ") + name + " (B·T, 4C)", ref, time_op(run(true), reps), vector);
  }
  {  // the reference: LibTorch's layer_norm in fp32, then the cast its matmul needs under autocast
    auto x = torch::randn({N, C}).requires_grad_(true);
    auto w = torch::randn({C}).requires_grad_(true);
    auto b = torch::randn({C}).requires_grad_(true);
    auto grad = torch::randn({N, C}).to(dtype);
    auto run = [&](bool fused) {
      return [&, fused] {
        auto y = fused ? kernels::layer_norm(x, w, b, 1e-5, dtype) : kernels::layer_norm_reference(x, w, b, 1e-5).to(dtype);
        y.backward(grad);
        for (auto* t : {&x, &w, &b}) {
          t->mutable_grad() = torch::Tensor();
        }
      };
    };
    const auto ref = time_op(run(false), reps);
    row("LayerNorm (B·T, C)", ref, time_op(run(true), reps), vector);
  }
  for (const double cap : {0.0, 30.0}) {  // plain, and soft-capped as model.logit_softcap: 30 does
    auto leaf = torch::randn({N, V}).to(dtype).requires_grad_(true);
    auto targets = torch::randint(V, {N}, torch::kLong);
    auto run = [&](bool fused) {
      return [&, fused] {
        auto logits = leaf * 1;  // an intermediate, as the head's output is
        auto loss = fused ? kernels::cross_entropy_inplace(logits, targets, cap)
                          : kernels::cross_entropy_reference(logits, targets, cap);
        loss.backward();
        leaf.mutable_grad() = torch::Tensor();
      };
    };
    const auto ref = time_op(run(false), reps);
    row(std::string(cap > 0 ? "soft-capped " : "") + "cross-entropy (B·T, V=" + std::to_string(V) + ")", ref,
        time_op(run(true), reps), vector);
  }
  {  // bf16: the reference casts the weight and bias at each call, as autocast does; the fused
     // linear multiplies by the kept copy, which the fused AdamW writes
    auto x = torch::randn({N, C}).to(dtype).requires_grad_(true);
    auto w = torch::randn({4 * C, C}).requires_grad_(true);
    auto b = torch::randn({4 * C}).requires_grad_(true);
    auto grad = torch::randn({N, 4 * C}).to(dtype);
    const kernels::KeptBf16Copies copies({w});
    auto run = [&](bool fused) {
      return [&, fused] {
        auto y = !bf16  ? (fused ? kernels::linear(x, w, b) : kernels::linear_reference(x, w, b))
                 : fused ? kernels::linear_bf16(x, w, b)
                         : kernels::linear_reference(x, w.to(dtype), b.to(dtype));
        y.backward(grad);
        x.mutable_grad() = w.mutable_grad() = b.mutable_grad() = torch::Tensor();
      };
    };
    const auto ref = time_op(run(false), reps);
    row("linear (B·T, C) → 4C", ref, time_op(run(true), reps), kernels::linear_path(bf16));
  }
  {
    GPT model(c.model, c.seeds.init);
    auto params = model->parameters();
    auto opt = make_adamw(params, c.train);
    for (auto& p : params) {
      p.mutable_grad() = torch::randn_like(p);
    }
    // the step's rule as a run gives it (the norm, the clip factor, the skip), then AdamW alone
    const StepScale scale = step_scale(torch::zeros({1}), grad_norm(params), 1.0);
    auto run = [&](AdamWPath path) { return [&, path] { adamw_step(*opt, scale, path); }; };
    char name[64];
    std::snprintf(name, sizeof name, "AdamW + clip (%.2fM params)", static_cast<double>(model->num_params()) / 1e6);
    const auto ref = time_op(run(AdamWPath::per_tensor), reps);
    row(name, ref, time_op(run(AdamWPath::fused_cpu), reps), vector);
    // PyTorch's own fused AdamW (the GPU's path) on this CPU, against the same reference
    row("  the same by _fused_adamw_", ref, time_op(run(AdamWPath::foreach), reps), "ATen");
  }
}

}  // namespace

double measure_weight_matmuls(const RunConfig& c, bool fused) {
  const auto dtype = c.train.precision == Precision::bf16 ? torch::kBFloat16 : torch::kFloat;
  const ModelConfig& m = c.model;
  const int64_t N = c.train.micro_batch * m.block_size;
  // (rows, in, out) of each linear layer, from the model itself: every token goes through each
  // weight matrix, except a routed expert's, which gets N·top_k/n_routed_experts on average
  std::vector<std::tuple<int64_t, int64_t, int64_t>> shapes;
  {
    GPT model(m, c.seeds.init);
    for (const auto& p : model->named_parameters()) {
      const std::string& name = p.key();
      if (p.value().dim() != 2 || name.find(".wte.") != std::string::npos || name.find(".wpe.") != std::string::npos) {
        continue;
      }
      const bool expert = name.find(".experts.") != std::string::npos;
      const int64_t rows = expert ? N * model->config.moe_top_k / model->config.n_routed_experts : N;
      shapes.emplace_back(rows, p.value().size(1), p.value().size(0));
    }
    if (m.tie_weights) {
      shapes.emplace_back(N, m.n_embd, m.padded_vocab());
    }
  }
  struct Operands {
    torch::Tensor x, w, g;
  };
  std::vector<Operands> ops;
  for (const auto& [rows, in, out] : shapes) {
    ops.push_back({torch::randn({rows, in}).to(dtype), torch::randn({out, in}).to(dtype), torch::randn({rows, out}).to(dtype)});
  }
  std::vector<double> times;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& o : ops) {
      if (fused) {  // forward and backward through the kernels' own autograd Functions, fp32 weights
        auto x = o.x.detach().requires_grad_(true), w = o.w.detach().to(torch::kFloat).requires_grad_(true);
        (dtype == torch::kFloat ? kernels::linear(x, w) : kernels::linear_bf16(x, w)).backward(o.g);
      } else {  // y = x Wᵀ, dx = g W, dW = gᵀ x, as autograd's mm does them
        torch::NoGradGuard no_grad;
        torch::mm(o.x, o.w.t());
        torch::mm(o.g, o.w);
        torch::mm(o.g.t(), o.x);
      }
    }
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(times) * static_cast<double>(c.train.grad_accum);
}

std::shared_ptr<TrainData> bench_data(const RunConfig& config) {
  // Synthetic tokens: throughput does not depend on their values.
  auto data = std::make_shared<TrainData>();
  data->vocab_size = config.model.vocab_size > 0 ? config.model.vocab_size : 256;
  std::mt19937 rng(1234);
  const int64_t n_tokens = std::max<int64_t>(1 << 20, config.tokens_per_step() * 4);
  std::vector<uint16_t> tokens(static_cast<size_t>(n_tokens));
  for (auto& t : tokens) {
    t = static_cast<uint16_t>(rng() % static_cast<uint32_t>(data->vocab_size));
  }
  data->val = data->test = std::make_shared<MemoryTokens>(std::vector<uint16_t>(tokens.begin(), tokens.begin() + 4096));
  data->train = std::make_shared<MemoryTokens>(std::move(tokens));
  return data;
}

namespace {

// What is measured: the model, its shape and its size, the threads and the kernels.
void print_bench_header(const RunConfig& base, const BenchSettings& settings, int64_t vocab_size, std::ostream& out) {
  char line[320];
  const ModelConfig& m = base.model;
  std::snprintf(line, sizeof line,
                "sweep bench: %lld layers × %lld heads × %lld wide, block %lld, micro-batch %lld × accum %lld, vocab "
                "%lld, %d threads, fused kernels: %s, %lld steps after %lld warm-up\n",
                static_cast<long long>(m.n_layer), static_cast<long long>(m.n_head), static_cast<long long>(m.n_embd),
                static_cast<long long>(m.block_size), static_cast<long long>(base.train.micro_batch),
                static_cast<long long>(base.train.grad_accum), static_cast<long long>(vocab_size),
                at::get_num_threads(), kernels::cpu::ops().isa, static_cast<long long>(settings.steps),
                static_cast<long long>(settings.warmup));
  out << line << "linear layers (fused): " << kernels::linear_paths() << "\n";
  ModelConfig resolved = m.resolved();
  resolved.vocab_size = vocab_size;
  const ModelSize size = model_size(resolved);
  std::snprintf(line, sizeof line, "model: %s (%s, %s, %s, %s%s), %s parameters, %s active per token, %.1f MFLOP per token\n",
                to_string(resolved.family).c_str(), to_string(resolved.norm).c_str(), to_string(resolved.position).c_str(), to_string(resolved.mlp_activation).c_str(),
                to_string(resolved.attention).c_str(),
                resolved.moe() ? (", MoE " + std::to_string(resolved.moe_top_k) + " of " + std::to_string(resolved.n_routed_experts) +
                                  " + " + std::to_string(resolved.n_shared_experts) + " shared")
                                     .c_str()
                               : "",
                format_count(static_cast<double>(size.total)).c_str(), format_count(static_cast<double>(size.active)).c_str(),
                size.flops_per_token / 1e6);
  out << line;
}

// One configuration timed: its steps' speed, its memory against the plan, its optimizer's share,
// its weight matmuls' floor (and its experts', its ops' profile when asked). `path`: its row's name.
BenchResult bench_path(const RunConfig& c, const std::shared_ptr<const TrainData>& data, const BenchSettings& settings,
                       const std::string& path, std::ostream& out) {
  char line[320];
  // The memory the previous configuration kept goes back first, else this one's peak RSS
  // would start from that one's.
  release_freed_memory();
  const double peak = measure_matmul_peak(c.train.precision, c.train.fused);
  // Tensor memory: what the trainer holds between steps (weights, gradients, AdamW's moments),
  // then the peak the steps add (activations, temporaries)
  auto counting = std::make_unique<CountingAllocator>();
  Trainer trainer(c, data);
  for (int64_t i = 0; i < std::max<int64_t>(settings.warmup, 1); ++i) {
    trainer.train_step();  // one at least: the gradients and AdamW's moments exist after it
  }
  const double persistent_mib = counting->live_mib();
  std::optional<at::CallbackHandle> profiling;
  if (settings.profile) {
    g_profile.clear();
    profiling = at::addGlobalCallback(at::RecordFunctionCallback(on_op_start, on_op_end).needsInputs(false));
  }
  reset_peak_rss();
  std::vector<double> times, optimizer_times;
  counting->restart();
  for (int64_t i = 0; i < settings.steps; ++i) {
    const StepStats s = trainer.train_step();
    times.push_back(s.seconds);
    optimizer_times.push_back(s.optimizer_seconds);
  }
  const double step_tensors_mib = counting->peak_mib();
  counting.reset();
  if (profiling) {
    at::removeCallback(*profiling);
  }
  BenchResult r;
  r.precision = c.train.precision;
  r.fused = c.train.fused;
  r.optimizer = c.train.optimizer;
  r.optimizer_ms = 1e3 * median(optimizer_times);
  r.peak_rss_mib = peak_rss_mib();
  r.step_ms = 1e3 * median(times);
  r.tokens_per_s = static_cast<double>(c.tokens_per_step()) / (r.step_ms / 1e3);
  r.flops_per_token = model_size(c.model).flops_per_token;
  r.achieved_flops = r.tokens_per_s * r.flops_per_token;
  r.peak_flops = peak;
  std::snprintf(line, sizeof line, "%-9s  %-9s %10.0f %9.1f %15.1f %21.1f %5.1f%% %18.0f %14.0f\n",
                to_string(r.precision).c_str(), path.c_str(), r.tokens_per_s, r.step_ms, r.achieved_flops / 1e9,
                r.peak_flops / 1e9, 100.0 * r.achieved_flops / r.peak_flops, step_tensors_mib, r.peak_rss_mib);
  out << line;
  append_bench_row(settings.rows, BenchRow{"cpu", settings.model, to_string(r.precision), path, r.tokens_per_s,
                                           r.step_ms, r.achieved_flops, r.achieved_flops / r.peak_flops,
                                           step_tensors_mib, r.optimizer_ms, std::nullopt,
                                           std::string("the ") + (r.fused ? "fused kernels" : "reference ops")});
  const MemoryPlan plan = plan_memory(c, Layout{}, step_path_here(c));
  r.held_mib = persistent_mib;
  r.step_mib = step_tensors_mib;
  r.held_plan_mib = plan.persistent() / (1 << 20);
  r.step_plan_mib = plan.step() / (1 << 20);
  std::snprintf(line, sizeof line,
                "  tensor memory, planned / measured: %.1f / %.1f MiB held between steps, a step adds %.1f / %.1f "
                "MiB (%+.0f%%), peak %.1f / %.1f MiB (%+.0f%%)\n",
                r.held_plan_mib, r.held_mib, r.step_plan_mib, r.step_mib, 100.0 * (r.step_plan_mib / r.step_mib - 1),
                r.held_plan_mib + r.step_plan_mib, r.held_mib + r.step_mib,
                100.0 * ((r.held_plan_mib + r.step_plan_mib) / (r.held_mib + r.step_mib) - 1));
  out << line;
  std::snprintf(line, sizeof line, "  optimizer step (%s): %.2f ms, %.1f%% of the step\n",
                r.optimizer == Optimizer::muon ? "Muon on the blocks' matrices, AdamW on the rest" : "AdamW", r.optimizer_ms,
                100.0 * r.optimizer_ms / r.step_ms);
  out << line;
  const double floor_s = measure_weight_matmuls(c, c.train.fused);
  std::snprintf(line, sizeof line, "  the step's weight matmuls alone: %.1f ms (%.0f%% of the step), a ceiling of %.0f tokens/s\n",
                1e3 * floor_s, 100.0 * floor_s / (r.step_ms / 1e3), static_cast<double>(c.tokens_per_step()) / floor_s);
  out << line << std::flush;
  if (c.model.moe()) {
    bench_moe(c, c.train.precision, r.step_ms, out);
  }
  if (settings.profile) {
    double total = 0;
    for (double t : times) {
      total += t;
    }
    print_profile(settings.steps, total / static_cast<double>(settings.steps), out);
  }
  return r;
}

// nanoGPT's own training loop on the same model, eager and compiled, against `ours`.
void compare_with_nanogpt(const RunConfig& c, Precision precision, const BenchSettings& settings, const BenchResult& ours,
                          std::ostream& out) {
  char line[320];
  for (const bool compile : {false, true}) {
    NanoGptRun run;
    run.python = settings.python;
    run.model_py = settings.nanogpt;
    run.precision = precision;
    run.compile = compile;
    run.steps = settings.steps;
    run.warmup = settings.warmup;
    run.threads = at::get_num_threads();
    const NanoGptResult r = run_nanogpt(c, run);
    const std::string key = compile ? "nanogpt-compile" : "nanogpt";
    if (!r.error.empty()) {
      out << "  " << nanogpt_label(r, compile) << ": no figure — " << r.error << "\n";
      append_bench_row(settings.rows, BenchRow{"cpu", settings.model, to_string(precision), key, 0, 0, 0, 0,
                                               std::nullopt, std::nullopt, std::nullopt, "no figure — " + r.error});
      continue;
    }
    append_bench_row(settings.rows, BenchRow{"cpu", settings.model, to_string(precision), key, r.tokens_per_s,
                                             r.step_ms, r.tokens_per_s * model_size(c.model).flops_per_token, 0,
                                             r.peak_mib, std::nullopt, std::nullopt, nanogpt_label(r, compile)});
    std::snprintf(line, sizeof line, "  %s: %.0f tokens/s, %.1f ms a step (median of %lld); sweep %s / nanoGPT: %.2f×\n",
                  nanogpt_label(r, compile).c_str(), r.tokens_per_s, r.step_ms, static_cast<long long>(settings.steps),
                  ours.fused ? "fused" : "reference", ours.tokens_per_s / r.tokens_per_s);
    out << line << std::flush;
  }
}

}  // namespace

std::vector<BenchResult> run_bench(const RunConfig& base, const BenchSettings& settings, std::ostream& out) {
  const auto data = bench_data(base);
  print_bench_header(base, settings, data->vocab_size, out);
  std::vector<BenchResult> results;
  for (const auto& precision : settings.precisions) {
    out << "precision  path        tokens/s   step ms   model GFLOP/s   matmul peak GFLOP/s    MFU   step tensors MiB   peak RSS MiB\n";
    const std::vector<Optimizer> optimizers =
        settings.optimizers.empty() ? std::vector<Optimizer>{base.train.optimizer} : settings.optimizers;
    RunConfig c = base;
    c.model.vocab_size = data->vocab_size;
    c.train.precision = precision;
    for (const bool fused : settings.fused) {
      for (const Optimizer optimizer : optimizers) {
        c.train.fused = fused;
        c.train.optimizer = optimizer;
        // the path, and the optimizer when more than one is timed ("fused+muon")
        const std::string path =
            std::string(fused ? "fused" : "reference") + (optimizers.size() > 1 ? "+" + to_string(optimizer) : "");
        results.push_back(bench_path(c, data, settings, path, out));
      }
    }
    if (settings.fused.size() == 2 && optimizers.size() == 1) {
      // The last two results are this precision's, in the order of settings.fused.
      const BenchResult& a = results[results.size() - 2];
      const BenchResult& b = results.back();
      const BenchResult& fused = a.fused ? a : b;
      const BenchResult& reference = a.fused ? b : a;
      char line[160];
      std::snprintf(line, sizeof line, "  fused / reference: %.2f× tokens/s (%.0f / %.0f)\n",
                    fused.tokens_per_s / reference.tokens_per_s, fused.tokens_per_s, reference.tokens_per_s);
      out << line;
    }
    if (!settings.nanogpt.empty()) {
      RunConfig plain = base;
      plain.model.vocab_size = data->vocab_size;
      // the last path measured (fused, by default), with the first optimizer timed
      compare_with_nanogpt(plain, precision, settings, results[results.size() - optimizers.size()], out);
    }
    if (settings.ops) {
      RunConfig ops = base;
      ops.train.precision = precision;
      ops.model.vocab_size = data->vocab_size;
      bench_ops(ops, precision, out);
    }
    out << std::flush;
  }
  return results;
}

void bench_loader(const RunConfig& config, double gib, const std::string& dir, double step_tokens_per_s,
                  std::ostream& out) {
  const int64_t vocab = config.model.vocab_size > 0 ? config.model.vocab_size : 50257;
  const int64_t per_shard = 100'000'000;  // llm.c's FineWeb shards: 10^8 tokens each
  const int64_t total = static_cast<int64_t>(gib * static_cast<double>(int64_t{1} << 30) / 2);
  const fs::path root = fs::path(dir) / ("sweep-bench-shards-" + std::to_string(::getpid()));
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } cleanup{root};
  fs::create_directories(root);
  DatasetInfo info;
  info.dir = root.string();
  info.vocab_size = vocab;
  SplitInfo& split = info.splits["train"];
  std::mt19937 rng(1234);
  const auto t_write = std::chrono::steady_clock::now();
  for (int64_t written = 0; written < total; written += per_shard) {
    std::vector<uint16_t> tokens(static_cast<size_t>(std::min(per_shard, total - written)));
    for (auto& t : tokens) {
      t = static_cast<uint16_t>(rng() % static_cast<uint32_t>(vocab));
    }
    const std::string name = "bench_train_" + std::to_string(1000000 + split.shards.size()).substr(1) + ".bin";
    write_shard((root / name).string(), tokens);
    split.shards.push_back(name);
    split.tokens += static_cast<int64_t>(tokens.size());
  }
  const double write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_write).count();
  release_freed_memory();

  const int64_t T = config.model.block_size, B = config.train.micro_batch * config.train.grad_accum;
  const ShardTokens tokens(info, "train");
  BatchLoader loader(tokens, T, config.seeds.data);
  std::vector<int64_t> x(static_cast<size_t>(B * T)), y(x.size());
  char line[400];
  std::snprintf(line, sizeof line, "loader: %.2f GiB of shards (%zu × up to %lld tokens, vocab %lld) written in %.1f s; batches "
                "of %lld × %lld tokens\n",
                static_cast<double>(split.tokens) * 2 / static_cast<double>(int64_t{1} << 30), split.shards.size(),
                static_cast<long long>(per_shard), static_cast<long long>(vocab), write_s, static_cast<long long>(B),
                static_cast<long long>(T));
  out << line;
  out << "page cache   steps   windows      tokens/s   × training step   RSS before MiB   RSS after MiB\n";
  int64_t step = 0;
  for (const bool warm : {false, true}) {
    // cold: the shards' pages out of the page cache, every window from the disk; warm: every
    // page read in first, every window from memory.
    std::vector<char> block(1 << 20);
    for (const auto& name : split.shards) {
      const int fd = ::open((root / name).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        continue;
      }
      if (warm) {
        while (::read(fd, block.data(), block.size()) > 0) {
        }
      } else {
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      }
      ::close(fd);
    }
    const double before = status_mib("VmRSS:");
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t first_step = step;
    double seconds = 0;
    while (seconds < 3.0 || step - first_step < 5) {  // at least 3 s and 5 steps
      loader.fill(step * B, B, x.data(), y.data());
      ++step;
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    const double tok_s = static_cast<double>((step - first_step) * B * T) / seconds;
    std::snprintf(line, sizeof line, "%-10s %7lld %9lld %13.0f %17s %16.0f %15.0f\n", warm ? "warm" : "cold",
                  static_cast<long long>(step - first_step), static_cast<long long>((step - first_step) * B), tok_s,
                  step_tokens_per_s > 0 ? (std::to_string(static_cast<int64_t>(tok_s / step_tokens_per_s)) + "×").c_str() : "-",
                  before, status_mib("VmRSS:"));
    out << line;
  }
}

}  // namespace sweep

