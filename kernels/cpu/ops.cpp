// The CPU kernels of kernels/cpu/ops.h. This file is compiled twice, with CPU_CAPABILITY=AVX2
// and with CPU_CAPABILITY=AVX512 (and the matching -m flags), so ATen's Vectorized<float> is 8
// or 16 lanes wide; the namespace carries the capability's name. Matrix products of tiles go to
// oneDNN's sgemm (row-major; single-threaded inside a parallel region).
#include "kernels/cpu/ops.h"

#include <ATen/Parallel.h>
#include <ATen/cpu/vec/vec.h>
#include <c10/util/BFloat16.h>
#include <dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace sweep::kernels::cpu::CPU_CAPABILITY {

namespace {

using Vec = at::vec::Vectorized<float>;
using bf16 = c10::BFloat16;

// ---- storage <-> fp32 ----

inline void to_float(const float* src, float* dst, int64_t n) { std::memcpy(dst, src, sizeof(float) * n); }
inline void to_float(const bf16* src, float* dst, int64_t n) {
  const auto* bits = reinterpret_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(bits[i]) << 16;
    std::memcpy(dst + i, &u, sizeof u);
  }
}
inline void from_float(const float* src, float* dst, int64_t n) { std::memcpy(dst, src, sizeof(float) * n); }
inline void from_float(const float* src, bf16* dst, int64_t n) {  // round to nearest even, as c10::BFloat16
  auto* bits = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, src + i, sizeof u);
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    u += 0x7fffu + ((u >> 16) & 1u);
    bits[i] = nan ? static_cast<uint16_t>(0x7fc0) : static_cast<uint16_t>(u >> 16);
  }
}

template <typename F>
inline void dispatch(DType d, F&& f) {
  if (d == DType::f32) {
    f(float{});
  } else {
    f(bf16{});
  }
}

inline void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// x[i] = exp(x[i] - shift) for i < n; returns Σ x[i].
inline float exp_sum(float* x, int64_t n, float shift) {
  const Vec vshift(shift);
  Vec acc(0.f);
  int64_t i = 0;
  for (; i + Vec::size() <= n; i += Vec::size()) {
    const Vec e = (Vec::loadu(x + i) - vshift).exp();
    e.store(x + i);
    acc = acc + e;
  }
  float lanes[Vec::size()];
  acc.store(lanes);
  float sum = 0.f;
  for (float lane : lanes) {
    sum += lane;
  }
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - shift);
    sum += x[i];
  }
  return sum;
}

inline float max_of(const float* x, int64_t n) {
  Vec acc(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + Vec::size() <= n; i += Vec::size()) {
    acc = at::vec::maximum(acc, Vec::loadu(x + i));
  }
  float lanes[Vec::size()];
  acc.store(lanes);
  float m = -std::numeric_limits<float>::infinity();
  for (float lane : lanes) {
    m = std::max(m, lane);
  }
  for (; i < n; ++i) {
    m = std::max(m, x[i]);
  }
  return m;
}

inline void scale(float* x, int64_t n, float s) {
  const Vec vs(s);
  int64_t i = 0;
  for (; i + Vec::size() <= n; i += Vec::size()) {
    (Vec::loadu(x + i) * vs).store(x + i);
  }
  for (; i < n; ++i) {
    x[i] *= s;
  }
}

// ---- attention ----

constexpr int64_t k_tile = 64;  // query rows and key columns per tile

// row[0..n) ·= the dropout scale of query i, keys c0 .. c0+n−1 (into `out`, which may be `row`).
inline void apply_dropout(const AttentionArgs& s, int64_t bh, int64_t i, int64_t c0, const float* row, float* out,
                          int64_t n) {
  const uint32_t key = dropout_row_key(s.seed, bh, i);
  const float scale = 1.f / (1.f - s.dropout);
  for (int64_t j = 0; j < n; ++j) {
    out[j] = dropout_keep(key, c0 + j, s.dropout) ? row[j] * scale : 0.f;
  }
}

// rows × cols from a strided source (row stride `ld` elements) into a dense fp32 buffer, and back.
template <typename T>
void gather(const T* src, int64_t ld, int64_t rows, int64_t cols, float* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    to_float(src + r * ld, dst + r * cols, cols);
  }
}
template <typename T>
void scatter(const float* src, int64_t rows, int64_t cols, T* dst, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    from_float(src + r * cols, dst + r * ld, cols);
  }
}

