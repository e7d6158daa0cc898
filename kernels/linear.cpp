#include "kernels/linear.h"

#include <dnnl.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <unordered_map>

#include "kernels/common.h"
#include "kernels/onednn.h"
#include "util/cpu_isa.h"

namespace sweep::kernels {

namespace {

// Row-major C (m × n) = op(A) · op(B) (+ C when accumulate), op 'N' or 'T', through the fp32
// GEMM the kernels' table names for this CPU (cpu::Ops::gemm): oneDNN's sgemm, or ATen's
// (MKL's sgemm in a PyTorch wheel) on views of the same memory.
void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
           float* c, int64_t ldc, bool accumulate = false) {
  if (cpu::ops().gemm == cpu::Gemm::onednn) {
    const auto status = dnnl_sgemm(ta, tb, m, n, k, 1.f, a, lda, b, ldb, accumulate ? 1.f : 0.f, c, ldc);
    TORCH_CHECK(status == dnnl_success, "oneDNN sgemm failed with status ", static_cast<int>(status));
    return;
  }
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat);
  const auto op = [&](const float* p, char t, int64_t rows, int64_t cols, int64_t ld) {  // op(P), rows × cols
    const std::array<int64_t, 2> strides = t == 'N' ? std::array<int64_t, 2>{ld, 1} : std::array<int64_t, 2>{1, ld};
    return torch::from_blob(const_cast<float*>(p), {rows, cols}, strides, f32);
  };
  auto out = torch::from_blob(c, {m, n}, {ldc, 1}, f32);
  if (accumulate) {
    out.addmm_(op(a, ta, m, k, lda), op(b, tb, k, n, ldb));
  } else {
    at::mm_out(out, op(a, ta, m, k, lda), op(b, tb, k, n, ldb));
  }
}

// x fp32 (or bf16 too, for linear_bf16), weight and bias fp32, all on the CPU, of matching shapes.
void check(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, bool bf16_x = false) {
  TORCH_CHECK((x.scalar_type() == torch::kFloat || (bf16_x && x.scalar_type() == torch::kBFloat16)) &&
                  weight.scalar_type() == torch::kFloat && bias.scalar_type() == torch::kFloat,
              "linear: fp32 weight and bias expected, and x ", bf16_x ? "fp32 or bf16" : "fp32");
  TORCH_CHECK(x.device().is_cpu() && weight.device().is_cpu(), "linear: CPU tensors expected");
  TORCH_CHECK(bias.numel() == 0 || (bias.dim() == 1 && bias.size(0) == weight.size(0)), "linear: a bias of ",
              weight.size(0), " expected, got ", bias.sizes());
  TORCH_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: x (..., ", weight.size(1),
              ") expected for a weight of ", weight.sizes(), ", got ", x.sizes());
}

struct Linear : torch::autograd::Function<Linear> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                               const torch::Tensor& weight_in, const torch::Tensor& bias) {
    RECORD_USER_SCOPE("sweep::linear");
    const bool has_bias = bias.numel() > 0;
    check(x_in, weight_in, bias);
    const auto x = x_in.contiguous(), weight = weight_in.contiguous();
    const int64_t K = weight.size(1), N = weight.size(0), M = x.numel() / K;
    auto out_sizes = x.sizes().vec();
    out_sizes.back() = N;
    torch::Tensor y;
    if (has_bias) {  // start from the bias in every row, then accumulate x Wᵀ onto it
      // a copy: with M = 1 the expanded bias is already contiguous, and contiguous() would hand
      // back the bias itself, which the sgemm would then accumulate into
      y = torch::empty({M, N}, x.options()).copy_(bias.expand({M, N}));
    } else {
      y = torch::empty({M, N}, x.options());
    }
    sgemm('N', 'T', M, N, K, x.data_ptr<float>(), K, weight.data_ptr<float>(), K, y.data_ptr<float>(), N, has_bias);
    ctx->save_for_backward({x, weight});
    ctx->saved_data["bias"] = has_bias;
    return y.view(out_sizes);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    RECORD_USER_SCOPE("sweep::linear_backward");
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& weight = saved[1];
    const int64_t K = weight.size(1), N = weight.size(0), M = x.numel() / K;
    const auto dy = grads[0].contiguous();
    auto dx = torch::empty_like(x);
    auto dw = torch::empty_like(weight);
    sgemm('N', 'N', M, K, N, dy.data_ptr<float>(), N, weight.data_ptr<float>(), K, dx.data_ptr<float>(), K);  // dY W
    sgemm('T', 'N', N, K, M, dy.data_ptr<float>(), N, x.data_ptr<float>(), K, dw.data_ptr<float>(), K);  // dYᵀ X
    torch::Tensor db;
    if (ctx->saved_data["bias"].toBool()) {
      db = dy.view({M, N}).sum(0);
    }
    return {dx, dw, db};
  }
};

