// On a CUDA device, what the CPU tests prove on the CPU: a run trains and its loss falls (fp32,
// tf32, bf16) and follows the CPU's curve; accumulation equals the bigger batch; resume is exact;
// scaled-dot-product attention equals the manual one; a checkpoint's weights move between CPU and
// GPU, and its run goes on only on its own kind of device; the CUDA kernels (in-place cross-entropy,
// LayerNorm, bias + activation) equal their references and train their curve; _fused_adamw_ under the device's rule
// equals LibTorch's AdamW; issuing a step reads nothing from the device (its loss and norm are
// read after the next is issued); data parallel over Gloo on CUDA tensors (two ranks sharing the
// GPU) equals accumulation, and NCCL runs with one rank; train.cuda_graph's replays are the eager
// step's, read nothing and resume exactly, and what it cannot capture is refused.
#include <doctest/doctest.h>

#include <optional>

#include "build_options.h"
#include "kernels/attention.h"
#include "kernels/cross_entropy.h"
#include "kernels/layer_norm.h"
#include "kernels/activation.h"
#include "equivalences.h"
#include "parallel_helpers.h"
#include "train/checkpoint.h"
#include "train/evaluate_loss.h"
#include "train/sharded/state.h"
#ifdef SWEEP_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>
#endif

using namespace sweep;

TEST_SUITE_BEGIN("gpu");  // CTest's label for each test case (CMakeLists.txt discovers them)

namespace {

RunConfig on_gpu(RunConfig c, Precision precision = Precision::fp32) {
  c.resources.device = "cuda:0";
  c.train.precision = precision;
  return c;
}

}  // namespace

TEST_CASE("cuda: training makes the loss fall in fp32 and tf32 and bf16 (each family)") {
  auto data = test::synthetic_data();
  for (const RunConfig& family : test::families()) {
    for (const Precision precision : {Precision::fp32, Precision::tf32, Precision::bf16}) {
      CAPTURE(family.model.family);
      CAPTURE(precision);
      Trainer t(on_gpu(family, precision), data);
      REQUIRE(t.model()->parameters().front().is_cuda());
      CHECK(t.model()->attention(t.device()) == "sdpa");
      test::check_learns(t);
    }
  }
}

TEST_CASE("cuda: fp32 follows the CPU's curve from the same weights and batches and evaluates alike") {
  auto data = test::synthetic_data();
  for (const RunConfig& family : test::families()) {
    CAPTURE(family.model.family);
    Trainer cpu(family, data), gpu(on_gpu(family), data);
    CHECK(torch::equal(test::flat_params(cpu.model()), test::flat_params(gpu.model()).cpu()));
    const auto a = test::losses(cpu, 8), b = test::losses(gpu, 8);
    CHECK(test::max_relative_difference(b, a) < 1e-4);
    const EvalLoss ec = evaluate_loss(cpu.model(), *data->test, 0, 8, Precision::fp32, torch::kCPU, true);
    const EvalLoss eg = evaluate_loss(gpu.model(), *data->test, 0, 8, Precision::fp32, gpu.device(), true);
    CHECK(eg.mean() == doctest::Approx(ec.mean()).epsilon(1e-4));
    CHECK(eg.window_nats.size() == ec.window_nats.size());
    CHECK(eg.window_tokens == ec.window_tokens);
  }
}

TEST_CASE("cuda: micro_batch 4 × grad_accum 4 equals micro_batch 16 × grad_accum 1 (fp32) for each family") {
  for (const RunConfig& family : test::families()) {
    // cuBLAS picks other kernels for other batch shapes, summing in another order: every weight
    // within 5e-5 (the CPU test: 1e-6 for GELU models)
    test::check_accumulation(on_gpu(family), 5e-5);
  }
}

TEST_CASE("cuda: activation checkpointing trains the same curve (deterministic algorithms and dropout on) for each family") {
  // the rerun restores the CUDA generator for dropout; bitwise where the kernels are deterministic
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  for (const RunConfig& family : test::families()) {
    for (const Precision precision : {Precision::fp32, Precision::bf16}) {
      test::check_recompute(on_gpu(family), precision);
    }
  }
  at::globalContext().setDeterministicAlgorithms(false, false);
}

