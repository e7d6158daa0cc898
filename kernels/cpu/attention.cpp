// Causal attention on the CPU, flash-style (kernels/cpu/ops.h): per (batch, head), query tiles
// against key tiles up to the diagonal with an online softmax; the backward recomputes the
// probabilities from the forward's log-sum-exp. Compiled once per instruction set (vec.h).
#include "kernels/cpu/vec.h"

namespace sweep::kernels::cpu::CPU_CAPABILITY {

namespace {

constexpr int64_t k_tile = 64;  // query rows and key columns per tile

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// row[0..n) ·= the dropout scale of query i, keys c0 .. c0+n−1 (into `out`, which may be `row`).
inline void apply_dropout(const AttentionArgs& s, int64_t bh, int64_t i, int64_t c0, const float* row, float* out,
                          int64_t n) {
  const uint32_t key = dropout_row_key(s.seed, bh, i);
  const float scale = 1.f / (1.f - s.dropout);
  for (int64_t j = 0; j < n; ++j) {
    out[j] = dropout_keep(key, c0 + j, s.dropout) ? row[j] * scale : 0.f;
  }
}

// The same over a tile (br × bc, row stride k_tile) of query tile r0, key tile c0.
inline void dropout_tile(const AttentionArgs& s, int64_t bh, int64_t r0, int64_t c0, int64_t br, int64_t bc,
                         const float* src, float* dst) {
  for (int64_t i = 0; i < br; ++i) {
    apply_dropout(s, bh, r0 + i, c0, src + i * k_tile, dst + i * k_tile, bc);
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

// The steps between the tile products, the same whichever kind multiplies the tiles.

// Forward, one (query tile r0, key tile c0): the scaled scores `sc` (br × bc, row stride k_tile)
// become the tile's unnormalised weights exp(score − running max) (zero above the diagonal, then
// dropped out); each row's running max m and sum l are updated and its output row in `o` (row
// stride hs) rescaled to the new max.
inline void online_softmax_tile(const AttentionArgs& s, int64_t bh, int64_t r0, int64_t c0, int64_t br, int64_t bc,
                                float* sc, float* m, float* l, float* o) {
  for (int64_t i = 0; i < br; ++i) {
    float* row = sc + i * k_tile;
    const int64_t n = std::min(bc, r0 + i - c0 + 1);  // keys c0 .. r0+i are visible
    const float m_new = std::max(m[i], max_of(row, n));
    const float sum = exp_sum(row, n, m_new);
    std::fill(row + n, row + bc, 0.f);
    const float correction = std::exp(m[i] - m_new);  // 0 on the first tile (m = -inf)
    l[i] = l[i] * correction + sum;                   // the normaliser counts every weight, dropped or not
    m[i] = m_new;
    if (c0 > 0) {
      scale(o + i * s.head_size, s.head_size, correction);
    }
    if (s.dropout > 0) {
      apply_dropout(s, bh, r0 + i, c0, row, row, n);
    }
  }
}

// Before a query tile's first key tile: running max −inf, sums and outputs 0.
inline void start_rows(std::vector<float>& m, std::vector<float>& l, std::vector<float>& o) {
  std::fill(m.begin(), m.end(), -std::numeric_limits<float>::infinity());
  std::fill(l.begin(), l.end(), 0.f);
  std::fill(o.begin(), o.end(), 0.f);
}

// After a query tile's last key tile: o /= l, lse = m + log l.
inline void finish_rows(float* o, int64_t br, int64_t hs, const float* m, const float* l, float* lse) {
  for (int64_t i = 0; i < br; ++i) {
    scale(o + i * hs, hs, 1.f / l[i]);
    lse[i] = m[i] + std::log(l[i]);
  }
}

// Backward: the scaled scores `p` (br × bc, row stride k_tile) become P = exp(score − lse), zero
// above the diagonal.
inline void probabilities_tile(int64_t r0, int64_t c0, int64_t br, int64_t bc, float* p, const float* lse) {
  for (int64_t i = 0; i < br; ++i) {
    float* row = p + i * k_tile;
    const int64_t n = std::min(bc, r0 + i - c0 + 1);
    exp_sum(row, n, lse[r0 + i]);
    std::fill(row + n, row + bc, 0.f);
  }
}

// dS = P ∘ (dP − D), over dP in place; d holds the tile's rows of D = rowsum(dO ∘ O).
inline void score_grad_tile(const float* p, float* dp, const float* d, int64_t br, int64_t bc) {
  for (int64_t i = 0; i < br; ++i) {
    const Vec di(d[i]);
    float* dprow = dp + i * k_tile;
    const float* prow = p + i * k_tile;
    int64_t j = 0;
    for (; j + Vec::size() <= bc; j += Vec::size()) {
      (Vec::loadu(prow + j) * (Vec::loadu(dprow + j) - di)).store(dprow + j);
    }
    for (; j < bc; ++j) {
      dprow[j] = prow[j] * (dprow[j] - d[i]);
    }
  }
}

// D = rowsum(dO ∘ O) over `rows` rows (row stride ld) of a head.
template <typename T>
void rowsum_product(const T* dout, const T* out, int64_t ld, int64_t rows, int64_t hs, float* d) {
  for (int64_t t = 0; t < rows; ++t) {
    const T* a = dout + t * ld;
    const T* b = out + t * ld;
    Vec acc(0.f);
    int64_t j = 0;
    for (; j + Vec::size() <= hs; j += Vec::size()) {
      acc = at::vec::fmadd(load(a + j), load(b + j), acc);
    }
    float sum = hsum(acc);
    for (; j < hs; ++j) {
      sum += load1(a + j) * load1(b + j);
    }
    d[t] = sum;
  }
}

// Tiles multiplied in fp32 by oneDNN's sgemm (fp32 storage; bf16 where the CPU has no bf16 dot product).
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
        start_rows(m, l, o);
        for (int64_t c0 = 0; c0 <= r0; c0 += k_tile) {  // key tiles up to the diagonal one
          const int64_t bc = std::min(k_tile, T_ - c0);
          sgemm('N', 'T', br, bc, hs, sm_scale, q.data() + r0 * hs, hs, k.data() + c0 * hs, hs, 0.f, sc.data(), k_tile);
          online_softmax_tile(s, bh, r0, c0, br, bc, sc.data(), m.data(), l.data(), o.data());
          sgemm('N', 'N', br, hs, bc, 1.f, sc.data(), k_tile, v.data() + c0 * hs, hs, 1.f, o.data(), hs);
        }
        finish_rows(o.data(), br, hs, m.data(), l.data(), lse + bh * T_ + r0);
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
    std::vector<float> q(T_ * hs), k(T_ * hs), v(T_ * hs), dout_f(T_ * hs), dq(T_ * hs), dk(T_ * hs), dv(T_ * hs),
        d(T_), p(k_tile * k_tile), dp(k_tile * k_tile), pd(s.dropout > 0 ? k_tile * k_tile : 0);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / nh, h = bh % nh;
      gather_qkv(s, qkv, b, h, q.data(), k.data(), v.data());
      gather(dout + b * T_ * C + h * hs, C, T_, hs, dout_f.data());
      rowsum_product(dout + b * T_ * C + h * hs, out + b * T_ * C + h * hs, C, T_, hs, d.data());
      std::fill(dq.begin(), dq.end(), 0.f);
      std::fill(dk.begin(), dk.end(), 0.f);
      std::fill(dv.begin(), dv.end(), 0.f);
      for (int64_t r0 = 0; r0 < T_; r0 += k_tile) {
        const int64_t br = std::min(k_tile, T_ - r0);
        for (int64_t c0 = 0; c0 <= r0; c0 += k_tile) {
          const int64_t bc = std::min(k_tile, T_ - c0);
          // P = exp(scale · Q Kᵀ − lse), zero above the diagonal
          sgemm('N', 'T', br, bc, hs, sm_scale, q.data() + r0 * hs, hs, k.data() + c0 * hs, hs, 0.f, p.data(), k_tile);
          probabilities_tile(r0, c0, br, bc, p.data(), lse + bh * T_);
          // With dropout the output used P̃ = P ∘ M (M: 0 or 1/(1−p)): dV += P̃ᵀ dO, dP = (dO Vᵀ) ∘ M.
          const float* pv = p.data();
          if (s.dropout > 0) {
            dropout_tile(s, bh, r0, c0, br, bc, p.data(), pd.data());
            pv = pd.data();
          }
          sgemm('T', 'N', bc, hs, br, 1.f, pv, k_tile, dout_f.data() + r0 * hs, hs, 1.f, dv.data() + c0 * hs, hs);
          sgemm('N', 'T', br, bc, hs, 1.f, dout_f.data() + r0 * hs, hs, v.data() + c0 * hs, hs, 0.f, dp.data(), k_tile);
          if (s.dropout > 0) {
            dropout_tile(s, bh, r0, c0, br, bc, dp.data(), dp.data());
          }
          score_grad_tile(p.data(), dp.data(), d.data() + r0, br, bc);  // dS, D = rowsum(dO ∘ O) either way
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

#if defined(CPU_CAPABILITY_AVX512)
// ---- bf16 attention on AVX512-BF16 dot products ----
// vdpbf16ps multiplies 32 bf16 pairs into 16 fp32 sums an instruction, twice fp32 FMA's rate. A
// tile product's inner dimension runs in pairs: operands are packed as 32-bit words holding two
// bf16 (the lower half the even index). Q and dO are read straight from their tensors (a row's
// head slice is already pairs along the head dimension); K, V, Q and dO are packed once per head
// in the layouts the products need; the weights P and dS are rounded to bf16 once per tile, as
// the reference bf16 path rounds them before its batched products.

#define SWEEP_BF16DOT __attribute__((target("avx512bf16")))

// The first min(n, 16) of 16 lanes.
inline __mmask16 lanes_mask(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

// Two bf16 as one 32-bit word (the lower half the first), read from wherever they lie.
inline uint32_t load_pair(const uint32_t* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// C (m × n, fp32, row stride ldc) = alpha · A B, plus C when `accumulate`; k2 pairs inside. Pair
// kk of A's row r is a[r·ars + kk·aks]; pair kk of B's column j is b[kk·ldb + j]. B is read up
// to column n rounded up to 16, which must exist (zero padding).
template <int R, int NV>
SWEEP_BF16DOT inline void dot_block(const uint32_t* a, int64_t ars, int64_t aks, const uint32_t* b, int64_t ldb,
                                    int64_t k2, float* c, int64_t ldc, int64_t n, float alpha, bool accumulate) {
  __m512 acc[R][NV];
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) {
      acc[r][v] = _mm512_setzero_ps();
    }
  }
  for (int64_t kk = 0; kk < k2; ++kk) {
    __m512i bv[NV];
    for (int v = 0; v < NV; ++v) {
      bv[v] = _mm512_loadu_si512(b + kk * ldb + 16 * v);
    }
    for (int r = 0; r < R; ++r) {
      const __m512i av = _mm512_set1_epi32(static_cast<int>(load_pair(a + r * ars + kk * aks)));
      for (int v = 0; v < NV; ++v) {
        acc[r][v] = _mm512_dpbf16_ps(acc[r][v], reinterpret_cast<__m512bh>(av), reinterpret_cast<__m512bh>(bv[v]));
      }
    }
  }
  const __m512 va = _mm512_set1_ps(alpha);
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) {
      const __mmask16 mask = lanes_mask(n - 16 * v);
      float* cp = c + r * ldc + 16 * v;
      __m512 result = _mm512_mul_ps(acc[r][v], va);
      if (accumulate) {
        result = _mm512_add_ps(result, _mm512_maskz_loadu_ps(mask, cp));
      }
      _mm512_mask_storeu_ps(cp, mask, result);
    }
  }
}

template <int R>
SWEEP_BF16DOT inline void dot_rows(const uint32_t* a, int64_t ars, int64_t aks, const uint32_t* b, int64_t ldb,
                                   int64_t k2, float* c, int64_t ldc, int64_t n, float alpha, bool accumulate) {
  switch ((n + 15) / 16) {
    case 1: dot_block<R, 1>(a, ars, aks, b, ldb, k2, c, ldc, n, alpha, accumulate); break;
    case 2: dot_block<R, 2>(a, ars, aks, b, ldb, k2, c, ldc, n, alpha, accumulate); break;
    case 3: dot_block<R, 3>(a, ars, aks, b, ldb, k2, c, ldc, n, alpha, accumulate); break;
    default: dot_block<R, 4>(a, ars, aks, b, ldb, k2, c, ldc, n, alpha, accumulate); break;
  }
}

SWEEP_BF16DOT void dot(int64_t m, int64_t n, int64_t k2, const uint32_t* a, int64_t ars, int64_t aks,
                       const uint32_t* b, int64_t ldb, float* c, int64_t ldc, float alpha, bool accumulate) {
  for (int64_t j0 = 0; j0 < n; j0 += 64) {
    const int64_t nj = std::min<int64_t>(64, n - j0);
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
      dot_rows<4>(a + i * ars, ars, aks, b + j0, ldb, k2, c + i * ldc + j0, ldc, nj, alpha, accumulate);
    }
    const uint32_t* ai = a + i * ars;
    float* ci = c + i * ldc + j0;
    switch (m - i) {
      case 3: dot_rows<3>(ai, ars, aks, b + j0, ldb, k2, ci, ldc, nj, alpha, accumulate); break;
      case 2: dot_rows<2>(ai, ars, aks, b + j0, ldb, k2, ci, ldc, nj, alpha, accumulate); break;
      case 1: dot_rows<1>(ai, ars, aks, b + j0, ldb, k2, ci, ldc, nj, alpha, accumulate); break;
      default: break;
    }
  }
}

// dst[t2·ldd + d] = (x[2·t2][d], x[2·t2+1][d]) for d < cols, zero to ldd and past the last row:
// x (rows × cols, row stride ld) as B of a product whose inner dimension runs over its rows.
void pack_row_pairs(const bf16* x, int64_t ld, int64_t rows, int64_t cols, uint32_t* dst, int64_t ldd) {
  for (int64_t t2 = 0; t2 < (rows + 1) / 2; ++t2) {
    const auto* even = reinterpret_cast<const uint16_t*>(x + 2 * t2 * ld);
    const auto* odd = reinterpret_cast<const uint16_t*>(x + (2 * t2 + 1) * ld);
    const bool has_odd = 2 * t2 + 1 < rows;
    for (int64_t d = 0; d < ldd; d += 16) {
      const __mmask16 mask = lanes_mask(cols - d);
      __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, even + d));
      if (has_odd) {
        w = _mm512_or_si512(w, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, odd + d)), 16));
      }
      _mm512_storeu_si512(dst + t2 * ldd + d, w);
    }
  }
}