// Head h of batch b: its Q, K and V (seq × head_size each) out of qkv (batch, seq, 3C), as fp32.
template <typename T>
void gather_qkv(const AttentionArgs& s, const T* qkv, int64_t b, int64_t h, float* q, float* k, float* v) {
  const int64_t C = s.heads * s.head_size;
  const T* base = qkv + b * s.seq * 3 * C + h * s.head_size;
  gather(base, 3 * C, s.seq, s.head_size, q);
  gather(base + C, 3 * C, s.seq, s.head_size, k);
  gather(base + 2 * C, 3 * C, s.seq, s.head_size, v);
}

template <typename T>
void attention_forward_t(const AttentionArgs& s, const T* qkv, T* out, float* lse) {
  const int64_t T_ = s.seq, nh = s.heads, hs = s.head_size, C = nh * hs;
  const float sm_scale = 1.0f / std::sqrt(static_cast<float>(hs));
  at::parallel_for(0, s.batch * nh, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> q(T_ * hs), k(T_ * hs), v(T_ * hs), o(k_tile * hs), sc(k_tile * k_tile), m(k_tile), l(k_tile);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / nh, h = bh % nh;
      gather_qkv(s, qkv, b, h, q.data(), k.data(), v.data());
      for (int64_t r0 = 0; r0 < T_; r0 += k_tile) {
        const int64_t br = std::min(k_tile, T_ - r0);
        std::fill(m.begin(), m.end(), -std::numeric_limits<float>::infinity());
        std::fill(l.begin(), l.end(), 0.f);
        std::fill(o.begin(), o.end(), 0.f);
        for (int64_t c0 = 0; c0 <= r0; c0 += k_tile) {  // key tiles up to the diagonal one
          const int64_t bc = std::min(k_tile, T_ - c0);
          sgemm('N', 'T', br, bc, hs, sm_scale, q.data() + r0 * hs, hs, k.data() + c0 * hs, hs, 0.f, sc.data(), k_tile);
          for (int64_t i = 0; i < br; ++i) {
            float* row = sc.data() + i * k_tile;
            const int64_t n = std::min(bc, r0 + i - c0 + 1);  // keys c0 .. r0+i are visible
            const float m_new = std::max(m[i], max_of(row, n));
            const float sum = exp_sum(row, n, m_new);
            std::fill(row + n, row + bc, 0.f);
            const float correction = std::exp(m[i] - m_new);  // 0 on the first tile (m = -inf)
            l[i] = l[i] * correction + sum;  // the normaliser counts every weight, dropped or not
            m[i] = m_new;
            if (c0 > 0) {
              scale(o.data() + i * hs, hs, correction);
            }
            if (s.dropout > 0) {
              apply_dropout(s, bh, r0 + i, c0, row, row, n);
            }
          }
          sgemm('N', 'N', br, hs, bc, 1.f, sc.data(), k_tile, v.data() + c0 * hs, hs, 1.f, o.data(), hs);
        }
        for (int64_t i = 0; i < br; ++i) {
          scale(o.data() + i * hs, hs, 1.f / l[i]);
          lse[bh * T_ + r0 + i] = m[i] + std::log(l[i]);
        }
        scatter(o.data(), br, hs, out + (b * T_ + r0) * C + h * hs, C);
      }
    }
  });
}