// ---- bf16: the kept copies of the weights, and the products from them ----

// Weak references hold an object's memory (not its data): while the entry lives, neither the
// weight's TensorImpl nor the storage it had when the copy was written can be freed, so no other
// tensor or storage can take their addresses and pass for them. set_data (a checkpoint load) keeps
// the version counter but brings another storage.
struct Kept {
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> owner;
  torch::Tensor copy;
  // the weight's storage, offset and version counter when the copy was written
  c10::weak_intrusive_ptr<c10::StorageImpl> storage{c10::intrusive_ptr<c10::StorageImpl>()};
  int64_t offset = 0;
  int64_t version = -1;
};

std::mutex g_kept_mutex;
std::unordered_map<const c10::TensorImpl*, Kept> g_kept;

void stamp(Kept& k, const torch::Tensor& weight) {
  k.storage = weight.storage().getWeakStorageImpl();
  k.offset = weight.storage_offset();
  k.version = weight._version();
}

bool current(const Kept& k, const torch::Tensor& weight) {
  return k.storage._unsafe_get_target() == weight.storage().unsafeGetStorageImpl() &&
         k.offset == weight.storage_offset() && k.version == weight._version() && k.copy.sizes() == weight.sizes();
}

struct LinearBf16 : torch::autograd::Function<LinearBf16> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    RECORD_USER_SCOPE("sweep::linear_bf16");
    const bool has_bias = bias.numel() > 0;
    check(x_in, weight, bias, true);
    auto w = kept_bf16_copy(weight);
    if (!w.defined()) {
      w = weight.detach().to(torch::kBFloat16).contiguous();
    }
    const auto b = bias.contiguous();
    const auto x = x_in.to(torch::kBFloat16).contiguous();
    const int64_t K = weight.size(1), N = weight.size(0), M = x.numel() / K;
    auto out_sizes = x.sizes().vec();
    out_sizes.back() = N;
    auto y = torch::empty({M, N}, x.options());
    onednn::product(M, N, K, x.data_ptr(), false, K, w.data_ptr(), true, K, y.data_ptr(), N, false,
                    has_bias ? b.data_ptr<float>() : nullptr);
    // the copy this product read: saved as a variable, it is freed with the graph's other saved
    // tensors after backward, and a copy made again in place before backward is an error there
    ctx->save_for_backward({x, w});
    ctx->saved_data["bias"] = has_bias;
    return y.view(out_sizes);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    RECORD_USER_SCOPE("sweep::linear_bf16_backward");
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& w = saved[1];
    const int64_t K = w.size(1), N = w.size(0), M = x.numel() / K;
    const auto dy = grads[0].to(torch::kBFloat16).contiguous();
    auto dx = torch::empty_like(x);
    auto dw = torch::empty({N, K}, dy.options().dtype(torch::kFloat));
    onednn::product(M, K, N, dy.data_ptr(), false, N, w.data_ptr(), false, K, dx.data_ptr(), K, false);  // dY W
    onednn::product(N, K, M, dy.data_ptr(), true, N, x.data_ptr(), false, K, dw.data_ptr(), K, true);  // dYᵀ X
    torch::Tensor db;
    if (ctx->saved_data["bias"].toBool()) {  // 1ᵀ dY: one more pass over dY, summed in fp32 (no fp32 copy of it)
      const auto ones = torch::ones({M}, dy.options());
      db = torch::empty({N}, dw.options());
      onednn::product(1, N, M, ones.data_ptr(), false, M, dy.data_ptr(), false, N, db.data_ptr(), N, true);
    }
    return {dx, dw, db};
  }
};

