// bf16 matrix products on a CPU without bf16 products (AVX2 + FMA): a GEMM of its own whose packing
// reads the bf16 operands (or fp32 ones, rounded to bf16 as autocast rounds them) and widens them to
// fp32 — exactly: a product of two bf16 numbers is exact in fp32 — so that autocast's numerics cost
// no conversion pass of their own, where widening whole operands before an fp32 sgemm cost a tenth
// of the step. Blocked as BLIS's GEMMs are (Goto & van de Geijn, "Anatomy of high-performance
// matrix multiplication", 2008): a 6 × 16 register tile (12 accumulators of 8 lanes), panels of
// A (6 rows) and B (16 columns) packed k-major, K in blocks of 256 (a B micro-panel of 16 KiB stays
// in L1, a block of A in L2). Only the AVX2 build has it (ops.h: Ops::widened_gemm).
#include "kernels/cpu/vec.h"

namespace sweep::kernels::cpu::CPU_CAPABILITY {

#if !defined(CPU_CAPABILITY_AVX512)

namespace {

constexpr int64_t k_mr = 6, k_nr = 16;  // the register tile
constexpr int64_t k_kc = 256;           // a block of K
constexpr int64_t k_mc = 72;            // the most rows in a block of A (12 panels)

// 8 bf16 values widened to fp32 lanes: from bf16 storage, or from fp32 rounded to bf16 (to nearest
// even, NaN kept: c10::BFloat16's rounding) — what autocast's cast of an fp32 operand gives.
inline __m256 widen8(const bf16* p) { return load(p); }
inline __m256 widen8(const float* p) {
  const __m256 x = _mm256_loadu_ps(p);
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i r = _mm256_and_si256(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))),
                                     _mm256_set1_epi32(static_cast<int>(0xffff0000u)));
  return _mm256_castsi256_ps(_mm256_blendv_epi8(_mm256_set1_epi32(0x7fc00000), r,
                                                _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_ORD_Q))));
}
inline float widen1(bf16 v) { return static_cast<float>(v); }
inline float widen1(float v) { return static_cast<float>(bf16(v)); }

// r[i] (8 lanes each) becomes column i of the 8 × 8 matrix whose rows were r[0..7].
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// An operand's element (i, j): p[i · ld + j], or p[j · ld + i] when transposed; `rows` × `cols`
// is its logical shape (op(M)'s), which bounds the reads.
template <typename T>
struct Operand {
  const T* p;
  int64_t ld;
  bool transposed;
  int64_t rows, cols;
  const T* at(int64_t i, int64_t j) const { return transposed ? p + j * ld + i : p + i * ld + j; }
};

// Packs `width` (k_mr or k_nr) consecutive columns j0.. of rows k0..k0+kc of the k × n matrix `m`
// k-major: dst[k · width + c] = m(k0 + k, j0 + c), zero past the matrix's columns. Writes up to 8
// floats past the panel's end (the caller's buffer has room; panels are packed in order).
template <int64_t width, typename T>
void pack_panel(const Operand<T>& m, int64_t k0, int64_t kc, int64_t j0, float* dst) {
  const int64_t c = std::min(width, m.cols - j0);
  int64_t k = 0;
  if (c == width && !m.transposed && j0 + 8 * ((width + 7) / 8) <= m.cols) {  // each k's values lie side by side
    for (; k < kc; ++k) {
      const T* src = m.at(k0 + k, j0);
      for (int64_t q = 0; q < width; q += 8) {
        _mm256_storeu_ps(dst + k * width + q, widen8(src + q));
      }
    }
  } else if (c == width && m.transposed) {  // each column's values lie side by side: 8 × 8 transposes
    for (; k + 8 <= kc; k += 8) {
      for (int64_t q = 0; q < width; q += 8) {
        __m256 v[8];
        for (int64_t r = 0; r < 8; ++r) {
          v[r] = q + r < width ? widen8(m.at(k0 + k, j0 + q + r)) : _mm256_setzero_ps();
        }
        transpose8(v);
        for (int64_t r = 0; r < 8; ++r) {  // in order of k: a store's lanes past `width` are the next k's, written next
          _mm256_storeu_ps(dst + (k + r) * width + q, v[r]);
        }
      }
    }
  }
  for (; k < kc; ++k) {
    for (int64_t q = 0; q < width; ++q) {
      dst[k * width + q] = q < c ? widen1(*m.at(k0 + k, j0 + q)) : 0.f;
    }
  }
}

