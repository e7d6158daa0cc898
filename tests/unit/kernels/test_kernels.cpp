// Every fused op against its reference in plain LibTorch ops, on fresh random inputs of several
// shapes (odd sizes included: vector tails, partial tiles): forward and gradients, fp32 to a
// relative error < 1e-5, bf16 < 1e-2 (against the reference in fp32 on the same bf16 inputs);
// and the fp32 analytic gradients against fp64 central finite differences of the reference.
// CTest runs this suite on the CPU's own path (AMX's bf16 attention where it has AMX) and again
// on each lesser one it can run: AVX512_BF16, AVX2.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/cpu/ops.h"
#include "kernels/cross_entropy.h"
#include "kernels/activation.h"
#include "kernels/layer_norm.h"
#include "train/device.h"
#include "kernels/linear.h"
#include "kernels/onednn.h"

using namespace sweep;

namespace {

double rel_err(const torch::Tensor& got, const torch::Tensor& want) {
  const auto g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  return ((g - w).norm() / w.norm().clamp_min(1e-30)).item<double>();
}

using Op = std::function<torch::Tensor(const torch::Tensor&)>;

// Forward and the gradient of <op(x), w> for a random w: fused vs reference, in `dtype`. The
// reference runs in fp32 on the same (rounded) inputs.
void check_against_reference(const Op& fused, const Op& reference, const torch::Tensor& x0, torch::ScalarType dtype,
                             double tol) {
  auto x_fused = x0.to(dtype).detach().requires_grad_(true);
  auto x_ref = x0.to(dtype).to(torch::kFloat).detach().requires_grad_(true);
  auto y_fused = fused(x_fused);
  auto y_ref = reference(x_ref);
  CHECK((y_fused.scalar_type() == dtype));
  REQUIRE(y_fused.sizes() == y_ref.sizes());
  const double fwd = rel_err(y_fused, y_ref);
  CHECK_MESSAGE(fwd < tol, "forward relative error ", fwd);
  auto w = torch::randn(y_ref.sizes());
  (y_fused.to(torch::kFloat) * w).sum().backward();
  (y_ref * w).sum().backward();
  const double bwd = rel_err(x_fused.grad(), x_ref.grad());
  CHECK_MESSAGE(bwd < tol, "gradient relative error ", bwd);
}

// fp32 analytic gradient of <op(x), w> along random directions u against the fp64 central
// difference of the reference: (f(x + εu) − f(x − εu)) / 2ε.
void check_finite_differences(const Op& fused, const Op& reference, const torch::Tensor& x0) {
  auto x = x0.to(torch::kFloat).detach().requires_grad_(true);
  auto y = fused(x);
  auto w = torch::randn(y.sizes(), torch::kDouble);
  (y.to(torch::kDouble) * w).sum().backward();
  const auto x64 = x0.to(torch::kDouble);
  const double eps = 1e-6;
  for (int d = 0; d < 3; ++d) {
    auto u = torch::randn(x64.sizes(), torch::kDouble);
    const double numeric = ((reference(x64 + eps * u) * w).sum() - (reference(x64 - eps * u) * w).sum()).item<double>() /
                           (2 * eps);
    const double analytic = (x.grad().to(torch::kDouble) * u).sum().item<double>();
    CHECK_MESSAGE(std::abs(analytic - numeric) <= 1e-4 * std::max(1.0, std::abs(numeric)), "direction ", d,
                  ": analytic ", analytic, ", fp64 finite difference ", numeric);
  }
}

}  // namespace

TEST_SUITE_BEGIN("kernels");

TEST_CASE("the fused kernels run the widest instruction set this CPU has") {
  const std::string isa = kernels::cpu::ops().isa;
  const char* forced = std::getenv("SWEEP_CPU_ISA");
  if (forced && *forced) {
    CHECK(isa == forced);
  } else if (__builtin_cpu_supports("avx512bf16")) {
    CHECK((isa == "AMX" || isa == "AVX512_BF16"));  // AMX where oneDNN finds it usable
  } else if (__builtin_cpu_supports("avx512f")) {
    CHECK(isa == "AVX512");
  } else {
    CHECK(isa == "AVX2");
  }
  CHECK(kernels::cpu::ops().amx == (isa == "AMX"));
  MESSAGE("fused CPU kernels: " << isa);
}