// dst[d2·ldd + t] = (x[t][2·d2], x[t][2·d2+1]), zero from row `rows` to ldd: x (rows × cols, cols
// even) as B of a product whose inner dimension runs over its columns (the product with xᵀ).
void pack_col_pairs(const bf16* x, int64_t ld, int64_t rows, int64_t cols, uint32_t* dst, int64_t ldd) {
  for (int64_t d2 = 0; d2 < cols / 2; ++d2) {
    uint32_t* out = dst + d2 * ldd;
    for (int64_t t = 0; t < rows; ++t) {
      std::memcpy(out + t, x + t * ld + 2 * d2, sizeof(uint32_t));
    }
    std::fill(out + rows, out + ldd, 0u);
  }
}

// A tile (rows × cols, row stride k_tile, fp32) in bf16 pairs along its rows: A of a product
// over its columns, dst row stride k_tile / 2 words (an odd last column paired with zero).
void pack_tile_rows(const float* src, int64_t rows, int64_t cols, uint32_t* dst) {
  for (int64_t i = 0; i < rows; ++i) {
    auto* out = reinterpret_cast<uint16_t*>(dst + i * (k_tile / 2));
    for (int64_t j = 0; j < cols; j += 16) {
      _mm256_mask_storeu_epi16(out + j, lanes_mask(cols - j), _mm512_cvtepi32_epi16(bf16_bits(_mm512_loadu_ps(src + i * k_tile + j))));
    }
    if (cols % 2 == 1) {
      out[cols] = 0;
    }
  }
}