// c (k_mr × k_nr, row stride ldc) = (or +=, unless `first`) the product of a packed panel of A
// (kc × k_mr) and one of B (kc × k_nr).
inline void tile(int64_t kc, const float* __restrict a, const float* __restrict b, float* c, int64_t ldc, bool first) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 x = _mm256_broadcast_ss(a);
    c00 = _mm256_fmadd_ps(x, b0, c00);
    c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(x, b0, c10);
    c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(x, b0, c20);
    c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(x, b0, c30);
    c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(x, b0, c40);
    c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(x, b0, c50);
    c51 = _mm256_fmadd_ps(x, b1, c51);
    a += k_mr;
    b += k_nr;
  }
  const __m256 acc[k_mr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (int64_t r = 0; r < k_mr; ++r) {
    for (int64_t q = 0; q < 2; ++q) {
      float* const p = c + r * ldc + 8 * q;
      _mm256_storeu_ps(p, first ? acc[r][q] : _mm256_add_ps(_mm256_loadu_ps(p), acc[r][q]));
    }
  }
}

// The same into c's top-left rows × cols only (an edge of C).
inline void edge_tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool first, int64_t rows,
                      int64_t cols) {
  alignas(32) float t[k_mr * k_nr];
  tile(kc, a, b, t, k_nr, true);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t q = 0; q < cols; ++q) {
      c[r * ldc + q] = first ? t[r * k_nr + q] : c[r * ldc + q] + t[r * k_nr + q];
    }
  }
}

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// C's blocks, one task each: row blocks of at most k_mc rows, a multiple of the thread count of
// them; and where there are fewer row blocks than threads (a few rows: a sampled token), the
// columns in as many chunks (multiples of k_nr) as keep every thread busy.
struct Blocks {
  int64_t rows, row_count;  // rows per block, and how many
  int64_t cols, col_count;  // columns per chunk, and how many
  int64_t count() const { return row_count * col_count; }
};
Blocks blocks_of(int64_t m, int64_t n) {
  const int64_t threads = std::max<int64_t>(at::get_num_threads(), 1);
  const int64_t per_thread = std::max<int64_t>((m + k_mc * threads - 1) / (k_mc * threads), 1);
  const int64_t rows = std::min(round_up((m + per_thread * threads - 1) / (per_thread * threads), k_mr), round_up(m, k_mr));
  const int64_t row_count = (m + rows - 1) / rows;
  const int64_t chunks = std::clamp<int64_t>(threads / row_count, 1, (n + k_nr - 1) / k_nr);
  const int64_t cols = round_up((n + chunks - 1) / chunks, k_nr);
  return {rows, row_count, cols, (n + cols - 1) / cols};
}

// Packs B's columns into panels of k_nr (panel j: rows k0..k0+kc, k_nr × kc floats), in parallel.
template <typename T>
void pack_b(const Operand<T>& b, int64_t k0, int64_t kc, float* dst) {
  const int64_t panels = (b.cols + k_nr - 1) / k_nr;
  at::parallel_for(0, panels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      pack_panel<k_nr>(b, k0, kc, p * k_nr, dst + p * kc * k_nr);
    }
  });
}

// The rows of op(A) of block i0.. packed into panels of k_mr (Aᵀ's columns), rows k0..k0+kc.
template <typename T>
void pack_a(const Operand<T>& a, int64_t i0, int64_t rows, int64_t k0, int64_t kc, float* dst) {
  // op(A)'s block, seen as the k × m matrix whose columns are A's rows
  const Operand<T> at_{a.p, a.ld, !a.transposed, a.cols, a.rows};
  for (int64_t p = 0; p < rows; p += k_mr) {
    pack_panel<k_mr>(at_, k0, kc, i0 + p, dst + p * kc);
  }
}