TEST_CASE("causal attention, flash-style: forward and gradients equal the masked-softmax reference") {
  torch::manual_seed(11);
  struct Shape {
    int64_t B, T, nh, hs;
  };
  // T below, at and across the 64-row tile; head sizes that are not a multiple of the vector width,
  // and an odd one (bf16 then multiplies its tiles in fp32: the bf16 dot products take pairs).
  for (const Shape s : {Shape{2, 64, 2, 16}, Shape{1, 1, 1, 8}, Shape{2, 100, 3, 12}, Shape{1, 130, 2, 32},
                        Shape{3, 257, 1, 64}, Shape{2, 70, 2, 7}}) {
    CAPTURE(s.B);
    CAPTURE(s.T);
    CAPTURE(s.nh);
    CAPTURE(s.hs);
    const auto qkv = torch::randn({s.B, s.T, 3 * s.nh * s.hs});
    const Op fused = [&](const torch::Tensor& x) { return kernels::causal_attention(x, s.nh); };
    const Op reference = [&](const torch::Tensor& x) { return kernels::causal_attention_reference(x, s.nh); };
    check_against_reference(fused, reference, qkv, torch::kFloat, 1e-5);
    check_against_reference(fused, reference, qkv, torch::kBFloat16, 1e-2);
    if (s.T <= 130) {
      check_finite_differences(fused, reference, qkv);
    }
  }
}

TEST_CASE("causal attention with dropout: the hashed mask, recomputed in backward, equals the reference with that mask") {
  torch::manual_seed(16);
  struct Shape {
    int64_t B, T, nh, hs;
  };
  for (const Shape s : {Shape{2, 70, 2, 16}, Shape{1, 130, 3, 8}}) {
    CAPTURE(s.T);
    const double p = 0.2;
    const uint64_t seed = 0x5eed0000u + static_cast<uint64_t>(s.T);
    const auto mask = kernels::dropout_mask(s.B * s.nh, s.T, p, seed);
    const double kept = (mask > 0).to(torch::kDouble).mean().item<double>();
    CHECK(kept == doctest::Approx(1 - p).epsilon(0.02));  // about 1 − p of the weights survive
    const auto qkv = torch::randn({s.B, s.T, 3 * s.nh * s.hs});
    const Op fused = [&](const torch::Tensor& x) { return kernels::causal_attention(x, s.nh, p, seed); };
    const Op reference = [&](const torch::Tensor& x) {
      return kernels::causal_attention_reference(x, s.nh, p, mask.to(x.scalar_type()));
    };
    check_against_reference(fused, reference, qkv, torch::kFloat, 1e-5);
    check_against_reference(fused, reference, qkv, torch::kBFloat16, 1e-2);
    check_finite_differences(fused, reference, qkv);
    // Another seed, another mask.
    CHECK(rel_err(kernels::causal_attention(qkv, s.nh, p, seed + 1), kernels::causal_attention(qkv, s.nh, p, seed)) > 1e-3);
  }
}

TEST_CASE("bias + activation: forward, input and bias gradients equal gelu(h + b) and relu(h + b)²") {
  torch::manual_seed(12);
  for (const auto act : {kernels::Activation::gelu, kernels::Activation::relu2})
  for (const auto& shape : std::vector<std::vector<int64_t>>{{3, 5, 7}, {4, 1024}, {1, 33}, {2, 3, 40}}) {
    CAPTURE(static_cast<int>(act));
    const auto h0 = torch::randn(shape) * 2;
    const auto b0 = torch::randn({shape.back()});
    for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
      const double tol = dtype == torch::kFloat ? 1e-5 : 1e-2;
      auto bf = b0.clone().requires_grad_(true), br = b0.clone().requires_grad_(true);
      const Op fused = [&](const torch::Tensor& x) { return kernels::bias_activation(x, bf, act); };
      const Op reference = [&](const torch::Tensor& x) { return kernels::bias_activation_reference(x, br, act); };
      check_against_reference(fused, reference, h0, dtype, tol);
      CHECK((bf.grad().scalar_type() == torch::kFloat));
      const double bias_err = rel_err(bf.grad(), br.grad());
      CHECK_MESSAGE(bias_err < tol, "bias gradient relative error ", bias_err);
    }
    const Op fused = [&](const torch::Tensor& x) { return kernels::bias_activation(x, b0, act); };
    const Op reference = [&](const torch::Tensor& x) {
      return kernels::bias_activation_reference(x, b0.to(x.scalar_type()), act);
    };
    check_finite_differences(fused, reference, h0);
  }
  // ReLU² written out: 0 for v ≤ 0, v² above; its derivative 0 and 2v
  const auto h = torch::tensor({-2.0f, -0.5f, 0.0f, 0.5f, 3.0f}).reshape({1, 5}).requires_grad_(true);
  const auto y = kernels::bias_activation(h, torch::zeros({5}), kernels::Activation::relu2);
  CHECK(torch::equal(y, torch::tensor({0.0f, 0.0f, 0.0f, 0.25f, 9.0f}).reshape({1, 5})));
  y.sum().backward();
  CHECK(torch::equal(h.grad(), torch::tensor({0.0f, 0.0f, 0.0f, 1.0f, 6.0f}).reshape({1, 5})));
}