// bf16 on a CPU without bf16 products (cpu::Ops::bf16_matmul false) and without sweep's widened
// GEMM (AVX-512 without BF16, whose sgemm is twice as wide as that AVX2 GEMM): the operands
// rounded to bf16 as autocast rounds them (x, the weight, the bias), widened to fp32 — exactly: a
// product of two bf16 numbers is exact in fp32 — and multiplied by the fp32 GEMM with fp32 sums,
// the output rounded to bf16: autocast's numerics near fp32's speed. The sums run in the fp32 GEMM's
// order, so the fp32 result before that rounding differs from a native bf16 product's in its
// last bits. Backward as LinearBf16's: dx in bf16, dW and db in fp32. Saved: x and the weight in
// bf16 (widened again in backward), as much as autocast keeps. The rows go through in blocks of
// at most k_widened_block bytes of fp32 (x and y; dy and x), so that no fp32 copy of a whole
// activation (a head's logits) is ever made.
constexpr int64_t k_widened_block = k_widened_block_bytes;  // (util/cpu_isa.h: the memory plan reads it too)

int64_t widened_rows(int64_t M, int64_t N, int64_t K) {
  return std::min<int64_t>(std::max<int64_t>(k_widened_block / (4 * std::max<int64_t>(N + K, 1)), 64), std::max<int64_t>(M, 1));
}

struct LinearBf16Widened : torch::autograd::Function<LinearBf16Widened> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    RECORD_USER_SCOPE("sweep::linear_bf16_widened");
    const bool has_bias = bias.numel() > 0;
    check(x_in, weight, bias, true);
    const auto x = x_in.to(torch::kBFloat16).contiguous();
    const auto w = weight.detach().to(torch::kBFloat16).contiguous();
    const int64_t K = weight.size(1), N = weight.size(0), M = x.numel() / K;
    auto out_sizes = x.sizes().vec();
    out_sizes.back() = N;
    const auto w32 = w.to(torch::kFloat);
    const auto b16 = has_bias ? bias.to(torch::kBFloat16) : torch::Tensor();
    const auto x2 = x.view({M, K});
    auto y = torch::empty({M, N}, x.options());
    for (int64_t r0 = 0, rows = widened_rows(M, N, K); r0 < M; r0 += rows) {
      const int64_t m = std::min(rows, M - r0);
      const auto x32 = x2.narrow(0, r0, m).to(torch::kFloat);
      // the bias in every row, then x Wᵀ onto it (a copy: see Linear)
      auto y32 = has_bias ? torch::empty({m, N}, x32.options()).copy_(b16.expand({m, N})) : torch::empty({m, N}, x32.options());
      sgemm('N', 'T', m, N, K, x32.data_ptr<float>(), K, w32.data_ptr<float>(), K, y32.data_ptr<float>(), N, has_bias);
      y.narrow(0, r0, m).copy_(y32);
    }
    ctx->save_for_backward({x, w});
    ctx->saved_data["bias"] = has_bias;
    return y.view(out_sizes);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    RECORD_USER_SCOPE("sweep::linear_bf16_widened_backward");
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto w32 = saved[1].to(torch::kFloat);
    const int64_t K = w32.size(1), N = w32.size(0), M = x.numel() / K;
    const auto dy = grads[0].to(torch::kBFloat16).contiguous().view({M, N});  // the bf16 gradient
    const auto x2 = x.view({M, K});
    auto dx = torch::empty({M, K}, x.options());
    auto dw = torch::zeros({N, K}, w32.options());
    const bool has_bias = ctx->saved_data["bias"].toBool();
    auto db = has_bias ? torch::zeros({N}, w32.options()) : torch::Tensor();
    for (int64_t r0 = 0, rows = widened_rows(M, N, K); r0 < M; r0 += rows) {
      const int64_t m = std::min(rows, M - r0);
      const auto dy32 = dy.narrow(0, r0, m).to(torch::kFloat), x32 = x2.narrow(0, r0, m).to(torch::kFloat);
      auto dx32 = torch::empty({m, K}, dy32.options());
      sgemm('N', 'N', m, K, N, dy32.data_ptr<float>(), N, w32.data_ptr<float>(), K, dx32.data_ptr<float>(), K);  // dY W
      sgemm('T', 'N', N, K, m, dy32.data_ptr<float>(), N, x32.data_ptr<float>(), K, dw.data_ptr<float>(), K,
            /*accumulate=*/true);  // dYᵀ X, summed over the blocks
      dx.narrow(0, r0, m).copy_(dx32);
      if (has_bias) {
        db += dy32.sum(0);
      }
    }
    return {dx.view(x.sizes()), dw, db};
  }
};