TEST_CASE("cuda: 3 steps then a checkpoint then 3 more == 6 steps straight (deterministic algorithms and dropout on)") {
  // warn_only: an op without a deterministic CUDA kernel warns instead of failing the test; the
  // comparison below says whether the result was exact.
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  auto data = test::synthetic_data();
  for (const RunConfig& family : test::families()) {
    CAPTURE(family.model.family);
    CAPTURE(family.model.balance);
    test::TempDir dir;
    RunConfig c = on_gpu(family);
    c.model.dropout = 0.1;  // the CUDA generator's state must be resumed too
    c.train.grad_clip = 1.0;
    Trainer straight(c, data);
    const auto want = test::losses(straight, 6);
    std::vector<double> got;
    {
      Trainer first(c, data);
      got = test::losses(first, 3);
      first.save(dir.str("ckpt.pt"));
    }
    Trainer second(c, data);
    CHECK(second.load(dir.str("ckpt.pt")).empty());  // a CUDA stream resumed on CUDA: no note
    const auto rest = test::losses(second, 3);
    got.insert(got.end(), rest.begin(), rest.end());
    const auto pa = test::flat_params(straight.model()), pb = test::flat_params(second.model());
    WARN_MESSAGE(got == want, "resumed on CUDA: not bitwise (max relative loss difference ",
                 test::max_relative_difference(got, want), ")");
    WARN_MESSAGE(torch::equal(pa, pb), "resumed on CUDA: weights not bitwise equal");
    CHECK(test::max_relative_difference(got, want) < 1e-6);
    CHECK((pa - pb).abs().max().item<double>() < 1e-6);
  }
  at::globalContext().setDeterministicAlgorithms(false, false);
}

TEST_CASE("cuda: _fused_adamw_ with the clip factor and the skip on the device equals LibTorch's AdamW over 20 fp32 steps") {
  auto data = test::synthetic_data();
  RunConfig c = on_gpu(test::tiny_config());
  c.train.grad_clip = 0.5;
  Trainer reference(c, data), fused(c, data);
  reference.state().set_adamw_path(AdamWPath::per_tensor);
  CHECK(fused.state().adamw_path() == AdamWPath::foreach);  // a GPU's default
  const auto want = test::losses(reference, 20), got = test::losses(fused, 20);
  MESSAGE("max relative loss difference over 20 steps: ", test::max_relative_difference(got, want));
  CHECK(test::max_relative_difference(got, want) < 1e-5);
}

TEST_CASE("cuda: the in-place cross-entropy kernel equals F::cross_entropy forward and backward (odd shapes and caps — bf16 and fp32)") {
  torch::manual_seed(13);
  const auto on_cuda = torch::TensorOptions().device(torch::kCUDA);
  auto rel_err = [](const torch::Tensor& a, const torch::Tensor& b) {
    return ((a.to(torch::kFloat) - b.to(torch::kFloat)).norm() / (b.to(torch::kFloat).norm() + 1e-12)).item<double>();
  };
  for (const double cap : {0.0, 30.0, 1.5})
  for (const auto& [rows, vocab] : std::vector<std::pair<int64_t, int64_t>>{{7, 13}, {64, 4096}, {1, 1}, {33, 50304}, {5, 50257}}) {
    CAPTURE(cap);
    CAPTURE(rows);
    CAPTURE(vocab);
    const auto logits0 = torch::randn({rows, vocab}, on_cuda) * 3;
    const auto targets = torch::randint(vocab, {rows}, on_cuda.dtype(torch::kLong));
    for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
      const double tol = dtype == torch::kFloat ? 1e-5 : 1e-2;
      auto leaf = logits0.to(dtype).detach().requires_grad_(true);
      auto leaf_ref = logits0.to(dtype).to(torch::kFloat).detach().requires_grad_(true);
      auto logits = leaf * 1;
      REQUIRE(kernels::cuda_cross_entropy_takes(logits, targets));
      const void* memory = logits.data_ptr();
      const auto loss = kernels::cross_entropy_inplace(logits, targets, cap);
      const auto loss_ref = kernels::cross_entropy_reference(leaf_ref * 1, targets, cap);
      CHECK(std::abs(loss.item<double>() - loss_ref.item<double>()) <= 1e-5 * std::abs(loss_ref.item<double>()) + 1e-6);
      (loss * 0.5).backward();  // a gradient scale, as accumulation gives
      (loss_ref * 0.5).backward();
      const double err = rel_err(leaf.grad(), leaf_ref.grad());
      CHECK_MESSAGE(err < tol, "gradient relative error ", err);
      CHECK(logits.data_ptr() == memory);  // written over the logits: no second (N, V) buffer
    }
  }
  // a target outside the vocabulary: a NaN loss (nothing is read on the host to refuse it)
  const auto bad = kernels::cross_entropy_inplace(torch::randn({2, 4}, on_cuda), torch::tensor({1, 4}, on_cuda.dtype(torch::kLong)));
  CHECK(std::isnan(bad.item<double>()));
}