TEST_CASE("LayerNorm: output and the gradients of x, weight and bias equal layer_norm's, in fp32 and as bf16") {
  torch::manual_seed(21);
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{1, 16}, {3, 7}, {64, 256}, {37, 100}, {5, 33}}) {
    CAPTURE(rows);
    CAPTURE(cols);
    const auto x = torch::randn({rows, cols}) * 3 + 1, w = torch::randn({cols}), b = torch::randn({cols});
    for (const auto out : {torch::kFloat, torch::kBFloat16}) {
      CAPTURE(out);
      const double tol = out == torch::kFloat ? 1e-5 : 1e-2;
      auto xf = x.clone().requires_grad_(true), wf = w.clone().requires_grad_(true), bf = b.clone().requires_grad_(true);
      auto xr = x.clone().requires_grad_(true), wr = w.clone().requires_grad_(true), br = b.clone().requires_grad_(true);
      const auto yf = kernels::layer_norm(xf, wf, bf, 1e-5, out);
      const auto yr = kernels::layer_norm_reference(xr, wr, br, 1e-5);
      CHECK((yf.scalar_type() == out));
      CHECK(rel_err(yf, yr) < tol);
      const auto g = torch::randn({rows, cols});
      (yf.to(torch::kFloat) * g).sum().backward();
      (yr * g).sum().backward();
      CHECK(rel_err(xf.grad(), xr.grad()) <= tol);
      CHECK(rel_err(wf.grad(), wr.grad()) < tol);
      CHECK(rel_err(bf.grad(), br.grad()) < tol);
    }
    if (cols > 1) {
      const auto w64 = w.to(torch::kDouble), b64 = b.to(torch::kDouble);
      check_finite_differences([&](const torch::Tensor& v) { return kernels::layer_norm(v, w, b, 1e-5, torch::kFloat); },
                               [&](const torch::Tensor& v) { return kernels::layer_norm_reference(v, w64, b64, 1e-5); }, x);
    }
  }
}

TEST_CASE("the CUDA kernels take only what they handle (the rest goes to the reference)") {
  using c10::DeviceType;
  const auto takes = [](DeviceType d, torch::ScalarType t, std::vector<int64_t> sizes, torch::ScalarType tt,
                        std::vector<int64_t> target_sizes) {
    return kernels::cuda_cross_entropy_takes(d, t, sizes, tt, target_sizes);
  };
  const bool cuda_build = build_devices().cuda_built;  // (a CPU build's kernel takes nothing)
  CHECK(takes(DeviceType::CUDA, torch::kBFloat16, {16384, 50304}, torch::kLong, {16384}) == cuda_build);
  CHECK(takes(DeviceType::CUDA, torch::kFloat, {7, 13}, torch::kLong, {7}) == cuda_build);
  CHECK(takes(DeviceType::CUDA, torch::kFloat, {1, 1}, torch::kLong, {1}) == cuda_build);
  CHECK_FALSE(takes(DeviceType::CPU, torch::kFloat, {7, 13}, torch::kLong, {7}));          // the CPU's own kernel
  CHECK_FALSE(takes(DeviceType::CUDA, torch::kHalf, {7, 13}, torch::kLong, {7}));          // fp16
  CHECK_FALSE(takes(DeviceType::CUDA, torch::kDouble, {7, 13}, torch::kLong, {7}));
  CHECK_FALSE(takes(DeviceType::CUDA, torch::kFloat, {2, 7, 13}, torch::kLong, {14}));     // not (N, V)
  CHECK_FALSE(takes(DeviceType::CUDA, torch::kFloat, {7, 13}, torch::kInt, {7}));          // int32 targets
  CHECK_FALSE(takes(DeviceType::CUDA, torch::kFloat, {7, 13}, torch::kLong, {6}));         // one target short
  CHECK_FALSE(takes(DeviceType::CUDA, torch::kFloat, {0, 13}, torch::kLong, {0}));         // no rows
  CHECK_FALSE(takes(DeviceType::CUDA, torch::kFloat, {int64_t{1} << 31, 2}, torch::kLong, {int64_t{1} << 31}));
  // CPU tensors never reach the CUDA kernels, whatever the option
  CHECK_FALSE(kernels::cuda_cross_entropy_takes(torch::randn({3, 5}), torch::zeros({3}, torch::kLong)));
  CHECK_FALSE(kernels::cuda_layer_norm_takes(torch::randn({3, 5}), torch::ones({5}), torch::kBFloat16));
  CHECK_FALSE(kernels::cuda_bias_activation_takes(torch::randn({3, 5}), torch::ones({5})));
}