// bf16 on a CPU without bf16 products where kernels/cpu/gemm.cpp has a GEMM (AVX2): its packing
// reads the bf16 operands and widens them, so no operand is widened in a pass of its own. The
// numerics are LinearBf16Widened's: x, the weight and the bias rounded to bf16, fp32 sums, the
// output rounded once to bf16; dx in bf16, dW and db in fp32. Saved: x and the weight in bf16, as
// autocast keeps them.
struct LinearBf16Packed : torch::autograd::Function<LinearBf16Packed> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    RECORD_USER_SCOPE("sweep::linear_bf16_packed");
    const bool has_bias = bias.numel() > 0;
    check(x_in, weight, bias, true);
    const auto x = x_in.to(torch::kBFloat16).contiguous();
    const auto w = weight.detach().to(torch::kBFloat16).contiguous();
    const auto b = bias.contiguous();
    const int64_t K = weight.size(1), N = weight.size(0), M = x.numel() / K;
    auto out_sizes = x.sizes().vec();
    out_sizes.back() = N;
    auto y = torch::empty({M, N}, x.options());
    using cpu::DType;
    cpu::ops().widened_gemm(M, N, K, {DType::bf16, x.data_ptr(), K}, {DType::bf16, w.data_ptr(), K, /*transposed=*/true},
                            has_bias ? b.data_ptr<float>() : nullptr, DType::bf16, y.data_ptr(), N);
    ctx->save_for_backward({x, w});
    ctx->saved_data["bias"] = has_bias;
    return y.view(out_sizes);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    RECORD_USER_SCOPE("sweep::linear_bf16_packed_backward");
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& w = saved[1];
    const int64_t K = w.size(1), N = w.size(0), M = x.numel() / K;
    const auto dy = grads[0].to(torch::kBFloat16).contiguous();  // the bf16 gradient
    auto dx = torch::empty_like(x);
    auto dw = torch::empty({N, K}, dy.options().dtype(torch::kFloat));
    using cpu::DType;
    const cpu::WidenedMatrix dy_rows{DType::bf16, dy.data_ptr(), N};
    cpu::ops().widened_gemm(M, K, N, dy_rows, {DType::bf16, w.data_ptr(), K}, nullptr, DType::bf16, dx.data_ptr(), K);  // dY W
    cpu::ops().widened_gemm(N, K, M, {DType::bf16, dy.data_ptr(), N, /*transposed=*/true}, {DType::bf16, x.data_ptr(), K},
                            nullptr, DType::f32, dw.data_ptr(), K);  // dYᵀ X
    torch::Tensor db;
    if (ctx->saved_data["bias"].toBool()) {  // 1ᵀ dY, summed in fp32
      db = at::sum(dy.view({M, N}), {0}, false, torch::kFloat);
    }
    return {dx, dw, db};
  }
};

}  // namespace

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  // LibTorch 1.13's autograd Functions take no undefined tensor: no bias is an empty one.
  return Linear::apply(x, weight, bias.defined() ? bias : torch::empty({0}, weight.options()));
}

torch::Tensor linear_bf16(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const auto b = bias.defined() ? bias : torch::empty({0}, weight.options());
  if (cpu::ops().bf16_matmul) {
    return LinearBf16::apply(x, weight, b);
  }
  return cpu::ops().widened_gemm != nullptr ? LinearBf16Packed::apply(x, weight, b) : LinearBf16Widened::apply(x, weight, b);
}

int64_t linear_bf16_widened_block() {
  return cpu::ops().bf16_matmul || cpu::ops().widened_gemm != nullptr ? 0 : k_widened_block;
}

std::string linear_path(bool bf16) {
  const cpu::Ops& ops = cpu::ops();
  const std::string gemm = ops.gemm == cpu::Gemm::onednn ? "oneDNN sgemm" : "ATen sgemm";
  if (!bf16) {
    return gemm;
  }
  if (ops.bf16_matmul) {
    return std::string(ops.amx ? "AMX" : "AVX512-BF16") + " (oneDNN)";
  }
  return ops.widened_gemm != nullptr ? "widened in sweep's GEMM" : "widened, " + gemm;
}