// The same tile transposed, pairs along its columns: dst[i2·k_tile + j] = (src[2·i2][j],
// src[2·i2+1][j]) — A (ars 1, aks k_tile) of a product with the tile's transpose.
void pack_tile_cols(const float* src, int64_t rows, int64_t cols, uint32_t* dst) {
  for (int64_t i2 = 0; i2 < (rows + 1) / 2; ++i2) {
    const bool has_odd = 2 * i2 + 1 < rows;
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 mask = lanes_mask(cols - j);
      __m512i w = bf16_bits(_mm512_maskz_loadu_ps(mask, src + 2 * i2 * k_tile + j));
      if (has_odd) {
        w = _mm512_or_si512(w, _mm512_slli_epi32(bf16_bits(_mm512_maskz_loadu_ps(mask, src + (2 * i2 + 1) * k_tile + j)), 16));
      }
      _mm512_mask_storeu_epi32(dst + i2 * k_tile + j, mask, w);
    }
  }
}

bool use_bf16_dot(const AttentionArgs& s) { return s.head_size % 2 == 0; }

void attention_forward_dot(const AttentionArgs& s, const bf16* qkv, bf16* out, float* lse) {
  const int64_t T_ = s.seq, nh = s.heads, hs = s.head_size, C = nh * hs;
  const int64_t tp = round_up(T_, 16), hp = round_up(hs, 16), hs2 = hs / 2;
  const float sm_scale = 1.0f / std::sqrt(static_cast<float>(hs));
  at::parallel_for(0, s.batch * nh, 1, [&](int64_t begin, int64_t end) {
    std::vector<uint32_t> kc(hs2 * tp), vr((T_ + 1) / 2 * hp), pa(k_tile * k_tile / 2);
    std::vector<float> o(k_tile * hs), sc(k_tile * k_tile), m(k_tile), l(k_tile);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / nh, h = bh % nh;
      const bf16* base = qkv + b * T_ * 3 * C + h * hs;
      const auto* q = reinterpret_cast<const uint32_t*>(base);  // Q's rows: pairs along the head, stride 3C / 2
      pack_col_pairs(base + C, 3 * C, T_, hs, kc.data(), tp);
      pack_row_pairs(base + 2 * C, 3 * C, T_, hs, vr.data(), hp);
      for (int64_t r0 = 0; r0 < T_; r0 += k_tile) {
        const int64_t br = std::min(k_tile, T_ - r0);
        start_rows(m, l, o);
        for (int64_t c0 = 0; c0 <= r0; c0 += k_tile) {
          const int64_t bc = std::min(k_tile, T_ - c0);
          dot(br, bc, hs2, q + r0 * (3 * C / 2), 3 * C / 2, 1, kc.data() + c0, tp, sc.data(), k_tile, sm_scale, false);
          online_softmax_tile(s, bh, r0, c0, br, bc, sc.data(), m.data(), l.data(), o.data());
          pack_tile_rows(sc.data(), br, bc, pa.data());
          dot(br, hs, (bc + 1) / 2, pa.data(), k_tile / 2, 1, vr.data() + c0 / 2 * hp, hp, o.data(), hs, 1.f, true);
        }
        finish_rows(o.data(), br, hs, m.data(), l.data(), lse + bh * T_ + r0);
        scatter(o.data(), br, hs, out + (b * T_ + r0) * C + h * hs, C);
      }
    }
  });
}

