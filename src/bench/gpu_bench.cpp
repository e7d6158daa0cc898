#include "bench/gpu_bench.h"

#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>

#include "bench/bench.h"
#include "bench/rows.h"
#include "build_options.h"
#include "kernels/attention.h"
#include "train/device.h"
#include "train/optim.h"
#include "train/precision.h"
#include "train/sharded/state.h"
#include "train/step_graph.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/text.h"
#ifdef SWEEP_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>
#endif

namespace sweep {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The peak tensor memory on the device since the last reset (0 where it cannot be read).
double peak_tensor_mib(const torch::Device& device, bool reset) {
#ifdef SWEEP_WITH_CUDA
  namespace alloc = c10::cuda::CUDACachingAllocator;
  if (reset) {
    alloc::resetPeakStats(device.index());
    return 0;
  }
  return static_cast<double>(alloc::getDeviceStats(device.index()).allocated_bytes[0].peak) / (1 << 20);
#else
  (void)device;
  (void)reset;
  return 0;
#endif
}

// The step's levers, one bench row each: which AdamW runs (train/optim.h), whether each step's
// loss and norm are read at once (the step waits for the device) or once the next step is issued,
// as run() trains, train.cuda_kernels (kernels/cuda/) and train.cuda_graph (train/step_graph.h: its
// rows warm up and capture before the timed steps, which are replays). The first row is the step
// as sweep trains.
struct Lever {
  const char* key;   // --lever's name for it
  const char* name;  // the row's
  AdamWPath adamw;
  bool read_each;
  bool cuda_kernels;
  bool cuda_graph;
};
constexpr Lever k_levers[] = {
    {"sweep", "sweep", AdamWPath::automatic, false, false, false},
    {"per-tensor-adamw", "  per-tensor AdamW (the old path)", AdamWPath::per_tensor, false, false, false},
    {"read-each", "  each step read at once", AdamWPath::automatic, true, false, false},
    {"old-adamw-and-reads", "  both: the old AdamW and reads", AdamWPath::per_tensor, true, false, false},
    {"cuda-kernels", "  with train.cuda_kernels", AdamWPath::automatic, false, true, false},
    {"cuda-graph", "  with train.cuda_graph", AdamWPath::automatic, false, false, true},
    {"graph-and-kernels", "  with both cuda_graph and cuda_kernels", AdamWPath::automatic, false, true, true}};

// Whether `key` is among the levers asked for (none asked: every lever of sweep's, and nanoGPT's
// rows where its model.py is given).
bool asked(const GpuBenchSettings& s, const std::string& key) {
  const bool nanogpt = key.rfind("nanogpt", 0) == 0;
  if (s.levers.empty()) {
    return !nanogpt || !s.nanogpt.empty();
  }
  return std::find(s.levers.begin(), s.levers.end(), key) != s.levers.end();
}

// `steps` training steps of `t`, each read after the next is issued, or at once (`read_each`).
void take_steps(Trainer& t, int64_t steps, bool read_each) {
  std::optional<IssuedStep> pending;
  for (int64_t i = 0; i < steps; ++i) {
    IssuedStep issued = t.issue_step();
    if (read_each) {
      t.read_step(issued);
      continue;
    }
    if (pending) {
      t.read_step(*pending);
    }
    pending = std::move(issued);
  }
  if (pending) {
    t.read_step(*pending);
  }
}

// The optimizer's part of a step alone, on the device: the gradient norm, the step's rule, AdamW,
// the gradients zeroed — ms per step over 10, synchronised around them (the weights move: time it last).
double optimizer_ms(Trainer& t, const torch::Device& device) {
  TrainState& state = t.state();
  const torch::Tensor loss = torch::ones({1}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  torch::cuda::synchronize(device.index());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    state.step(t.config().train.lr, step_scale(loss, state.grad_norm(), t.config().train.grad_clip), t.step());
    state.end_step();
  }
  torch::cuda::synchronize(device.index());
  return 1e3 * seconds_since(t0) / 10;
}

#ifdef SWEEP_WITH_CUDA
// Counts the warnings of CUDA's sync debug mode ("called a synchronizing CUDA operation").
struct SyncCounter : c10::WarningHandler {
  int syncs = 0;
  void process(const c10::Warning& warning) override {
    if (warning.msg().find("synchronizing") != std::string::npos) {
      ++syncs;
    }
  }
};
#endif

// The host's reads of the device in `steps` steps as take_steps takes them, per step, that keep it
// from issuing the next step: the synchronising calls CUDA's sync debug mode counts (the per-tensor
// AdamW's reads), and each step's own values when they are read at once (an event's wait, which that
// mode does not count); -1 where it cannot count.
double host_reads_per_step(Trainer& t, int64_t steps, bool read_each) {
#ifdef SWEEP_WITH_CUDA
  SyncCounter counter;
  {
    c10::WarningUtils::WarningHandlerGuard guard(&counter);
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
    take_steps(t, steps, read_each);
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  }
  return static_cast<double>(counter.syncs) / static_cast<double>(steps) + (read_each ? 1.0 : 0.0);
#else
  (void)t;
  (void)steps;
  (void)read_each;
  return -1;
#endif
}

// The kernel scaled_dot_product_attention picks for this model's attention on `device`.
std::string attention_backend(const RunConfig& c, const torch::Device& device) {
  const ModelConfig& m = c.model;
  const auto dtype = c.train.precision == Precision::bf16 ? torch::kBFloat16 : torch::kFloat;
  const auto q = torch::empty({c.train.micro_batch, m.n_head, m.block_size, m.n_embd / m.n_head},
                              torch::TensorOptions().device(device).dtype(dtype));
  return kernels::sdpa_backend(q, q, q, m.dropout);
}

}  // namespace