TEST_CASE("cross-entropy in place: the loss and the gradient equal F::cross_entropy, written over the logits "
          "(uncapped, and soft-capped as cap · tanh(logits / cap))") {
  torch::manual_seed(13);
  for (const double cap : {0.0, 30.0, 1.5})  // 1.5: most logits (σ = 3) far into the tanh's bend
  for (const auto& [rows, vocab] : std::vector<std::pair<int64_t, int64_t>>{{7, 13}, {64, 4096}, {1, 1}, {33, 50304}}) {
    CAPTURE(cap);
    CAPTURE(rows);
    CAPTURE(vocab);
    const auto logits0 = torch::randn({rows, vocab}) * 3;
    const auto targets = torch::randint(vocab, {rows}, torch::kLong);
    for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
      const double tol = dtype == torch::kFloat ? 1e-5 : 1e-2;
      // As in the model: the logits are an intermediate result (here of a scaling), not a leaf.
      auto leaf_fused = logits0.to(dtype).detach().requires_grad_(true);
      auto leaf_ref = logits0.to(dtype).to(torch::kFloat).detach().requires_grad_(true);
      auto logits = leaf_fused * 1;
      const void* memory = logits.data_ptr();
      auto loss = kernels::cross_entropy_inplace(logits, targets, cap);
      auto loss_ref = kernels::cross_entropy_reference(leaf_ref * 1, targets, cap);
      CHECK((loss.scalar_type() == torch::kFloat));
      CHECK(std::abs(loss.item<double>() - loss_ref.item<double>()) <= 1e-5 * std::abs(loss_ref.item<double>()) + 1e-6);
      (loss * 0.5).backward();  // a gradient scale, as gradient accumulation gives
      (loss_ref * 0.5).backward();
      const double err = rel_err(leaf_fused.grad(), leaf_ref.grad());
      CHECK_MESSAGE(err < tol, "gradient relative error ", err);
      // The gradient was written over the logits' memory: no second (B·T, V) buffer.
      CHECK(logits.data_ptr() == memory);
      CHECK(rel_err(logits.to(torch::kFloat), leaf_ref.grad()) < tol);  // scaled by backward's 0.5 in place
    }
    if (vocab <= 4096) {
      const Op fused = [&](const torch::Tensor& x) { return kernels::cross_entropy_inplace(x * 1, targets, cap); };
      const Op reference = [&](const torch::Tensor& x) {  // written out, in the input's dtype (double)
        return torch::nn::functional::cross_entropy(cap > 0 ? torch::tanh(x / cap) * cap : x, targets);
      };
      check_finite_differences(fused, reference, logits0);
    }
  }
  SUBCASE("without a gradient (evaluation) the logits are left alone") {
    torch::NoGradGuard no_grad;
    const auto logits = torch::randn({5, 9});
    const auto targets = torch::randint(9, {5}, torch::kLong);
    const auto copy = logits.clone();
    const auto loss = kernels::cross_entropy_inplace(logits, targets);
    CHECK(torch::equal(logits, copy));
    CHECK(loss.item<double>() == doctest::Approx(kernels::cross_entropy_reference(copy, targets).item<double>()).epsilon(1e-6));
  }
  SUBCASE("a target outside the vocabulary is refused") {
    CHECK_THROWS_WITH_AS(kernels::cross_entropy_inplace(torch::randn({2, 4}), torch::tensor({1, 4}, torch::kLong)),
                         doctest::Contains("outside [0, 4)"), c10::Error);
  }
}

TEST_CASE("non-finite inputs give non-finite outputs, extreme ones the exact limits (a diverged run must show)") {
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    CAPTURE(dtype);
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    {  // cross-entropy: a NaN or +inf logit makes the loss NaN, a −inf one (never the target's) is ignored
      auto logits = torch::randn({3, 40}).to(dtype);
      logits.index_put_({0, 5}, nan);
      logits.index_put_({1, 7}, inf);
      const auto targets = torch::tensor({1, 2, 3}, torch::kLong);
      CHECK(!std::isfinite(kernels::cross_entropy_inplace(logits.slice(0, 0, 1), targets.slice(0, 0, 1)).item<double>()));
      CHECK(!std::isfinite(kernels::cross_entropy_inplace(logits.slice(0, 1, 2), targets.slice(0, 1, 2)).item<double>()));
      auto row = torch::randn({1, 40}).to(dtype);
      const auto want = kernels::cross_entropy_reference(row.to(torch::kFloat), targets.slice(0, 2, 3)).item<double>();
      row.index_put_({0, 9}, -inf);
      const auto got = kernels::cross_entropy_inplace(row, targets.slice(0, 2, 3)).item<double>();
      CHECK(std::isfinite(got));
      CHECK(got < want);
    }
    {  // GELU: NaN stays NaN; far out it is the identity or zero
      const auto h = torch::tensor({nan, 100.0, -100.0, 0.0}).to(dtype).reshape({1, 4});
      const auto y = kernels::bias_activation(h, torch::zeros({4}), kernels::Activation::gelu).to(torch::kDouble);
      CHECK(std::isnan(y[0][0].item<double>()));
      CHECK(y[0][1].item<double>() == 100.0);
      CHECK(y[0][2].item<double>() == 0.0);
      CHECK(y[0][3].item<double>() == 0.0);
    }
    {  // attention: a NaN in one key poisons the outputs of the queries that see it, not earlier ones
      auto qkv = torch::randn({1, 70, 3 * 2 * 16}).to(dtype);
      qkv.index_put_({0, 40, 2 * 16}, nan);  // key 40, head 0, first component
      const auto out = kernels::causal_attention(qkv, 2).to(torch::kDouble);
      CHECK(torch::isfinite(out.slice(1, 0, 40)).all().item<bool>());
      CHECK(torch::isnan(out.slice(1, 40, 70).slice(2, 0, 16)).all().item<bool>());
    }
  }
}