TEST_CASE("cuda: the LayerNorm kernel equals torch::layer_norm forward and backward (bf16 and fp32 out — odd widths)") {
  torch::manual_seed(17);
  const auto on_cuda = torch::TensorOptions().device(torch::kCUDA);
  for (const int64_t cols : {1, 7, 256, 768, 1000, 8192}) {
    CAPTURE(cols);
    const int64_t rows = 37;
    const auto x0 = torch::randn({rows, cols}, on_cuda) * 2 + 0.5;
    const auto w0 = torch::randn({cols}, on_cuda), b0 = torch::randn({cols}, on_cuda);
    const auto dy0 = torch::randn({rows, cols}, on_cuda);
    for (const auto out : {torch::kFloat, torch::kBFloat16}) {
      const double tol = out == torch::kFloat ? 1e-5 : 1e-2;
      auto x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
      auto xr = x0.clone().requires_grad_(true), wr = w0.clone().requires_grad_(true), br = b0.clone().requires_grad_(true);
      REQUIRE(kernels::cuda_layer_norm_takes(x, w, out));
      const auto y = kernels::layer_norm(x, w, b, 1e-5, out);
      const auto yr = kernels::layer_norm_reference(xr, wr, br, 1e-5);
      CHECK((y.scalar_type() == out));
      CHECK((y.to(torch::kFloat) - yr).abs().max().item<double>() < tol * (1 + yr.abs().max().item<double>()));
      y.backward(dy0.to(out));
      yr.backward(dy0.to(out).to(torch::kFloat));
      for (const auto& [got, want] : {std::pair{x.grad(), xr.grad()}, std::pair{w.grad(), wr.grad()}, std::pair{b.grad(), br.grad()}}) {
        CHECK(((got - want).norm() / (want.norm() + 1e-12)).item<double>() < tol);
      }
    }
  }
  // what it does not take goes to the reference
  CHECK_FALSE(kernels::cuda_layer_norm_takes(torch::randn({2, 8193}, on_cuda), torch::ones({8193}, on_cuda), torch::kFloat));
  CHECK_FALSE(kernels::cuda_layer_norm_takes(torch::randn({2, 8}, on_cuda).to(torch::kBFloat16), torch::ones({8}, on_cuda), torch::kFloat));
  CHECK_FALSE(kernels::cuda_layer_norm_takes(torch::randn({2, 8}, on_cuda), torch::ones({8}, on_cuda), torch::kHalf));
}