std::string linear_paths() {
  const cpu::Ops& ops = cpu::ops();
  std::string bf16 = ops.bf16_matmul ? std::string(ops.amx ? "AMX" : "AVX512-BF16") + " products (oneDNN's matmul)"
                     : ops.widened_gemm != nullptr
                         ? "no bf16 instructions on this CPU, so bf16 operands widened to fp32 in sweep's own GEMM's packing"
                         : "no bf16 instructions on this CPU, so operands widened to fp32 and " + linear_path(false);
  return "fp32 matmuls: " + linear_path(false) + "; bf16: " + bf16;
}

KeptBf16Copies::KeptBf16Copies(const std::vector<torch::Tensor>& weights) {
  if (!linear_bf16_keeps_copies()) {  // linear_bf16 casts as autocast does: a copy would not be read
    return;
  }
  torch::NoGradGuard no_grad;
  const std::lock_guard<std::mutex> lock(g_kept_mutex);
  for (const auto& w : weights) {
    TORCH_CHECK(w.scalar_type() == torch::kFloat && w.device().is_cpu(), "KeptBf16Copies: fp32 CPU weights expected");
    Kept k{c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(w.getIntrusivePtr()),
           w.detach().to(torch::kBFloat16).contiguous()};
    stamp(k, w);
    g_kept.insert_or_assign(w.unsafeGetTensorImpl(), std::move(k));
    m_weights.push_back(w.unsafeGetTensorImpl());
  }
}

KeptBf16Copies::~KeptBf16Copies() {
  const std::lock_guard<std::mutex> lock(g_kept_mutex);
  for (const auto* w : m_weights) {
    g_kept.erase(w);
  }
}

bool linear_bf16_keeps_copies() { return cpu::ops().bf16_matmul; }

torch::Tensor kept_bf16_copy(const torch::Tensor& weight) {
  const std::lock_guard<std::mutex> lock(g_kept_mutex);
  const auto it = g_kept.find(weight.unsafeGetTensorImpl());
  if (it == g_kept.end()) {
    return {};
  }
  Kept& k = it->second;
  if (!current(k, weight)) {
    torch::NoGradGuard no_grad;
    if (k.copy.sizes() == weight.sizes()) {
      k.copy.copy_(weight.detach());
    } else {
      k.copy = weight.detach().to(torch::kBFloat16).contiguous();
    }
    stamp(k, weight);
  }
  return k.copy;
}

c10::BFloat16* bf16_copy_target(const torch::Tensor& weight) {
  const std::lock_guard<std::mutex> lock(g_kept_mutex);
  const auto it = g_kept.find(weight.unsafeGetTensorImpl());
  return it != g_kept.end() && it->second.copy.sizes() == weight.sizes() ? it->second.copy.data_ptr<c10::BFloat16>()
                                                                         : nullptr;
}

void bf16_copy_written(const torch::Tensor& weight) {
  const std::lock_guard<std::mutex> lock(g_kept_mutex);
  const auto it = g_kept.find(weight.unsafeGetTensorImpl());
  if (it != g_kept.end()) {
    stamp(it->second, weight);
  }
}

namespace {
// A 2-D bf16 matrix as widened_gemm reads it: rows side by side, or columns (a transpose's view).
cpu::WidenedMatrix widened_operand(torch::Tensor& m) {
  if (m.stride(1) != 1 && m.stride(0) != 1) {
    m = m.contiguous();
  }
  const bool transposed = m.stride(1) != 1;
  return {cpu::DType::bf16, m.data_ptr(), transposed ? m.stride(1) : m.stride(0), transposed};
}
}  // namespace

torch::Tensor matmul(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != torch::kBFloat16 || b.scalar_type() != torch::kBFloat16 || !a.device().is_cpu() ||
      cpu::ops().bf16_matmul) {
    return torch::matmul(a, b);
  }
  if (cpu::ops().widened_gemm != nullptr && a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0)) {
    auto a2 = a, b2 = b;
    const auto wa = widened_operand(a2), wb = widened_operand(b2);
    auto c = torch::empty({a.size(0), b.size(1)}, a.options());
    cpu::ops().widened_gemm(a.size(0), b.size(1), a.size(1), wa, wb, nullptr, cpu::DType::bf16, c.data_ptr(), b.size(1));
    return c;
  }
  return torch::matmul(a.to(torch::kFloat), b.to(torch::kFloat)).to(torch::kBFloat16);
}

torch::Tensor linear_reference(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return torch::nn::functional::linear(x, weight, bias);
}

}  // namespace sweep::kernels