template <typename T>
void attention_backward_t(const AttentionArgs& s, const T* qkv, const T* out, const T* dout, const float* lse,
                          T* dqkv) {
  const int64_t T_ = s.seq, nh = s.heads, hs = s.head_size, C = nh * hs;
  const float sm_scale = 1.0f / std::sqrt(static_cast<float>(hs));
  at::parallel_for(0, s.batch * nh, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> q(T_ * hs), k(T_ * hs), v(T_ * hs), o(T_ * hs), dout_f(T_ * hs), dq(T_ * hs), dk(T_ * hs),
        dv(T_ * hs), d(T_), p(k_tile * k_tile), dp(k_tile * k_tile), pd(s.dropout > 0 ? k_tile * k_tile : 0);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / nh, h = bh % nh;
      gather_qkv(s, qkv, b, h, q.data(), k.data(), v.data());
      gather(out + b * T_ * C + h * hs, C, T_, hs, o.data());
      gather(dout + b * T_ * C + h * hs, C, T_, hs, dout_f.data());
      for (int64_t t = 0; t < T_; ++t) {  // D = rowsum(dO ∘ O)
        float acc = 0.f;
        for (int64_t j = 0; j < hs; ++j) {
          acc += dout_f[t * hs + j] * o[t * hs + j];
        }
        d[t] = acc;
      }
      std::fill(dq.begin(), dq.end(), 0.f);
      std::fill(dk.begin(), dk.end(), 0.f);
      std::fill(dv.begin(), dv.end(), 0.f);
      const float* lse_bh = lse + bh * T_;
      for (int64_t r0 = 0; r0 < T_; r0 += k_tile) {
        const int64_t br = std::min(k_tile, T_ - r0);
        for (int64_t c0 = 0; c0 <= r0; c0 += k_tile) {
          const int64_t bc = std::min(k_tile, T_ - c0);
          // P = exp(scale · Q Kᵀ − lse), zero above the diagonal
          sgemm('N', 'T', br, bc, hs, sm_scale, q.data() + r0 * hs, hs, k.data() + c0 * hs, hs, 0.f, p.data(), k_tile);
          for (int64_t i = 0; i < br; ++i) {
            float* row = p.data() + i * k_tile;
            const int64_t n = std::min(bc, r0 + i - c0 + 1);
            exp_sum(row, n, lse_bh[r0 + i]);
            std::fill(row + n, row + bc, 0.f);
          }
          // With dropout the output used P̃ = P ∘ M (M: 0 or 1/(1−p)): dV += P̃ᵀ dO, dP = (dO Vᵀ) ∘ M.
          const float* pv = p.data();
          if (s.dropout > 0) {
            for (int64_t i = 0; i < br; ++i) {
              apply_dropout(s, bh, r0 + i, c0, p.data() + i * k_tile, pd.data() + i * k_tile, bc);
            }
            pv = pd.data();
          }
          // dV += P̃ᵀ dO
          sgemm('T', 'N', bc, hs, br, 1.f, pv, k_tile, dout_f.data() + r0 * hs, hs, 1.f, dv.data() + c0 * hs, hs);
          // dP = dO Vᵀ (∘ M); dS = P ∘ (dP − D), D = rowsum(dO ∘ O) either way
          sgemm('N', 'T', br, bc, hs, 1.f, dout_f.data() + r0 * hs, hs, v.data() + c0 * hs, hs, 0.f, dp.data(), k_tile);
          if (s.dropout > 0) {
            for (int64_t i = 0; i < br; ++i) {
              apply_dropout(s, bh, r0 + i, c0, dp.data() + i * k_tile, dp.data() + i * k_tile, bc);
            }
          }
          for (int64_t i = 0; i < br; ++i) {
            const Vec di(d[r0 + i]);
            float* dprow = dp.data() + i * k_tile;
            const float* prow = p.data() + i * k_tile;
            int64_t j = 0;
            for (; j + Vec::size() <= bc; j += Vec::size()) {
              (Vec::loadu(prow + j) * (Vec::loadu(dprow + j) - di)).store(dprow + j);
            }
            for (; j < bc; ++j) {
              dprow[j] = prow[j] * (dprow[j] - d[r0 + i]);
            }
          }
          // dQ += scale · dS K;  dK += scale · dSᵀ Q
          sgemm('N', 'N', br, hs, bc, sm_scale, dp.data(), k_tile, k.data() + c0 * hs, hs, 1.f, dq.data() + r0 * hs, hs);
          sgemm('T', 'N', bc, hs, br, sm_scale, dp.data(), k_tile, q.data() + r0 * hs, hs, 1.f, dk.data() + c0 * hs, hs);
        }
      }
      T* dbase = dqkv + b * T_ * 3 * C + h * hs;
      scatter(dq.data(), T_, hs, dbase, 3 * C);
      scatter(dk.data(), T_, hs, dbase + C, 3 * C);
      scatter(dv.data(), T_, hs, dbase + 2 * C, 3 * C);
    }
  });
}

void attention_forward(const AttentionArgs& s, DType dt, const void* qkv, void* out, float* lse) {
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    attention_forward_t(s, static_cast<const T*>(qkv), static_cast<T*>(out), lse);
  });
}

void attention_backward(const AttentionArgs& s, DType dt, const void* qkv, const void* out, const void* dout,
                        const float* lse, void* dqkv) {
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    attention_backward_t(s, static_cast<const T*>(qkv), static_cast<const T*>(out), static_cast<const T*>(dout), lse,
                         static_cast<T*>(dqkv));
  });
}

// ---- bias + GELU (exact, erf) ----