TEST_CASE("cuda: the bias + activation kernel equals gelu(h + b) and relu(h + b)² forward and backward (bf16 and fp32)") {
  torch::manual_seed(19);
  const auto on_cuda = torch::TensorOptions().device(torch::kCUDA);
  for (const auto act : {kernels::Activation::gelu, kernels::Activation::relu2})
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {13, 7}, {64, 3072}, {5, 1001}}) {
    CAPTURE(rows);
    CAPTURE(cols);
    for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
      const double tol = dtype == torch::kFloat ? 1e-5 : 2e-2;
      const auto h0 = torch::randn({rows, cols}, on_cuda).to(dtype), b0 = torch::randn({cols}, on_cuda);
      const auto dy = torch::randn({rows, cols}, on_cuda).to(dtype);
      auto h = h0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
      auto hr = h0.to(torch::kFloat).requires_grad_(true), br = b0.clone().requires_grad_(true);
      REQUIRE(kernels::cuda_bias_activation_takes(h, b));
      const auto y = kernels::bias_activation(h, b, act);
      const auto yr = kernels::bias_activation_reference(hr, br, act);
      CHECK((y.scalar_type() == dtype));
      CHECK(((y.to(torch::kFloat) - yr).norm() / (yr.norm() + 1e-12)).item<double>() < tol);
      y.backward(dy);
      yr.backward(dy.to(torch::kFloat));
      CHECK(((h.grad().to(torch::kFloat) - hr.grad()).norm() / (hr.grad().norm() + 1e-12)).item<double>() < tol);
      CHECK(((b.grad() - br.grad()).norm() / (br.grad().norm() + 1e-12)).item<double>() < tol);
    }
  }
  CHECK_FALSE(kernels::cuda_bias_activation_takes(torch::randn({2, 8}, on_cuda).to(torch::kHalf), torch::ones({8}, on_cuda)));
  CHECK_FALSE(kernels::cuda_bias_activation_takes(torch::randn({2, 8}, on_cuda), torch::ones({7}, on_cuda)));
}

TEST_CASE("cuda: train.cuda_kernels trains the reference ops' curve (fp32 and bf16)") {
  auto data = test::synthetic_data();
  for (const Precision precision : {Precision::fp32, Precision::bf16}) {
    CAPTURE(to_string(precision));
    RunConfig c = on_gpu(test::tiny_config(), precision);
    Trainer reference(c, data);
    c.train.cuda_kernels = true;
    Trainer kernels(c, data);
    const auto want = test::losses(reference, 10), got = test::losses(kernels, 10);
    MESSAGE(to_string(precision), ": max relative loss difference over 10 steps ", test::max_relative_difference(got, want));
    CHECK(test::max_relative_difference(got, want) < (precision == Precision::fp32 ? 1e-5 : 2e-2));
  }
}

TEST_CASE("cuda: scaled-dot-product attention equals the manual attention forward and backward (fp32 and bf16)") {
  torch::manual_seed(3);
  const int64_t B = 2, T = 96, H = 4, hs = 32, C = H * hs;
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    CAPTURE(dtype);
    const double tol = dtype == torch::kFloat ? 1e-5 : 3e-2;
    const auto qkv = torch::randn({B, T, 3 * C}, torch::TensorOptions().device(torch::kCUDA).dtype(dtype)).requires_grad_(true);
    const auto grad = torch::randn({B, T, C}, qkv.options());
    const auto manual = kernels::causal_attention_reference(qkv, H);
    manual.backward(grad);
    const auto manual_grad = qkv.grad().clone();
    qkv.mutable_grad() = torch::Tensor();
    const auto parts = qkv.split(C, 2);
    auto heads = [&](const torch::Tensor& t) { return t.view({B, T, H, hs}).transpose(1, 2); };  // (B, H, T, hs)
    const auto sdpa = at::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), {}, 0.0, true)
                          .transpose(1, 2)
                          .reshape({B, T, C});
    sdpa.backward(grad);
    CHECK((sdpa - manual).abs().max().item<double>() < tol);
    CHECK((qkv.grad() - manual_grad).abs().max().item<double>() < tol * 4);
  }
}

TEST_CASE("cuda: a checkpoint's weights move between the GPU and the CPU exactly and a resume across them is refused") {
  auto data = test::synthetic_data();
  for (const RunConfig& family : test::families()) {
    CAPTURE(family.model.family);
    const RunConfig cpu = family, gpu = on_gpu(family);
    for (const bool from_gpu : {true, false}) {
      CAPTURE(from_gpu);
      test::TempDir dir;
      Trainer writer(from_gpu ? gpu : cpu, data);
      test::losses(writer, 3);
      writer.save(dir.str("ckpt.pt"));
      // the weights, as `sweep eval` and `sweep export` read them, on the CPU
      Trainer weights(cpu, data);
      load_checkpoint_weights(dir.str("ckpt.pt"), weights.model());
      CHECK(torch::equal(test::flat_params(weights.model()), test::flat_params(writer.model()).cpu()));
      // the run itself goes on only on its own kind of device (its identity says which)
      Trainer reader(from_gpu ? cpu : gpu, data);
      std::string refused;
      try {
        reader.load(dir.str("ckpt.pt"));
      } catch (const Error& e) {
        refused = e.what();
      }
      CHECK(refused.find(from_gpu ? "was trained on cuda and would go on on cpu" : "was trained on cpu and would go on on cuda") !=
            std::string::npos);
    }
  }
}

