// The CPU kernels behind kernels/*.h, on raw pointers: compiled once per instruction set (AVX2,
// AVX-512) from kernels/cpu/ops.cpp, the best one the CPU has picked at run time by `ops()`.
// Every kernel computes in fp32 whatever its storage type (fp32 or bf16) and is parallel over
// ATen's thread pool. Callers (kernels/*.cpp) check shapes and dtypes; nothing here does.
#pragma once

#include <cstdint>

namespace sweep::kernels::cpu {

enum class DType { f32, bf16 };
enum class Activation { gelu, relu2 };  // exact (erf) GELU; relu(x)²

struct AttentionArgs {
  int64_t batch, seq, heads, head_size;  // qkv is (batch, seq, 3 · heads · head_size), Q, K, V side by side
  float dropout = 0;  // probability of dropping an attention weight (after the softmax)
  uint64_t seed = 0;  // the dropout mask is a hash of (seed, batch · head, query, key): recomputed, never stored
};

// Attention dropout: the scale (0 or 1 / (1 − p)) of weight (query i, key j) of head bh. A hash,
// so the backward recomputes the forward's mask; the same function builds the tests' reference.
inline uint32_t dropout_mix(uint32_t h) {  // MurmurHash3's finaliser
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}
inline uint32_t dropout_row_key(uint64_t seed, int64_t bh, int64_t i) {
  const uint32_t head = dropout_mix(static_cast<uint32_t>(seed) ^ dropout_mix(static_cast<uint32_t>(seed >> 32) +
                                                                            static_cast<uint32_t>(bh) * 0x9e3779b1u));
  return dropout_mix(head ^ (static_cast<uint32_t>(i) * 0x85ebca77u + 0x27d4eb2fu));
}
inline bool dropout_keep(uint32_t row_key, int64_t j, float p) {  // P(keep) = 1 − p, to 2^-24
  const uint32_t x = dropout_mix(row_key + static_cast<uint32_t>(j) * 0xc2b2ae3du);
  return static_cast<float>(x >> 8) >= p * 16777216.0f;
}

struct AdamWSegment {  // one parameter tensor, every buffer fp32 and contiguous
  float* param;
  void* param_bf16;  // a bf16 copy of param written with it, or null
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  int64_t numel;
  // Constants of PyTorch's AdamW computed in double by the caller, then rounded once, as there:
  float decay;                  // 1 − lr · weight_decay
  float step_size;              // lr / (1 − beta1^step)
  float bias_correction2_sqrt;  // √(1 − beta2^step)
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps;
};

// An operand of widened_gemm: element (i, j) of op(M) at data[i · ld + j], or at data[j · ld + i]
// when transposed; fp32 data is read rounded to bf16.
struct WidenedMatrix {
  DType type;
  const void* data;
  int64_t ld;
  bool transposed = false;
};

// The fp32 GEMM of the fused linear layers (kernels/linear.cpp): ATen's (MKL's sgemm in a
// PyTorch wheel) or oneDNN's sgemm, by instruction set, as measured (docs/performance.md).
enum class Gemm { aten, onednn };

struct Ops {
  const char* isa;
  // Whether this CPU multiplies bf16 matrices on AMX tiles (through oneDNN's matmul): bf16
  // attention then takes kernels/attention_amx.cpp's path, whose products are batched over heads,
  // with the two row kernels below between them.
  bool amx = false;
  // Whether the CPU has bf16 products (AVX512-BF16's dot products, AMX): the fused bf16 linear
  // (kernels/linear.h) multiplies bf16 through oneDNN's matmul. Without them (AVX2, AVX-512
  // without BF16) its bf16 operands are widened to fp32 and multiplied by `gemm`: LibTorch's and
  // oneDNN 2.6's bf16 products run a slow path there (1 GFLOP/s on an AMD Zen 3).
  bool bf16_matmul = false;
  Gemm gemm = Gemm::onednn;
  // Causal attention, flash-style: out (batch, seq, heads · head_size); lse (batch, heads, seq).
  void (*attention_forward)(const AttentionArgs&, DType, const void* qkv, void* out, float* lse);
  // dqkv (batch, seq, 3C) from dout (batch, seq, C) and the forward's out and lse.
  void (*attention_backward)(const AttentionArgs&, DType, const void* qkv, const void* out, const void* dout,
                             const float* lse, void* dqkv);
  // y = act(h + bias) over rows × cols; bias fp32.
  void (*bias_act_forward)(Activation, DType, const void* h, const float* bias, void* y, int64_t rows, int64_t cols);
  // dh = dy · act'(h + bias); dbias = Σ_rows dh (fp32).
  void (*bias_act_backward)(Activation, DType, const void* h, const float* bias, const void* dy, void* dh,
                            float* dbias, int64_t rows, int64_t cols);
  // Mean cross-entropy of rows × vocab logits against targets, the logits first soft-capped to
  // softcap · tanh(logit / softcap) when softcap > 0; unless grad_scale is 0, each row of logits is
  // replaced by its gradient (softmax − one-hot) · grad_scale (· (1 − tanh²) through the cap).
  // Returns the mean loss.
  double (*cross_entropy_inplace)(DType, void* logits, const int64_t* targets, int64_t rows, int64_t vocab,
                                  float grad_scale, float softcap);
  // One AdamW step (PyTorch's formula) over every segment in one parallel pass; each gradient
  // is read times grad_scale (the clipping factor).
  void (*adamw)(const AdamWSegment* segments, int64_t count, float grad_scale);
  // LayerNorm over rows × cols of fp32 x: y = (x − mean) · rstd · w + b, written as `out` (fp32 or
  // bf16, so that a bf16 matmul after it needs no cast); each row's mean and rstd = 1 / √(var + eps)
  // kept for backward.
  void (*layer_norm_forward)(DType out, const float* x, const float* w, const float* b, void* y, float* mean,
                             float* rstd, int64_t rows, int64_t cols, float eps);
  // Its backward from dy (fp32 or bf16): dx (fp32), dw = Σ_rows dy · x̂ and db = Σ_rows dy.
  void (*layer_norm_backward)(DType dy_type, const void* dy, const float* x, const float* w, const float* mean,
                              const float* rstd, float* dx, float* dw, float* db, int64_t rows, int64_t cols);
  // Attention on scores materialised for `heads` heads from head bh0 on (rows of seq keys, fp32;
  // row r is query r % seq of head bh0 + r / seq). Forward: the raw scores s become the causal
  // softmax of scale · s; lse (heads × seq) gets each row's log-sum-exp and p (bf16, the same
  // shape as s) the weights after dropout, zero above the diagonal.
  void (*softmax_rows)(const AttentionArgs&, int64_t bh0, int64_t heads, float* s, float* lse, void* p);
  // Backward: from the raw scores s, the forward's lse, dp = dO Vᵀ and d = rowsum(dO ∘ O), the
  // weights after dropout pd and the scores' gradient ds = scale · P ∘ (dp ∘ M − d) (both bf16,
  // zero above the diagonal). s is overwritten.
  void (*score_grad_rows)(const AttentionArgs&, int64_t bh0, int64_t heads, float* s, const float* dp,
                          const float* lse, const float* d, void* pd, void* ds);
  // Without bf16 products: C (m × n, row stride ldc; fp32, or bf16 rounded once) = op(A) (m × k) ·
  // op(B) (k × n) (+ bias, rounded to bf16, in every row; may be null), the operands read as bf16
  // and widened to fp32 in the GEMM's own packing, fp32 sums (kernels/cpu/gemm.cpp). Null where
  // none is compiled (AVX-512: the bf16 linear widens whole blocks for `gemm` there).
  void (*widened_gemm)(int64_t m, int64_t n, int64_t k, const WidenedMatrix& a, const WidenedMatrix& b,
                       const float* bias, DType c_type, void* c, int64_t ldc) = nullptr;
};

// The kernels for this CPU: AVX-512 when it has AVX-512 (F, BW, VL, DQ) — with bf16 dot products
// where it has AVX512-BF16, and bf16 attention on AMX where oneDNN finds AMX usable — else AVX2.
// SWEEP_CPU_ISA (AVX2, AVX512, AVX512_BF16, AMX) picks a lesser one, to test or time it.
const Ops& ops();

namespace AVX2 {
extern const Ops k_ops;
}
namespace AVX512 {
extern const Ops k_ops;
extern const Ops k_ops_bf16_dot;  // k_ops with bf16 attention tiles on AVX512-BF16 dot products
extern const Ops k_ops_amx;       // k_ops_bf16_dot with bf16 attention's products on AMX
}

}  // namespace sweep::kernels::cpu