// C (m × n, fp32 or bf16) = op(A) · op(B) (+ the bias, rounded to bf16, in every row), the
// operands read as bf16, fp32 sums; bf16 C rounded once at the end.
template <typename TA, typename TB>
void gemm(const Operand<TA>& a, const Operand<TB>& b, const float* bias, DType c_type, void* c, int64_t ldc) {
  const int64_t m = a.rows, n = b.cols, k = a.cols;
  const int64_t n_pad = round_up(n, k_nr);
  const Blocks blocks = blocks_of(m, n);
  const int64_t a_floats = blocks.rows * k_kc + 8;
  if (c_type == DType::f32) {
    // C summed in place: for each block of K, B's rows packed once, then every block of C
    std::vector<float> bp(static_cast<size_t>(k_kc * n_pad + 8));
    for (int64_t k0 = 0; k0 < k; k0 += k_kc) {
      const int64_t kc = std::min(k_kc, k - k0);
      pack_b(b, k0, kc, bp.data());
      at::parallel_for(0, blocks.count(), 1, [&](int64_t t0, int64_t t1) {
        std::vector<float> ap(static_cast<size_t>(a_floats));
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t i0 = t / blocks.col_count * blocks.rows, rows = std::min(blocks.rows, m - i0);
          const int64_t j0 = t % blocks.col_count * blocks.cols, j1 = std::min(j0 + blocks.cols, n);
          pack_a(a, i0, rows, k0, kc, ap.data());
          for (int64_t j = j0; j < j1; j += k_nr) {
            const float* const bpanel = bp.data() + j * kc;
            for (int64_t i = 0; i < rows; i += k_mr) {
              float* const cij = static_cast<float*>(c) + (i0 + i) * ldc + j;
              if (i + k_mr <= rows && j + k_nr <= j1) {
                tile(kc, ap.data() + i * kc, bpanel, cij, ldc, k0 == 0);
              } else {
                edge_tile(kc, ap.data() + i * kc, bpanel, cij, ldc, k0 == 0, std::min(k_mr, rows - i),
                          std::min(k_nr, j1 - j));
              }
            }
          }
        }
      });
    }
    return;
  }
  // bf16 C: all of B packed once (a weight: K × N), each block of C summed over K in fp32 and
  // rounded once
  std::vector<float> bp(static_cast<size_t>(k * n_pad + 8));
  pack_b(b, 0, k, bp.data());
  std::vector<float> bias16(static_cast<size_t>(n), 0.f);
  for (int64_t j = 0; bias != nullptr && j < n; ++j) {
    bias16[j] = widen1(bias[j]);
  }
  at::parallel_for(0, blocks.count(), 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> ap(static_cast<size_t>(a_floats));
    std::vector<float> ct(static_cast<size_t>(blocks.rows * blocks.cols));  // the block's sums
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i0 = t / blocks.col_count * blocks.rows, rows = std::min(blocks.rows, m - i0);
      const int64_t j0 = t % blocks.col_count * blocks.cols, j1 = std::min(j0 + blocks.cols, n);
      for (int64_t k0 = 0; k0 < k; k0 += k_kc) {
        const int64_t kc = std::min(k_kc, k - k0);
        pack_a(a, i0, rows, k0, kc, ap.data());
        for (int64_t j = j0; j < j1; j += k_nr) {
          const float* const bpanel = bp.data() + j * k + k0 * k_nr;
          for (int64_t i = 0; i < rows; i += k_mr) {
            // whole tiles: ct has room for them, and A's and B's panels are zero past the edges
            tile(kc, ap.data() + i * kc, bpanel, ct.data() + i * blocks.cols + (j - j0), blocks.cols, k0 == 0);
          }
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        bf16* const out = static_cast<bf16*>(c) + (i0 + r) * ldc;
        const float* const sum = ct.data() + r * blocks.cols;  // columns j0..j1
        int64_t j = j0;
        for (; j + 8 <= j1; j += 8) {
          store(out + j, Vec(_mm256_add_ps(_mm256_loadu_ps(sum + (j - j0)), _mm256_loadu_ps(bias16.data() + j))));
        }
        for (; j < j1; ++j) {
          out[j] = bf16(sum[j - j0] + bias16[j]);
        }
      }
    }
  });
}

template <typename T>
Operand<T> operand(const WidenedMatrix& w, int64_t rows, int64_t cols) {
  return {static_cast<const T*>(w.data), w.ld, w.transposed, rows, cols};
}

}  // namespace

void widened_gemm(int64_t m, int64_t n, int64_t k, const WidenedMatrix& a, const WidenedMatrix& b, const float* bias,
                  DType c_type, void* c, int64_t ldc) {
  if (m == 0 || n == 0) {
    return;
  }
  if (k == 0) {  // no products: C is the bias (rounded to bf16), or 0
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float v = bias != nullptr ? widen1(bias[j]) : 0.f;
        if (c_type == DType::f32) {
          static_cast<float*>(c)[i * ldc + j] = v;
        } else {
          static_cast<bf16*>(c)[i * ldc + j] = bf16(v);
        }
      }
    }
    return;
  }
  dispatch(a.type, [&](auto ta) {
    dispatch(b.type, [&](auto tb) {
      gemm(operand<decltype(ta)>(a, m, k), operand<decltype(tb)>(b, k, n), bias, c_type, c, ldc);
    });
  });
}

#endif

}  // namespace sweep::kernels::cpu::CPU_CAPABILITY