// Φ(x) = ½·erfc(−x/√2), erfc by Numerical Recipes' Chebyshev fit (relative error < 1.2e-7 over
// the whole line, so Φ stays accurate in the far negative tail). SLEEF's erf costs ~26 ns per
// vector here; this costs one exp and one division.
inline Vec normal_cdf(const Vec& x) {
  const Vec z = x * Vec(-static_cast<float>(M_SQRT1_2));  // Φ(x) = ½·erfc(z)
  const Vec az = z.abs();
  const Vec t = Vec(1.f) / (Vec(1.f) + Vec(0.5f) * az);
  Vec p(0.17087277f);
  for (const float c : {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f,
                        1.00002368f, -1.26551223f}) {
    p = at::vec::fmadd(p, t, Vec(c));
  }
  const Vec r = t * (p - az * az).exp();  // erfc(|z|)
  const Vec erfc_z = Vec::blendv(r, Vec(2.f) - r, z < Vec(0.f));
  return Vec(0.5f) * erfc_z;
}

inline float normal_cdf(float x) { return 0.5f * std::erfc(-x * static_cast<float>(M_SQRT1_2)); }

int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)); }

template <typename T>
void bias_gelu_forward_t(const T* h, const float* bias, T* y, int64_t rows, int64_t cols) {
  at::parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) {
    std::vector<float> x(cols);
    for (int64_t r = begin; r < end; ++r) {
      to_float(h + r * cols, x.data(), cols);
      int64_t j = 0;
      for (; j + Vec::size() <= cols; j += Vec::size()) {
        const Vec v = Vec::loadu(x.data() + j) + Vec::loadu(bias + j);
        (v * normal_cdf(v)).store(x.data() + j);
      }
      for (; j < cols; ++j) {
        const float v = x[j] + bias[j];
        x[j] = v * normal_cdf(v);
      }
      from_float(x.data(), y + r * cols, cols);
    }
  });
}

template <typename T>
void bias_gelu_backward_t(const T* h, const float* bias, const T* dy, T* dh, float* dbias, int64_t rows,
                          int64_t cols) {
  const int threads = at::get_num_threads();
  std::vector<float> partial(static_cast<size_t>(threads) * cols, 0.f);  // per-thread Σ dh, summed in thread order
  at::parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) {
    std::vector<float> x(cols), g(cols);
    float* acc = partial.data() + static_cast<int64_t>(at::get_thread_num()) * cols;
    const float k_inv_sqrt_2pi = 0.3989422804014327f;
    const Vec mhalf(-0.5f), c(k_inv_sqrt_2pi);
    for (int64_t r = begin; r < end; ++r) {
      to_float(h + r * cols, x.data(), cols);
      to_float(dy + r * cols, g.data(), cols);
      int64_t j = 0;
      for (; j + Vec::size() <= cols; j += Vec::size()) {
        const Vec v = Vec::loadu(x.data() + j) + Vec::loadu(bias + j);
        const Vec cdf = normal_cdf(v);
        const Vec pdf = c * (mhalf * v * v).exp();
        const Vec out = Vec::loadu(g.data() + j) * (cdf + v * pdf);
        out.store(g.data() + j);
        (Vec::loadu(acc + j) + out).store(acc + j);
      }
      for (; j < cols; ++j) {
        const float v = x[j] + bias[j];
        const float cdf = normal_cdf(v);
        const float pdf = k_inv_sqrt_2pi * std::exp(-0.5f * v * v);
        g[j] *= cdf + v * pdf;
        acc[j] += g[j];
      }
      from_float(g.data(), dh + r * cols, cols);
    }
  });
  std::fill(dbias, dbias + cols, 0.f);
  for (int t = 0; t < threads; ++t) {
    for (int64_t j = 0; j < cols; ++j) {
      dbias[j] += partial[static_cast<size_t>(t) * cols + j];
    }
  }
}

void bias_gelu_forward(DType dt, const void* h, const float* bias, void* y, int64_t rows, int64_t cols) {
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    bias_gelu_forward_t(static_cast<const T*>(h), bias, static_cast<T*>(y), rows, cols);
  });
}

void bias_gelu_backward(DType dt, const void* h, const float* bias, const void* dy, void* dh, float* dbias,
                        int64_t rows, int64_t cols) {
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    bias_gelu_backward_t(static_cast<const T*>(h), bias, static_cast<const T*>(dy), static_cast<T*>(dh), dbias, rows,
                         cols);
  });
}

