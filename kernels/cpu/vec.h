// Helpers of the per-instruction-set CPU kernels (kernels/cpu/ops.cpp, kernels/cpu/attention.cpp):
// each is compiled twice, with CPU_CAPABILITY=AVX2 and with CPU_CAPABILITY=AVX512 (and the
// matching -m flags), so ATen's Vectorized<float> is 8 or 16 lanes wide; the namespace carries
// the capability's name. Matrix products of tiles go to oneDNN's sgemm (row-major;
// single-threaded inside a parallel region).
#pragma once

#include "kernels/cpu/ops.h"

// GCC 12 warns that the AVX-512 intrinsics' own `__Y` (in _mm512_undefined_*) "may be used
// uninitialized" wherever they are inlined (GCC bug 105593, fixed in GCC 13): silenced for
// these headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/vec.h>
#include <c10/util/BFloat16.h>
#include <dnnl.h>
#pragma GCC diagnostic pop

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

// One vector of fp32 lanes from fp32 or bf16 storage, and back (bf16 rounded to nearest even, as
// c10::BFloat16; NaN stays NaN).
inline Vec load(const float* p) { return Vec::loadu(p); }
inline void store(float* p, const Vec& x) { x.store(p); }
#if defined(CPU_CAPABILITY_AVX512)
inline Vec load(const bf16* p) {
  const __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
}
// The bf16 bits (rounded to nearest even; NaN kept) of 16 fp32 lanes, in the lanes' low halves.
inline __m512i bf16_bits(const __m512& x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  return _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), _mm512_set1_epi32(0x7fc0), r);
}
inline void store(bf16* p, const Vec& x) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(bf16_bits(x)));
}
#else
inline Vec load(const bf16* p) {
  const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
}
inline void store(bf16* p, const Vec& x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  r = _mm256_blendv_epi8(_mm256_set1_epi32(0x7fc0), r, _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_ORD_Q)));
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xd8);  // 16-bit lanes 0..7 low
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}
#endif
inline float load1(const float* p) { return *p; }
inline float load1(const bf16* p) { return static_cast<float>(*p); }
inline void store1(float* p, float x) { *p = x; }
inline void store1(bf16* p, float x) { *p = bf16(x); }

template <typename T>
inline void to_float(const T* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + Vec::size() <= n; i += Vec::size()) {
    load(src + i).store(dst + i);
  }
  for (; i < n; ++i) {
    dst[i] = load1(src + i);
  }
}
template <typename T>
inline void from_float(const float* src, T* dst, int64_t n) {
  int64_t i = 0;
  for (; i + Vec::size() <= n; i += Vec::size()) {
    store(dst + i, Vec::loadu(src + i));
  }
  for (; i < n; ++i) {
    store1(dst + i, src[i]);
  }
}

// e^x inline (Cephes' expf: relative error ~1e-7); 0 below −87.33 (where fp32 turns denormal).
inline Vec exp_fast(const Vec& x_in) {
  const Vec lo(-87.33654f);
  const Vec x0 = at::vec::minimum(x_in, Vec(88.37626f));
  const Vec x = at::vec::maximum(x0, lo);
  const Vec n = (x * Vec(1.44269504088896341f)).round();
  const Vec r = at::vec::fmadd(n, Vec(2.12194440e-4f), at::vec::fmadd(n, Vec(-0.693359375f), x));
  Vec p(1.9875691500e-4f);
  for (const float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f}) {
    p = at::vec::fmadd(p, r, Vec(c));
  }
  const Vec y = at::vec::fmadd(p, r * r, r + Vec(1.f));
#if defined(CPU_CAPABILITY_AVX512)
  const Vec e = _mm512_scalef_ps(y, n);
#else
  const Vec e = y * Vec(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)));
#endif
  return Vec::blendv(e, Vec(0.f), x0 < lo);  // NaN in → NaN out
}

// The sum of a vector's lanes.
inline float hsum(const Vec& v) {
  float lanes[Vec::size()];
  v.store(lanes);
  float sum = 0.f;
  for (float lane : lanes) {
    sum += lane;
  }
  return sum;
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
    const Vec e = exp_fast(Vec::loadu(x + i) - vshift);
    e.store(x + i);
    acc = acc + e;
  }
  float sum = hsum(acc);
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

}  // namespace

// The attention kernels of this instruction set (kernels/cpu/attention.cpp): fp32 tiles on
// oneDNN's sgemm, and (the AVX-512 build) bf16 tiles on AVX512-BF16 dot products.
void attention_forward(const AttentionArgs& s, DType dt, const void* qkv, void* out, float* lse);
void attention_backward(const AttentionArgs& s, DType dt, const void* qkv, const void* out, const void* dout,
                        const float* lse, void* dqkv);
void attention_forward_bf16_dot(const AttentionArgs& s, DType dt, const void* qkv, void* out, float* lse);
void attention_backward_bf16_dot(const AttentionArgs& s, DType dt, const void* qkv, const void* out,
                                 const void* dout, const float* lse, void* dqkv);
void softmax_rows(const AttentionArgs& s, int64_t bh0, int64_t heads, float* sc, float* lse, void* p);
void score_grad_rows(const AttentionArgs& s, int64_t bh0, int64_t heads, float* sc, const float* dp, const float* lse,
                     const float* d, void* pd, void* ds);
// The GEMM of bf16 operands widened in its packing (kernels/cpu/gemm.cpp; the AVX2 build only).
void widened_gemm(int64_t m, int64_t n, int64_t k, const WidenedMatrix& a, const WidenedMatrix& b, const float* bias,
                  DType c_type, void* c, int64_t ldc);

}  // namespace sweep::kernels::cpu::CPU_CAPABILITY