const std::vector<std::string>& gpu_bench_levers() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const Lever& lever : k_levers) {
      k.emplace_back(lever.key);
    }
    k.emplace_back("nanogpt");
    k.emplace_back("nanogpt-compile");
    return k;
  }();
  return keys;
}

double measure_cuda_matmul_peak(Precision precision, const torch::Device& device, int64_t n) {
  configure_matmul_precision(precision);
  const auto options = torch::TensorOptions().device(device).dtype(precision == Precision::bf16 ? torch::kBFloat16 : torch::kFloat);
  torch::NoGradGuard no_grad;
  const auto a = torch::randn({n, n}, options), b = torch::randn({n, n}, options);
  auto c = torch::mm(a, b);
  torch::cuda::synchronize(device.index());
  double best = 1e30;
  for (int i = 0; i < 10; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 5; ++k) {
      torch::mm_out(c, a, b);
    }
    torch::cuda::synchronize(device.index());
    best = std::min(best, seconds_since(t0) / 5);
  }
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / best;
}

void run_gpu_bench(const std::vector<std::pair<std::string, RunConfig>>& models, const GpuBenchSettings& settings,
                   std::ostream& out) {
  const torch::Device device(settings.device);
  const BuildDevices b = build_devices();
  const CudaDevice& gpu = b.cuda.at(static_cast<size_t>(device.has_index() ? device.index() : 0));
  char line[400];
  std::snprintf(line, sizeof line,
                "sweep bench on %s: %s, %.0f GiB, compute capability %d.%d; LibTorch %s, CUDA %s; %lld steps after %lld "
                "warm-up, timed back to back; a row per lever of the step\n",
                settings.device.c_str(), gpu.name.c_str(), gpu.memory_gib, gpu.major, gpu.minor, b.libtorch.c_str(),
                b.cuda_version.c_str(), static_cast<long long>(settings.steps), static_cast<long long>(settings.warmup));
  out << line;
  std::map<Precision, double> peaks;
  for (const auto& precision : settings.precisions) {  // (each process measures its own: rows compare within one)
    peaks[precision] = measure_cuda_matmul_peak(precision, device);
    std::snprintf(line, sizeof line, "matmul peak %-5s (8192³, best of 10): %.1f TFLOP/s\n", to_string(precision).c_str(),
                  peaks[precision] / 1e12);
    out << line << std::flush;
  }
  for (const auto& [name, base] : models) {
    const auto data = bench_data(base);
    const ModelConfig m = base.model.resolved();
    RunConfig shape = base;
    shape.model.vocab_size = data->vocab_size;
    const ModelSize size = model_size(shape.model);
    std::snprintf(line, sizeof line,
                  "\n%s: %lld layers × %lld heads × %lld wide, block %lld, micro-batch %lld × accum %lld, vocab %lld "
                  "(padded %lld), %s parameters, %.1f MFLOP per token\n",
                  name.c_str(), static_cast<long long>(m.n_layer), static_cast<long long>(m.n_head),
                  static_cast<long long>(m.n_embd), static_cast<long long>(m.block_size),
                  static_cast<long long>(base.train.micro_batch), static_cast<long long>(base.train.grad_accum),
                  static_cast<long long>(data->vocab_size), static_cast<long long>(shape.model.padded_vocab()),
                  format_count(static_cast<double>(size.total)).c_str(), size.flops_per_token / 1e6);
    out << line;
    out << "precision  who                                     tokens/s    step ms   model TFLOP/s    MFU   peak tensors MiB"
           "   optimizer ms   host reads/step\n";
    // a row printed, and appended to --rows as it is measured
    auto row = [&](Precision precision, const std::string& who, const std::string& key, BenchRow r,
                   const std::string& tail = "") {
      const double achieved = r.tokens_per_s * size.flops_per_token;
      std::snprintf(line, sizeof line, "%-9s  %-38s %10.0f %10.1f %15.1f %5.1f%% %18.0f%s\n", to_string(precision).c_str(),
                    who.c_str(), r.tokens_per_s, r.step_ms, achieved / 1e12, 100.0 * achieved / peaks[precision],
                    r.peak_mib.value_or(0), tail.c_str());
      out << line << std::flush;
      r.device = settings.device;
      r.model = name;
      r.precision = to_string(precision);
      r.who = key;
      r.flops_per_s = achieved;
      r.mfu = achieved / peaks[precision];
      append_bench_row(settings.rows, r);
    };
    for (const auto& precision : settings.precisions) {
      RunConfig c = shape;
      c.train.precision = precision;
      c.resources.device = settings.device;
      out << "  attention: scaled_dot_product_attention's " << attention_backend(c, device) << " kernel\n";
      double sweep_tokens_per_s = 0;
      for (const Lever& lever : k_levers) {
        if (!asked(settings, lever.key)) {
          continue;
        }
        RunConfig lc = c;
        lc.train.cuda_kernels = lever.cuda_kernels;
        lc.train.cuda_graph = lever.cuda_graph;
        Trainer trainer(lc, data);
        trainer.state().set_adamw_path(lever.adamw);
        const int64_t warmup =  // a graph's rows: its warm-up and capture before the timed replays
            lever.cuda_graph ? std::max<int64_t>(settings.warmup, StepGraph::k_warmup + 1) : settings.warmup;
        take_steps(trainer, warmup, lever.read_each);
        torch::cuda::synchronize(device.index());
        peak_tensor_mib(device, true);
        const auto t0 = std::chrono::steady_clock::now();
        take_steps(trainer, settings.steps, lever.read_each);
        torch::cuda::synchronize(device.index());
        const double step_s = seconds_since(t0) / static_cast<double>(settings.steps);
        const double tokens_per_s = static_cast<double>(c.tokens_per_step()) / step_s;
        if (std::string(lever.key) == "sweep") {
          sweep_tokens_per_s = tokens_per_s;
        }
        const double mib = peak_tensor_mib(device, false);
        const double reads = host_reads_per_step(trainer, 3, lever.read_each);
        BenchRow r;
        r.tokens_per_s = tokens_per_s;
        r.step_ms = 1e3 * step_s;
        r.peak_mib = mib;
        r.reads_per_step = reads;
        if (trainer.step_captured()) {  // its optimizer is inside the one launch: not timed apart
          r.note = "AdamW foreach, replayed";
        } else if (const std::string why = trainer.capture_failure(); !why.empty()) {  // timed eagerly, said
          r.note = "capture failed: " + why;
        } else {
          r.optimizer_ms = optimizer_ms(trainer, device);
          r.note = std::string("AdamW ") + to_string(trainer.state().adamw_path());
        }
        char tail[200];
        std::snprintf(tail, sizeof tail, " %14s %17.1f   (%.120s)",
                      r.optimizer_ms ? format_number("%.2f", *r.optimizer_ms).c_str() : "-", reads, r.note.c_str());
        row(precision, lever.name, lever.key, r, tail);
      }
      if (settings.nanogpt.empty() && (asked(settings, "nanogpt") || asked(settings, "nanogpt-compile"))) {
        throw Error("--lever nanogpt: give nanoGPT's model.py (--nanogpt PATH)", Exit::bad_input);
      }
      for (const bool compile : {false, true}) {
        if (!asked(settings, compile ? "nanogpt-compile" : "nanogpt")) {
          continue;
        }
        NanoGptRun run;
        run.python = settings.python;
        run.model_py = settings.nanogpt;
        run.device = settings.device;
        run.precision = precision;
        run.compile = compile;
        run.steps = settings.steps;
        run.warmup = std::max<int64_t>(settings.warmup, compile ? 3 : 1);  // compile in the warm-up
        const NanoGptResult r = run_nanogpt(c, run);
        const std::string key = compile ? "nanogpt-compile" : "nanogpt";
        if (!r.error.empty()) {
          out << "  " << nanogpt_label(r, compile) << ": no figure — " << r.error << "\n";
          append_bench_row(settings.rows, BenchRow{settings.device, name, to_string(precision), key, 0, 0, 0, 0,
                                                   std::nullopt, std::nullopt, std::nullopt, "no figure — " + r.error});
          continue;
        }
        BenchRow nano;
        nano.tokens_per_s = r.tokens_per_s;
        nano.step_ms = r.step_ms;
        nano.peak_mib = r.peak_mib;
        nano.note = nanogpt_label(r, compile);
        row(precision, nanogpt_label(r, compile), key, nano);
        if (sweep_tokens_per_s > 0) {  // the sweep row of this process, where it timed one
          std::snprintf(line, sizeof line, "  sweep / nanoGPT (compile %s): %.2f×\n", compile ? "on" : "off",
                        sweep_tokens_per_s / r.tokens_per_s);
          out << line << std::flush;
        }
      }
    }
  }
}

}  // namespace sweep