// ---- cross-entropy, gradient in place of the logits ----

template <typename T>
double cross_entropy_inplace_t(T* logits, const int64_t* targets, int64_t rows, int64_t vocab, float grad_scale) {
  const int threads = at::get_num_threads();
  std::vector<double> partial(static_cast<size_t>(threads), 0.0);
  at::parallel_for(0, rows, row_grain(vocab), [&](int64_t begin, int64_t end) {
    std::vector<float> x(vocab);
    double& acc = partial[static_cast<size_t>(at::get_thread_num())];
    for (int64_t r = begin; r < end; ++r) {
      T* row = logits + r * vocab;
      to_float(row, x.data(), vocab);
      const int64_t target = targets[r];
      const float target_logit = x[target];
      const float mx = max_of(x.data(), vocab);
      const float sum = exp_sum(x.data(), vocab, mx);  // x = exp(logit − max)
      const float lse = mx + std::log(sum);
      acc += static_cast<double>(lse - target_logit);
      if (grad_scale != 0.f) {
        scale(x.data(), vocab, grad_scale / sum);  // softmax · grad_scale
        x[target] -= grad_scale;
        from_float(x.data(), row, vocab);
      }
    }
  });
  double total = 0.0;
  for (double p : partial) {
    total += p;
  }
  return total / static_cast<double>(rows);
}

double cross_entropy_inplace(DType dt, void* logits, const int64_t* targets, int64_t rows, int64_t vocab,
                             float grad_scale) {
  double loss = 0.0;
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    loss = cross_entropy_inplace_t(static_cast<T*>(logits), targets, rows, vocab, grad_scale);
  });
  return loss;
}

// ---- AdamW over every parameter in one pass ----

void adamw(const AdamWSegment* segments, int64_t count, float grad_scale) {
  std::vector<int64_t> offsets(static_cast<size_t>(count) + 1, 0);  // segment i covers [offsets[i], offsets[i+1])
  for (int64_t i = 0; i < count; ++i) {
    offsets[i + 1] = offsets[i] + segments[i].numel;
  }
  at::parallel_for(0, offsets.back(), 32768, [&](int64_t begin, int64_t end) {
    int64_t seg = std::upper_bound(offsets.begin(), offsets.end(), begin) - offsets.begin() - 1;
    const Vec gs(grad_scale);
    for (int64_t pos = begin; pos < end; ++seg) {
      const AdamWSegment& s = segments[seg];
      const int64_t lo = pos - offsets[seg], hi = std::min(end, offsets[seg + 1]) - offsets[seg];
      const Vec decay(s.decay), step_size(s.step_size), bc2(s.bias_correction2_sqrt), eps(s.eps), b1(s.beta1),
          one_b1(s.one_minus_beta1), b2(s.beta2), one_b2(s.one_minus_beta2);
      int64_t j = lo;
      for (; j + Vec::size() <= hi; j += Vec::size()) {
        const Vec g = Vec::loadu(s.grad + j) * gs;
        const Vec m = Vec::loadu(s.exp_avg + j) * b1 + g * one_b1;
        const Vec v = Vec::loadu(s.exp_avg_sq + j) * b2 + one_b2 * g * g;
        const Vec p = Vec::loadu(s.param + j) * decay - m / (v.sqrt() / bc2 + eps) * step_size;
        m.store(s.exp_avg + j);
        v.store(s.exp_avg_sq + j);
        p.store(s.param + j);
      }
      for (; j < hi; ++j) {
        const float g = s.grad[j] * grad_scale;
        const float m = s.exp_avg[j] * s.beta1 + g * s.one_minus_beta1;
        const float v = s.exp_avg_sq[j] * s.beta2 + s.one_minus_beta2 * g * g;
        s.exp_avg[j] = m;
        s.exp_avg_sq[j] = v;
        s.param[j] = s.param[j] * s.decay - m / (std::sqrt(v) / s.bias_correction2_sqrt + s.eps) * s.step_size;
      }
      pos = offsets[seg] + hi;
    }
  });
}

}  // namespace

const Ops k_ops = {
#define SWEEP_STR2(x) #x
#define SWEEP_STR(x) SWEEP_STR2(x)
    SWEEP_STR(CPU_CAPABILITY),
    attention_forward,
    attention_backward,
    bias_gelu_forward,
    bias_gelu_backward,
    cross_entropy_inplace,
    adamw,
};

}  // namespace sweep::kernels::cpu::CPU_CAPABILITY