TEST_CASE("linear with one row leaves its bias alone (an expanded bias of one row is contiguous already)") {
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({1, 8}), w = torch::randn({4, 8}), b = torch::randn({4});
  const auto before = b.clone();
  const auto y1 = kernels::linear(x, w, b);
  const auto y2 = kernels::linear(x, w, b);
  CHECK(torch::equal(b, before));
  CHECK(torch::equal(y1, y2));
  CHECK(torch::allclose(y1, torch::nn::functional::linear(x, w, b), 1e-5, 1e-6));
}

// x's shape and the output width of the linear tests: odd sizes, the MLP's, a single element.
const std::vector<std::pair<std::vector<int64_t>, int64_t>> k_linear_shapes{
    {{2, 7, 5}, 3}, {{64, 256}, 768}, {{1, 1, 1}, 1}, {{3, 33, 17}, 50}, {{5, 61, 300}, 45}};

TEST_CASE("the fused kernels call the oneDNN 2.x they are written for, not a PyTorch wheel's 3.x") {
  // A wheel's LibTorch ships oneDNN 3.x's headers and links 3.x inside itself: the kernels'
  // calls (sgemm, the bf16 matmul primitive) must bind to the 2.x library they are built for.
  const std::string version = kernels::onednn::library_version();
  MESSAGE("oneDNN " << version << " beside LibTorch " << TORCH_VERSION);
  CHECK(version.rfind("2.", 0) == 0);
}

TEST_CASE("linear through this CPU's sgemm (oneDNN's or ATen's): output, input, weight and bias gradients equal F::linear (fp32)") {
  torch::manual_seed(15);
  for (const auto& [shape, n] : k_linear_shapes) {
    for (const bool with_bias : {true, false}) {
      CAPTURE(n);
      CAPTURE(with_bias);
      const auto w0 = torch::randn({n, shape.back()});
      const auto b0 = with_bias ? torch::randn({n}) : torch::Tensor();
      auto wf = w0.clone().requires_grad_(true), wr = w0.clone().requires_grad_(true);
      auto bf = with_bias ? b0.clone().requires_grad_(true) : torch::Tensor();
      auto br = with_bias ? b0.clone().requires_grad_(true) : torch::Tensor();
      const Op fused = [&](const torch::Tensor& x) { return kernels::linear(x, wf, bf); };
      const Op reference = [&](const torch::Tensor& x) { return kernels::linear_reference(x, wr, br); };
      check_against_reference(fused, reference, torch::randn(shape), torch::kFloat, 1e-5);
      CHECK(rel_err(wf.grad(), wr.grad()) < 1e-5);
      if (with_bias) {
        CHECK(rel_err(bf.grad(), br.grad()) < 1e-5);
      }
      const Op fused_fd = [&](const torch::Tensor& x) { return kernels::linear(x, w0, b0); };
      const Op reference_fd = [&](const torch::Tensor& x) {
        return kernels::linear_reference(x, w0.to(x.scalar_type()), with_bias ? b0.to(x.scalar_type()) : torch::Tensor());
      };
      check_finite_differences(fused_fd, reference_fd, torch::randn(shape));
    }
  }
}

TEST_CASE("linear in bf16 (bf16 products, or widened to fp32 without them): output and the gradients of x, weight and bias equal F::linear's") {
  torch::manual_seed(16);
  for (const auto& [shape, n] : k_linear_shapes) {
    for (const bool with_bias : {true, false}) {
      for (const bool kept : {false, true}) {
        for (const auto x_type : {torch::kBFloat16, torch::kFloat}) {
          CAPTURE(n);
          CAPTURE(with_bias);
          CAPTURE(kept);
          const auto w0 = torch::randn({n, shape.back()});
          const auto b0 = with_bias ? torch::randn({n}) : torch::Tensor();
          auto wf = w0.clone().requires_grad_(true), wr = w0.clone().requires_grad_(true);
          auto bf = with_bias ? b0.clone().requires_grad_(true) : torch::Tensor();
          auto br = with_bias ? b0.clone().requires_grad_(true) : torch::Tensor();
          const auto copies = kept ? std::make_unique<kernels::KeptBf16Copies>(std::vector<torch::Tensor>{wf}) : nullptr;
          // x arrives in x_type; the product's output is bf16 either way
          const Op fused = [&](const torch::Tensor& x) { return kernels::linear_bf16(x.to(x_type), wf, bf); };
          const Op reference = [&](const torch::Tensor& x) { return kernels::linear_reference(x, wr, br); };
          check_against_reference(fused, reference, torch::randn(shape), torch::kBFloat16, 1e-2);
          CHECK((wf.grad().scalar_type() == torch::kFloat));
          CHECK(rel_err(wf.grad(), wr.grad()) < 1e-2);
          if (with_bias) {
            CHECK((bf.grad().scalar_type() == torch::kFloat));
            CHECK(rel_err(bf.grad(), br.grad()) < 1e-2);
          }
        }
      }
    }
  }
}