void attention_backward_dot(const AttentionArgs& s, const bf16* qkv, const bf16* out, const bf16* dout,
                            const float* lse, bf16* dqkv) {
  const int64_t T_ = s.seq, nh = s.heads, hs = s.head_size, C = nh * hs;
  const int64_t tp = round_up(T_, 16), hp = round_up(hs, 16), hs2 = hs / 2, t2 = (T_ + 1) / 2;
  const float sm_scale = 1.0f / std::sqrt(static_cast<float>(hs));
  at::parallel_for(0, s.batch * nh, 1, [&](int64_t begin, int64_t end) {
    std::vector<uint32_t> kc(hs2 * tp), vc(hs2 * tp), kr(t2 * hp), qr(t2 * hp), dor(t2 * hp),
        pt(k_tile / 2 * k_tile), dsr(k_tile * k_tile / 2), dst(k_tile / 2 * k_tile);
    std::vector<float> dq(T_ * hs), dk(T_ * hs), dv(T_ * hs), d(T_), p(k_tile * k_tile), dp(k_tile * k_tile),
        pd(s.dropout > 0 ? k_tile * k_tile : 0);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / nh, h = bh % nh;
      const bf16* base = qkv + b * T_ * 3 * C + h * hs;
      const bf16* dout_h = dout + b * T_ * C + h * hs;
      const auto* q = reinterpret_cast<const uint32_t*>(base);
      const auto* dO = reinterpret_cast<const uint32_t*>(dout_h);
      pack_col_pairs(base + C, 3 * C, T_, hs, kc.data(), tp);
      pack_col_pairs(base + 2 * C, 3 * C, T_, hs, vc.data(), tp);
      pack_row_pairs(base + C, 3 * C, T_, hs, kr.data(), hp);
      pack_row_pairs(base, 3 * C, T_, hs, qr.data(), hp);
      pack_row_pairs(dout_h, C, T_, hs, dor.data(), hp);
      rowsum_product(dout_h, out + b * T_ * C + h * hs, C, T_, hs, d.data());
      std::fill(dq.begin(), dq.end(), 0.f);
      std::fill(dk.begin(), dk.end(), 0.f);
      std::fill(dv.begin(), dv.end(), 0.f);
      for (int64_t r0 = 0; r0 < T_; r0 += k_tile) {
        const int64_t br = std::min(k_tile, T_ - r0), br2 = (br + 1) / 2;
        for (int64_t c0 = 0; c0 <= r0; c0 += k_tile) {
          const int64_t bc = std::min(k_tile, T_ - c0), bc2 = (bc + 1) / 2;
          dot(br, bc, hs2, q + r0 * (3 * C / 2), 3 * C / 2, 1, kc.data() + c0, tp, p.data(), k_tile, sm_scale, false);
          probabilities_tile(r0, c0, br, bc, p.data(), lse + bh * T_);
          const float* pv = p.data();
          if (s.dropout > 0) {
            dropout_tile(s, bh, r0, c0, br, bc, p.data(), pd.data());
            pv = pd.data();
          }
          pack_tile_cols(pv, br, bc, pt.data());  // dV += P̃ᵀ dO
          dot(bc, hs, br2, pt.data(), 1, k_tile, dor.data() + r0 / 2 * hp, hp, dv.data() + c0 * hs, hs, 1.f, true);
          dot(br, bc, hs2, dO + r0 * (C / 2), C / 2, 1, vc.data() + c0, tp, dp.data(), k_tile, 1.f, false);  // dO Vᵀ
          if (s.dropout > 0) {
            dropout_tile(s, bh, r0, c0, br, bc, dp.data(), dp.data());
          }
          score_grad_tile(p.data(), dp.data(), d.data() + r0, br, bc);
          pack_tile_rows(dp.data(), br, bc, dsr.data());  // dQ += scale · dS K
          dot(br, hs, bc2, dsr.data(), k_tile / 2, 1, kr.data() + c0 / 2 * hp, hp, dq.data() + r0 * hs, hs, sm_scale,
              true);
          pack_tile_cols(dp.data(), br, bc, dst.data());  // dK += scale · dSᵀ Q
          dot(bc, hs, br2, dst.data(), 1, k_tile, qr.data() + r0 / 2 * hp, hp, dk.data() + c0 * hs, hs, sm_scale,
              true);
        }
      }
      bf16* dbase = dqkv + b * T_ * 3 * C + h * hs;
      scatter(dq.data(), T_, hs, dbase, 3 * C);
      scatter(dk.data(), T_, hs, dbase + C, 3 * C);
      scatter(dv.data(), T_, hs, dbase + 2 * C, 3 * C);
    }
  });
}
#endif