#ifdef SWEEP_WITH_CUDA
namespace {

// Counts the warnings of CUDA's sync debug mode ("called a synchronizing CUDA operation").
struct SyncCounter : c10::WarningHandler {
  int syncs = 0;
  void process(const c10::Warning& warning) override {
    if (warning.msg().find("synchronizing") != std::string::npos) {
      ++syncs;
    }
  }
};

}  // namespace

TEST_CASE("cuda: issuing a training step reads nothing from the device whatever the accumulation and clipping (MoE: its routing)") {
  auto data = test::synthetic_data();
  RunConfig c = on_gpu(test::tiny_config(), Precision::bf16);
  c.model.dropout = 0.1;
  c.train.grad_accum = 4;
  c.train.grad_clip = 1.0;
  Trainer t(c, data);
  t.train_step();  // the first step's allocations and handles
  SyncCounter counter;
  std::vector<IssuedStep> issued;
  {
    c10::WarningUtils::WarningHandlerGuard guard(&counter);
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
    for (int i = 0; i < 3; ++i) {
      issued.push_back(t.issue_step());
    }
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  }
  CHECK(counter.syncs == 0);
  for (auto& step : issued) {  // read afterwards, each its own values
    CHECK(std::isfinite(t.read_step(step).loss));
  }
  // MoE layers read their routing (the counts per expert and the order) on the host: one read
  // per MoE layer and micro-batch, and one for the step's load statistics (the balancing bias
  // moves on the device)
  RunConfig moe = on_gpu(test::tiny_deepseek_config(Balance::bias), Precision::bf16);
  moe.train.grad_accum = 2;
  Trainer m(moe, data);
  m.train_step();
  SyncCounter moe_counter;
  std::optional<IssuedStep> moe_step;
  {
    c10::WarningUtils::WarningHandlerGuard guard(&moe_counter);
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
    moe_step = m.issue_step();
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  }
  const int moe_layers = static_cast<int>(m.model()->moe_layers().size());
  MESSAGE("deepseek step with ", moe_layers, " MoE layer(s), accumulation 2: ", moe_counter.syncs, " reads");
  CHECK(moe_counter.syncs == 2 * moe_layers + 1);
}

// 12 steps: 3 warm-up, the capture, 9 replays; fp32 and bf16, with dropout, clipping and accumulation 2
TEST_CASE("cuda: train.cuda_graph replays the eager step — the same losses and weights over 12 steps") {
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  auto data = test::synthetic_data();
  for (const Precision precision : {Precision::fp32, Precision::bf16}) {
    CAPTURE(precision);
    RunConfig c = on_gpu(test::tiny_config(), precision);
    c.model.dropout = 0.1;  // each replay draws new dropout masks from the generator the graph registered
    c.train.grad_clip = 1.0;
    c.train.grad_accum = 2;
    RunConfig g = c;
    g.train.cuda_graph = true;
    // one after the other: a trainer's construction reseeds the shared CUDA generator, so each must
    // train before the next is built to draw the same dropout masks (built together, the second
    // reseed moved the first one's stream, and the comparison failed on correct code)
    Trainer eager(c, data);
    const auto want = test::losses(eager, 12);
    const auto pa = test::flat_params(eager.model());
    Trainer graphed(g, data);
    const auto got = test::losses(graphed, 12);
    CHECK(graphed.step_captured());
    const auto pb = test::flat_params(graphed.model());
    const double weights = (pa - pb).abs().max().item<double>();
    MESSAGE("graph against eager over 12 steps: max relative loss difference ",
            test::max_relative_difference(got, want), ", largest weight difference ", weights);
    WARN_MESSAGE(got == want, "replays not bitwise the eager step");
    CHECK(test::max_relative_difference(got, want) < 1e-6);
    CHECK((pa - pb).abs().max().item<double>() < 1e-6);
  }
  at::globalContext().setDeterministicAlgorithms(false, false);
}