// Autocast's numerics, element by element, on whichever path this CPU takes (bf16 products, or
// the operands widened to fp32 on AVX2 — the kernels.avx2 test forces that one everywhere): y is
// the exact product of the bf16-rounded x and weight plus the bias, summed in fp32 and rounded once
// to bf16; dx the same of the bf16 gradient and the weight; dW and db fp32 sums of exact products.
// The sums' order is the GEMM's own, so an element may differ from the exact sum by n fp32
// roundings of its n terms (n·2⁻²⁴ of their absolute sum) besides the one bf16 rounding (2⁻⁸ of
// it). The bias: autocast and the widened path round it to bf16, oneDNN's bf16 matmul adds it in
// fp32 — a difference of at most half a bf16 step, 2⁻⁸ of it (bf16 keeps 8 significant bits),
// allowed for; where the product nearly cancels the bias that is most of the output.
TEST_CASE("linear in bf16 has autocast's numerics: bf16-rounded operands, fp32 sums, one bf16 rounding") {
  torch::manual_seed(19);
  const auto exact = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kDouble); };
  // |got − want| ≤ rounding·|want| + n·2⁻²⁴·abs_sum + extra, everywhere
  const auto within = [](const torch::Tensor& got, const torch::Tensor& want, const torch::Tensor& abs_sum,
                         int64_t n, double rounding, const torch::Tensor& extra) {
    const auto bound = rounding * want.abs() + static_cast<double>(n) * std::ldexp(1.0, -24) * abs_sum + extra + 1e-30;
    return ((got.to(torch::kDouble) - want).abs() <= bound).all().item<bool>();
  };
  const auto none = torch::zeros({}, torch::kDouble);
  for (const auto& [shape, n] : k_linear_shapes) {
    for (const bool with_bias : {true, false}) {
      CAPTURE(n);
      CAPTURE(with_bias);
      const int64_t k = shape.back();
      const auto x = torch::randn(shape), w0 = torch::randn({n, k});
      const auto b0 = with_bias ? torch::randn({n}) : torch::Tensor();
      auto w = w0.clone().requires_grad_(true);
      auto b = with_bias ? b0.clone().requires_grad_(true) : torch::Tensor();
      const auto y = kernels::linear_bf16(x, w, b);
      REQUIRE((y.scalar_type() == torch::kBFloat16));
      const auto x64 = exact(x).reshape({-1, k}), w64 = exact(w0);
      const int64_t m = x64.size(0);
      auto want = x64.mm(w64.t());
      auto abs_sum = x64.abs().mm(w64.abs().t());
      auto bias_slack = none;
      if (with_bias) {
        want += exact(b0);
        abs_sum += exact(b0).abs();
        bias_slack = b0.to(torch::kDouble).abs() / 256;
      }
      CHECK(within(y.reshape({-1, n}), want, abs_sum, k + 1, 1.0 / 256, bias_slack));
      const auto dy = torch::randn(y.sizes()).to(torch::kBFloat16);
      y.backward(dy);
      const auto dy64 = dy.to(torch::kDouble).reshape({-1, n});
      CHECK((w.grad().scalar_type() == torch::kFloat));
      CHECK(within(w.grad(), dy64.t().mm(x64), dy64.abs().t().mm(x64.abs()), m, 0.0, none));
      if (with_bias) {
        CHECK(within(b.grad(), dy64.sum(0), dy64.abs().sum(0), m, 0.0, none));
      }
      auto xg = x.clone().requires_grad_(true);
      kernels::linear_bf16(xg, w0, b0).backward(dy);
      CHECK((xg.grad().scalar_type() == torch::kFloat));  // cast back to x's type by autograd
      CHECK(within(xg.grad().reshape({-1, k}), dy64.mm(w64), dy64.abs().mm(w64.abs()), n, 1.0 / 256, none));
    }
  }
}