// kBf16Dot: bf16 tiles on AVX512-BF16 dot products (the AVX-512 build only).
template <bool kBf16Dot>
void forward(const AttentionArgs& s, DType dt, const void* qkv, void* out, float* lse) {
#if defined(CPU_CAPABILITY_AVX512)
  if (kBf16Dot && dt == DType::bf16 && use_bf16_dot(s)) {
    attention_forward_dot(s, static_cast<const bf16*>(qkv), static_cast<bf16*>(out), lse);
    return;
  }
#endif
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    attention_forward_t(s, static_cast<const T*>(qkv), static_cast<T*>(out), lse);
  });
}

template <bool kBf16Dot>
void backward(const AttentionArgs& s, DType dt, const void* qkv, const void* out, const void* dout, const float* lse,
              void* dqkv) {
#if defined(CPU_CAPABILITY_AVX512)
  if (kBf16Dot && dt == DType::bf16 && use_bf16_dot(s)) {
    attention_backward_dot(s, static_cast<const bf16*>(qkv), static_cast<const bf16*>(out),
                           static_cast<const bf16*>(dout), lse, static_cast<bf16*>(dqkv));
    return;
  }
#endif
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    attention_backward_t(s, static_cast<const T*>(qkv), static_cast<const T*>(out), static_cast<const T*>(dout), lse,
                         static_cast<T*>(dqkv));
  });
}