// resumed: 5 steps, a checkpoint, 5 more (a new warm-up and capture) against 10 straight
TEST_CASE("cuda: a replayed step reads nothing from the device and a graph's run resumes exactly") {
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  auto data = test::synthetic_data();
  RunConfig c = on_gpu(test::tiny_config(), Precision::bf16);
  c.model.dropout = 0.1;
  c.train.grad_clip = 1.0;
  c.train.cuda_graph = true;
  {
    Trainer t(c, data);
    test::losses(t, 4);  // the warm-up and the capture
    REQUIRE(t.step_captured());
    SyncCounter counter;
    std::vector<IssuedStep> issued;
    {
      c10::WarningUtils::WarningHandlerGuard guard(&counter);
      c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
      for (int i = 0; i < 3; ++i) {
        issued.push_back(t.issue_step());
      }
      c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
    }
    CHECK(counter.syncs == 0);
    for (auto& step : issued) {
      CHECK(std::isfinite(t.read_step(step).loss));
    }
  }
  test::TempDir dir;
  Trainer straight(c, data);
  const auto want = test::losses(straight, 10);
  std::vector<double> got;
  {
    Trainer first(c, data);
    got = test::losses(first, 5);
    first.save(dir.str("ckpt.pt"));
  }
  Trainer second(c, data);
  CHECK(second.load(dir.str("ckpt.pt")).empty());
  const auto rest = test::losses(second, 5);  // warms up again, then captures its own graph
  got.insert(got.end(), rest.begin(), rest.end());
  CHECK(second.step_captured());
  WARN_MESSAGE(got == want, "a graph's run resumed: not bitwise (max relative loss difference ",
               test::max_relative_difference(got, want), ")");
  CHECK(test::max_relative_difference(got, want) < 1e-6);
  at::globalContext().setDeterministicAlgorithms(false, false);
}

TEST_CASE("cuda: train.cuda_graph with Muon or a mixture of experts is refused before training with the reason") {
  RunConfig muon = on_gpu(test::tiny_muon_config());
  muon.train.cuda_graph = true;
  CHECK_THROWS_WITH_AS(Trainer(muon, test::synthetic_data()), doctest::Contains("Muon's learning rate"), Error);
  RunConfig moe = on_gpu(test::tiny_deepseek_config());
  moe.train.cuda_graph = true;
  CHECK_THROWS_WITH_AS(Trainer(moe, test::synthetic_data()), doctest::Contains("a mixture of experts routes"), Error);
}
#endif

TEST_CASE("cuda: data parallel over Gloo on CUDA tensors (two ranks sharing the GPU) equals accumulation 2") {
  test::check_data_parallel_equals_accumulation(2, 1, on_gpu(test::tiny_config()));
  test::check_data_parallel_equals_accumulation(2, 1, on_gpu(test::tiny_deepseek_config(Balance::bias)));
}

#ifdef SWEEP_WITH_NCCL
TEST_CASE("cuda: NCCL with one rank — collectives on GPU tensors and CPU tensors moved there and back") {
  auto comms = test::connect_local(1, std::chrono::seconds(60), torch::Device(torch::kCUDA, 0), Backend::nccl);
  Communicator& comm = *comms[0];
  auto on_gpu_tensor = torch::arange(6, torch::TensorOptions().dtype(torch::kDouble).device(torch::kCUDA));
  const auto expected = on_gpu_tensor.clone();
  comm.all_reduce_sum(on_gpu_tensor);
  CHECK(torch::equal(on_gpu_tensor, expected));
  auto on_cpu = torch::arange(4, torch::kDouble);
  comm.all_reduce_sum(on_cpu);
  CHECK(on_cpu.is_cpu());
  CHECK(torch::equal(on_cpu, torch::arange(4, torch::kDouble)));
  const auto gathered = comm.all_gather(torch::arange(3, torch::kUInt8));
  REQUIRE(gathered.size() == 1);
  CHECK(gathered[0].is_cpu());
  CHECK(torch::equal(gathered[0], torch::arange(3, torch::kUInt8)));
}
#endif

TEST_SUITE_END();