// The GEMM of bf16 operands widened in its packing (kernels/cpu/gemm.cpp, AVX2's bf16 linear):
// each operand bf16 or fp32 (read rounded to bf16), as is or transposed, C fp32 or bf16 with a
// bias; sizes off the 6 × 16 tile, K across blocks of 256, more rows than a row block, fewer rows
// than threads (C's columns then split among them), and K = 0.
// Every element within the fp32 sums' n·2⁻²⁴ of the exact terms' absolute sum (and the one bf16
// rounding of a bf16 C) of the exact product of the rounded operands.
TEST_CASE("the widened GEMM: autocast's numerics for every layout, operand type and edge") {
  auto* const gemm = kernels::cpu::ops().widened_gemm;
  if (gemm == nullptr) {
    MESSAGE("no widened GEMM on this instruction set (" << kernels::cpu::ops().isa << ")");
    return;
  }
  using kernels::cpu::DType;
  torch::manual_seed(21);
  const auto exact = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kDouble); };
  struct Size {
    int64_t m, n, k;
  };
  for (const Size& z : {Size{1, 1, 1}, Size{7, 17, 9}, Size{150, 45, 300}, Size{13, 130, 520}, Size{2, 70, 40}, Size{3, 40, 300},
                        Size{4, 5, 0}}) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        for (const auto type : {torch::kBFloat16, torch::kFloat}) {
          for (const auto c_type : {DType::f32, DType::bf16}) {
            CAPTURE(z.m);
            CAPTURE(z.n);
            CAPTURE(z.k);
            CAPTURE(ta);
            CAPTURE(tb);
            CAPTURE(type == torch::kFloat);
            CAPTURE(c_type == DType::bf16);
            // stored as op(M)ᵀ when transposed, with a row stride of 3 more than the row
            const auto a_store = torch::randn({ta ? z.k : z.m, (ta ? z.m : z.k) + 3}).to(type);
            const auto b_store = torch::randn({tb ? z.n : z.k, (tb ? z.k : z.n) + 3}).to(type);
            const auto a = a_store.narrow(1, 0, ta ? z.m : z.k), b = b_store.narrow(1, 0, tb ? z.k : z.n);
            const auto a64 = ta ? exact(a).t() : exact(a), b64 = tb ? exact(b).t() : exact(b);
            const auto bias = torch::randn({z.n});
            const bool with_bias = c_type == DType::bf16;
            auto want = a64.mm(b64);
            auto abs_sum = a64.abs().mm(b64.abs());
            if (with_bias) {
              want += exact(bias);
              abs_sum += exact(bias).abs();
            }
            const auto c = torch::full({z.m, z.n + 2}, 7.f).to(c_type == DType::f32 ? torch::kFloat : torch::kBFloat16);
            const DType t = type == torch::kFloat ? DType::f32 : DType::bf16;
            gemm(z.m, z.n, z.k, {t, a_store.data_ptr(), a_store.size(1), ta}, {t, b_store.data_ptr(), b_store.size(1), tb},
                 with_bias ? bias.data_ptr<float>() : nullptr, c_type, c.data_ptr(), z.n + 2);
            const double rounding = c_type == DType::bf16 ? 1.0 / 256 : 0.0;
            const auto bound = rounding * want.abs() + static_cast<double>(z.k + 1) * std::ldexp(1.0, -24) * abs_sum + 1e-30;
            CHECK(((c.narrow(1, 0, z.n).to(torch::kDouble) - want).abs() <= bound).all().item<bool>());
            CHECK((c.narrow(1, z.n, 2).to(torch::kFloat) == 7.f).all().item<bool>());  // nothing past C's columns
          }
        }
      }
    }
  }
}

TEST_CASE("kernels::matmul of bf16 matrices (Muon's): the fp32 product of the bf16 operands, rounded once, views included") {
  torch::manual_seed(22);
  const auto x = torch::randn({37, 70}).to(torch::kBFloat16);
  const auto x64 = x.to(torch::kDouble);
  for (const auto& [a, b, want] : {std::tuple{x, x.t(), x64.mm(x64.t())}, std::tuple{x.t(), x, x64.t().mm(x64)},
                                   std::tuple{x.narrow(1, 3, 37), x, x64.narrow(1, 3, 37).mm(x64)}}) {
    const auto got = kernels::matmul(a, b);
    REQUIRE((got.scalar_type() == torch::kBFloat16));
    const auto abs_sum = a.to(torch::kDouble).abs().mm(b.to(torch::kDouble).abs());
    const auto bound = want.abs() / 256 + static_cast<double>(a.size(1)) * std::ldexp(1.0, -24) * abs_sum + 1e-30;
    CHECK(((got.to(torch::kDouble) - want).abs() <= bound).all().item<bool>());
  }
}

TEST_CASE("linear in bf16: a weight and bias that are views (not contiguous) give F::linear's result") {
  torch::manual_seed(18);
  const auto base0 = torch::randn({9, 5}), bias0 = torch::randn({5, 2});
  auto bf = base0.clone().requires_grad_(true), br = base0.clone().requires_grad_(true);
  const auto x = torch::randn({3, 9}).to(torch::kBFloat16);
  const auto y = kernels::linear_bf16(x, bf.t(), bias0.select(1, 0));  // weight (5, 9) and bias (5) strided
  const auto want = kernels::linear_reference(x.to(torch::kFloat), br.t(), bias0.select(1, 0));
  CHECK(rel_err(y, want) < 1e-2);
  y.to(torch::kFloat).sum().backward();
  want.sum().backward();
  CHECK(rel_err(bf.grad(), br.grad()) < 1e-2);
}