// A row's weights [0, n) from fp32 into bf16, zero from n to the row's end `cols`.
inline void store_row(const float* src, int64_t n, int64_t cols, bf16* dst) {
  from_float(src, dst, n);
  std::fill(dst + n, dst + cols, bf16(0.f));
}

}  // namespace

void softmax_rows(const AttentionArgs& s, int64_t bh0, int64_t heads, float* sc, float* lse, void* p_out) {
  const int64_t T_ = s.seq;
  const float sm_scale = 1.0f / std::sqrt(static_cast<float>(s.head_size));
  auto* p = static_cast<bf16*>(p_out);
  at::parallel_for(0, heads * T_, std::max<int64_t>(1, 4096 / T_), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t i = r % T_, n = i + 1;  // keys 0 .. i are visible
      float* row = sc + r * T_;
      const float m = max_of(row, n);  // of the raw scores: the scale is positive
      // e = exp(scale · (x − m)), summed, in one pass; then e / sum, rounded to bf16, in another
      const Vec vm(m), vs(sm_scale);
      Vec acc(0.f);
      int64_t j = 0;
      for (; j + Vec::size() <= n; j += Vec::size()) {
        const Vec e = exp_fast((Vec::loadu(row + j) - vm) * vs);
        e.store(row + j);
        acc = acc + e;
      }
      float sum = hsum(acc);
      for (; j < n; ++j) {
        row[j] = std::exp((row[j] - m) * sm_scale);
        sum += row[j];
      }
      lse[r] = m * sm_scale + std::log(sum);
      bf16* out = p + r * T_;
      if (s.dropout > 0) {
        scale(row, n, 1.f / sum);
        apply_dropout(s, bh0 + r / T_, i, 0, row, row, n);
        store_row(row, n, T_, out);
        continue;
      }
      const Vec inv(1.f / sum);
      j = 0;
      for (; j + Vec::size() <= n; j += Vec::size()) {
        store(out + j, Vec::loadu(row + j) * inv);
      }
      for (; j < n; ++j) {
        out[j] = bf16(row[j] / sum);
      }
      std::fill(out + n, out + T_, bf16(0.f));
    }
  });
}

void score_grad_rows(const AttentionArgs& s, int64_t bh0, int64_t heads, float* sc, const float* dp, const float* lse,
                     const float* d, void* pd_out, void* ds_out) {
  const int64_t T_ = s.seq;
  const float sm_scale = 1.0f / std::sqrt(static_cast<float>(s.head_size));
  auto* pd = static_cast<bf16*>(pd_out);
  auto* ds = static_cast<bf16*>(ds_out);
  at::parallel_for(0, heads * T_, std::max<int64_t>(1, 4096 / T_), [&](int64_t begin, int64_t end) {
    std::vector<float> dropped(s.dropout > 0 ? T_ : 0), grad(s.dropout > 0 ? T_ : 0);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t bh = bh0 + r / T_, i = r % T_, n = i + 1;
      float* prob = sc + r * T_;
      const float* g = dp + r * T_;
      bf16* pd_row = pd + r * T_;
      bf16* ds_row = ds + r * T_;
      if (s.dropout > 0) {  // the output used P ∘ M: dV takes it, and dP arrives times M
        scale(prob, n, sm_scale);
        exp_sum(prob, n, lse[r]);  // P = exp(scale · s − lse)
        apply_dropout(s, bh, i, 0, prob, dropped.data(), n);
        store_row(dropped.data(), n, T_, pd_row);
        apply_dropout(s, bh, i, 0, g, grad.data(), n);
        for (int64_t j = 0; j < n; ++j) {
          grad[j] = prob[j] * (grad[j] - d[r]) * sm_scale;
        }
        store_row(grad.data(), n, T_, ds_row);
        continue;
      }
      // P = exp(scale · s − lse) and dS = scale · P ∘ (dP − D), both rounded to bf16, in one pass
      const Vec vs(sm_scale), vl(lse[r]), vd(d[r]);
      int64_t j = 0;
      for (; j + Vec::size() <= n; j += Vec::size()) {
        const Vec pv = exp_fast(Vec::loadu(prob + j) * vs - vl);
        store(pd_row + j, pv);
        store(ds_row + j, pv * (Vec::loadu(g + j) - vd) * vs);
      }
      for (; j < n; ++j) {
        const float pv = std::exp(prob[j] * sm_scale - lse[r]);
        pd_row[j] = bf16(pv);
        ds_row[j] = bf16(pv * (g[j] - d[r]) * sm_scale);
      }
      std::fill(pd_row + n, pd_row + T_, bf16(0.f));
      std::fill(ds_row + n, ds_row + T_, bf16(0.f));
    }
  });
}

void attention_forward(const AttentionArgs& s, DType dt, const void* qkv, void* out, float* lse) {
  forward<false>(s, dt, qkv, out, lse);
}

void attention_backward(const AttentionArgs& s, DType dt, const void* qkv, const void* out, const void* dout,
                        const float* lse, void* dqkv) {
  backward<false>(s, dt, qkv, out, dout, lse, dqkv);
}

void attention_forward_bf16_dot(const AttentionArgs& s, DType dt, const void* qkv, void* out, float* lse) {
  forward<true>(s, dt, qkv, out, lse);
}

void attention_backward_bf16_dot(const AttentionArgs& s, DType dt, const void* qkv, const void* out,
                                 const void* dout, const float* lse, void* dqkv) {
  backward<true>(s, dt, qkv, out, dout, lse, dqkv);
}

}  // namespace sweep::kernels::cpu::CPU_CAPABILITY