TEST_CASE("kept bf16 copies: written by the fused AdamW with the weights, made again after any other change") {
  torch::manual_seed(17);
  auto w = torch::randn({37, 19}).requires_grad_(true);
  const auto other = torch::randn({5, 3}).requires_grad_(true);
  CHECK_FALSE(kernels::kept_bf16_copy(other).defined());  // none kept: linear_bf16 casts at each use
  auto copies = std::make_unique<kernels::KeptBf16Copies>(std::vector<torch::Tensor>{w});
  if (!kernels::cpu::ops().bf16_matmul) {  // AVX2: linear_bf16 casts as autocast does, and keeps none
    CHECK_FALSE(kernels::kept_bf16_copy(w).defined());
    return;
  }
  const auto is_copy = [&] {
    const auto copy = kernels::kept_bf16_copy(w);
    return copy.defined() && torch::equal(copy, w.detach().to(torch::kBFloat16));
  };
  CHECK(is_copy());
  // the fused AdamW writes it in its pass: no cast after (the same tensor, already equal)
  torch::optim::AdamW fused({w}, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  const auto before = kernels::kept_bf16_copy(w).clone();
  w.mutable_grad() = torch::randn(w.sizes());
  kernels::adamw_step(fused);
  const c10::BFloat16* target = kernels::bf16_copy_target(w);
  const auto written = torch::from_blob(const_cast<c10::BFloat16*>(target), w.sizes(), torch::kBFloat16);
  CHECK_FALSE(torch::equal(written, before));
  CHECK(torch::equal(written, w.detach().to(torch::kBFloat16)));
  CHECK(kernels::kept_bf16_copy(w).data_ptr() == target);
  // any other change makes it again: an in-place op, LibTorch's AdamW, new storage (of a new shape too)
  {
    torch::NoGradGuard no_grad;
    w.add_(1.0);
  }
  CHECK(is_copy());
  w.mutable_grad() = torch::randn(w.sizes());
  kernels::adamw_step_reference(fused);
  CHECK(is_copy());
  w.set_data(torch::randn(w.sizes()));  // a checkpoint load: the version counter stays, the storage is new
  CHECK(is_copy());
  w.set_data(torch::randn({4, 6}));
  CHECK(is_copy());
  CHECK(kernels::kept_bf16_copy(w).sizes() == w.sizes());
  copies.reset();  // kept no longer: cast at each use
  CHECK_FALSE(kernels::kept_bf16_copy(w).defined());
}

TEST_CASE("AdamW in one pass: the same weights and moments as torch::optim::AdamW, clipping scale folded in") {
  torch::manual_seed(14);
  // Two groups (decay on matrices, none on vectors) and sizes with vector tails.
  std::vector<torch::Tensor> init{torch::randn({37, 19}), torch::randn({19}), torch::randn({1000, 3}), torch::randn({1})};
  auto make = [&](std::vector<torch::Tensor>& params) {
    for (const auto& t : init) {
      params.push_back(t.clone().requires_grad_(true));
    }
    auto options = [](double wd) {
      return std::make_unique<torch::optim::AdamWOptions>(
          torch::optim::AdamWOptions(3e-3).betas({0.9, 0.95}).eps(1e-8).weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{params[0], params[2]}, options(0.1));
    groups.emplace_back(std::vector<torch::Tensor>{params[1], params[3]}, options(0.0));
    return std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(3e-3));
  };
  std::vector<torch::Tensor> pf, pr;
  auto fused = make(pf);
  auto reference = make(pr);
  for (int step = 1; step <= 5; ++step) {
    for (size_t i = 0; i < init.size(); ++i) {
      const auto g = torch::randn(init[i].sizes()) * (step == 3 ? 1e-6 : 1.0);
      pf[i].mutable_grad() = g.clone();
      pr[i].mutable_grad() = g.clone();
    }
    const double scale = step % 2 == 0 ? 0.37 : 1.0;
    kernels::adamw_step(*fused, scale);
    kernels::adamw_step_reference(*reference, scale);
    for (size_t i = 0; i < init.size(); ++i) {
      CAPTURE(step);
      CAPTURE(i);
      CHECK(rel_err(pf[i], pr[i]) < 1e-6);
    }
  }
  // The state is torch's own (moments, step count): a reference step continues the fused ones.
  for (size_t i = 0; i < init.size(); ++i) {
    const auto g = torch::randn(init[i].sizes());
    pf[i].mutable_grad() = g.clone();
    pr[i].mutable_grad() = g.clone();
  }
  kernels::adamw_step_reference(*fused);
  kernels::adamw_step(*reference);
  for (size_t i = 0; i < init.size(); ++i) {
    CHECK(rel_err(pf[i], pr[i]) < 1e-6);
  }
}

TEST_SUITE_END();
