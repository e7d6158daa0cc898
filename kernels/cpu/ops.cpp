// The CPU kernels of kernels/cpu/ops.h but attention (kernels/cpu/attention.cpp): bias + activation,
// cross-entropy, AdamW; and the tables of each instruction set. Compiled once per instruction
// set (vec.h).
#include "kernels/cpu/vec.h"

namespace sweep::kernels::cpu::CPU_CAPABILITY {

namespace {

// ---- bias + activation (exact GELU, ReLU²) ----

// Φ(v) and e^(−v²/2) (φ without its constant), sharing one exponential: erfc(z) = q(t)·e^(−z²) with z = |v|/√2 and
// Abramowitz & Stegun's 7.1.26 polynomial q (absolute error < 1.5e-7), one division, one inline exp.
struct NormalCdf {
  Vec cdf, gauss;  // Φ(v), e^(−v²/2)
};
inline NormalCdf normal_cdf(const Vec& v) {
  const Vec z = v.abs() * Vec(static_cast<float>(M_SQRT1_2));
  const Vec t = Vec(1.f) / at::vec::fmadd(Vec(0.3275911f), z, Vec(1.f));
  Vec q(1.061405429f);
  for (const float c : {-1.453152027f, 1.421413741f, -0.284496736f, 0.254829592f}) {
    q = at::vec::fmadd(q, t, Vec(c));
  }
  const Vec gauss = exp_fast(Vec(0.f) - z * z);
  const Vec half_erfc = Vec(0.5f) * q * t * gauss;  // Φ(−|v|)
  return {Vec::blendv(half_erfc, Vec(1.f) - half_erfc, v > Vec(0.f)), gauss};
}

inline float normal_cdf(float x) { return 0.5f * std::erfc(-x * static_cast<float>(M_SQRT1_2)); }

int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1)); }

// The activations, each as a vector and a scalar function of v = h + bias: the value, and the
// derivative.
struct Gelu {  // exact (erf) GELU: v·Φ(v); derivative Φ(v) + v·φ(v)
  static constexpr float k_inv_sqrt_2pi = 0.3989422804014327f;
  static Vec value(const Vec& v) { return v * normal_cdf(v).cdf; }
  static float value(float v) { return v * normal_cdf(v); }
  static Vec derivative(const Vec& v) {
    const NormalCdf n = normal_cdf(v);
    return at::vec::fmadd(v * Vec(k_inv_sqrt_2pi), n.gauss, n.cdf);
  }
  static float derivative(float v) { return normal_cdf(v) + v * k_inv_sqrt_2pi * std::exp(-0.5f * v * v); }
};
struct Relu2 {  // relu(v)²; derivative 2·relu(v) (a NaN stays NaN: relu by comparison, not by max)
  static Vec value(const Vec& v) {
    const Vec r = Vec::blendv(Vec(0.f), v, (v > Vec(0.f)) | (v != v));
    return r * r;
  }
  static float value(float v) { return v > 0.f || v != v ? v * v : 0.f; }
  static Vec derivative(const Vec& v) { return Vec::blendv(Vec(0.f), v + v, (v > Vec(0.f)) | (v != v)); }
  static float derivative(float v) { return v > 0.f || v != v ? 2.f * v : 0.f; }
};

template <typename A, typename T>
void bias_act_forward_t(const T* h, const float* bias, T* y, int64_t rows, int64_t cols) {
  at::parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* hr = h + r * cols;
      T* yr = y + r * cols;
      int64_t j = 0;
      for (; j + Vec::size() <= cols; j += Vec::size()) {
        store(yr + j, A::value(load(hr + j) + Vec::loadu(bias + j)));
      }
      for (; j < cols; ++j) {
        store1(yr + j, A::value(load1(hr + j) + bias[j]));
      }
    }
  });
}

template <typename A, typename T>
void bias_act_backward_t(const T* h, const float* bias, const T* dy, T* dh, float* dbias, int64_t rows, int64_t cols) {
  const int threads = at::get_num_threads();
  std::vector<float> partial(static_cast<size_t>(threads) * cols, 0.f);  // per-thread Σ dh, summed in thread order
  at::parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) {
    float* acc = partial.data() + static_cast<int64_t>(at::get_thread_num()) * cols;
    for (int64_t r = begin; r < end; ++r) {
      const T* hr = h + r * cols;
      const T* dyr = dy + r * cols;
      T* dhr = dh + r * cols;
      int64_t j = 0;
      for (; j + Vec::size() <= cols; j += Vec::size()) {
        const Vec out = load(dyr + j) * A::derivative(load(hr + j) + Vec::loadu(bias + j));
        store(dhr + j, out);
        (Vec::loadu(acc + j) + out).store(acc + j);
      }
      for (; j < cols; ++j) {
        const float out = load1(dyr + j) * A::derivative(load1(hr + j) + bias[j]);
        store1(dhr + j, out);
        acc[j] += out;
      }
    }
  });
  std::fill(dbias, dbias + cols, 0.f);
  for (int t = 0; t < threads; ++t) {
    for (int64_t j = 0; j < cols; ++j) {
      dbias[j] += partial[static_cast<size_t>(t) * cols + j];
    }
  }
}

// f(the activation's struct, the storage type's zero)
template <typename F>
void dispatch_act(Activation act, DType dt, F&& f) {
  dispatch(dt, [&](auto t) {
    if (act == Activation::relu2) {
      f(Relu2{}, t);
    } else {
      f(Gelu{}, t);
    }
  });
}

void bias_act_forward(Activation act, DType dt, const void* h, const float* bias, void* y, int64_t rows, int64_t cols) {
  dispatch_act(act, dt, [&](auto a, auto t) {
    using A = decltype(a);
    using T = decltype(t);
    bias_act_forward_t<A>(static_cast<const T*>(h), bias, static_cast<T*>(y), rows, cols);
  });
}

void bias_act_backward(Activation act, DType dt, const void* h, const float* bias, const void* dy, void* dh,
                       float* dbias, int64_t rows, int64_t cols) {
  dispatch_act(act, dt, [&](auto a, auto t) {
    using A = decltype(a);
    using T = decltype(t);
    bias_act_backward_t<A>(static_cast<const T*>(h), bias, static_cast<const T*>(dy), static_cast<T*>(dh), dbias,
                           rows, cols);
  });
}

// ---- LayerNorm: fp32 statistics, the output in the dtype its matmul takes ----

inline float sum_of(const float* x, int64_t n) {
  Vec acc(0.f);
  int64_t j = 0;
  for (; j + Vec::size() <= n; j += Vec::size()) {
    acc = acc + Vec::loadu(x + j);
  }
  float s = hsum(acc);
  for (; j < n; ++j) {
    s += x[j];
  }
  return s;
}

template <typename T>
void layer_norm_forward_t(const float* x, const float* w, const float* b, T* y, float* mean, float* rstd, int64_t rows,
                          int64_t cols, float eps) {
  at::parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * cols;
      const float mu = sum_of(xr, cols) / static_cast<float>(cols);
      const Vec vmu(mu);
      Vec acc(0.f);
      int64_t j = 0;
      for (; j + Vec::size() <= cols; j += Vec::size()) {
        const Vec d = Vec::loadu(xr + j) - vmu;
        acc = at::vec::fmadd(d, d, acc);
      }
      float var = hsum(acc);
      for (; j < cols; ++j) {
        var += (xr[j] - mu) * (xr[j] - mu);
      }
      // a variance that overflows makes the row NaN, as LibTorch's (Welford's inf − inf) does: a
      // diverged run must show, not normalise to its bias
      const float rs = std::isfinite(var) ? 1.f / std::sqrt(var / static_cast<float>(cols) + eps)
                                          : std::numeric_limits<float>::quiet_NaN();
      mean[r] = mu;
      rstd[r] = rs;
      T* yr = y + r * cols;
      const Vec vrs(rs);
      j = 0;
      for (; j + Vec::size() <= cols; j += Vec::size()) {
        store(yr + j, at::vec::fmadd((Vec::loadu(xr + j) - vmu) * vrs, Vec::loadu(w + j), Vec::loadu(b + j)));
      }
      for (; j < cols; ++j) {
        store1(yr + j, (xr[j] - mu) * rs * w[j] + b[j]);
      }
    }
  });
}

template <typename T>
void layer_norm_backward_t(const T* dy, const float* x, const float* w, const float* mean, const float* rstd, float* dx,
                           float* dw, float* db, int64_t rows, int64_t cols) {
  const int threads = at::get_num_threads();
  // per-thread Σ dy · x̂ and Σ dy, summed in thread order
  std::vector<float> partial(static_cast<size_t>(threads) * 2 * cols, 0.f);
  at::parallel_for(0, rows, row_grain(cols), [&](int64_t begin, int64_t end) {
    float* acc_w = partial.data() + static_cast<int64_t>(at::get_thread_num()) * 2 * cols;
    float* acc_b = acc_w + cols;
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * cols;
      const T* dyr = dy + r * cols;
      const Vec vmu(mean[r]), vrs(rstd[r]);
      // the row's mean of g = dy · w and of g · x̂
      Vec sg(0.f), sgx(0.f);
      int64_t j = 0;
      for (; j + Vec::size() <= cols; j += Vec::size()) {
        const Vec xh = (Vec::loadu(xr + j) - vmu) * vrs, d = load(dyr + j), g = d * Vec::loadu(w + j);
        sg = sg + g;
        sgx = at::vec::fmadd(g, xh, sgx);
        (Vec::loadu(acc_w + j) + d * xh).store(acc_w + j);
        (Vec::loadu(acc_b + j) + d).store(acc_b + j);
      }
      float mg = hsum(sg), mgx = hsum(sgx);
      for (; j < cols; ++j) {
        const float xh = (xr[j] - mean[r]) * rstd[r], d = load1(dyr + j), g = d * w[j];
        mg += g;
        mgx += g * xh;
        acc_w[j] += d * xh;
        acc_b[j] += d;
      }
      mg /= static_cast<float>(cols);
      mgx /= static_cast<float>(cols);
      float* dxr = dx + r * cols;
      const Vec vmg(mg), vmgx(mgx);
      j = 0;
      for (; j + Vec::size() <= cols; j += Vec::size()) {
        const Vec xh = (Vec::loadu(xr + j) - vmu) * vrs, g = load(dyr + j) * Vec::loadu(w + j);
        (vrs * (g - vmg - xh * vmgx)).store(dxr + j);
      }
      for (; j < cols; ++j) {
        const float xh = (xr[j] - mean[r]) * rstd[r], g = load1(dyr + j) * w[j];
        dxr[j] = rstd[r] * (g - mg - xh * mgx);
      }
    }
  });
  std::fill(dw, dw + cols, 0.f);
  std::fill(db, db + cols, 0.f);
  for (int t = 0; t < threads; ++t) {
    const float* pw = partial.data() + static_cast<size_t>(t) * 2 * cols;
    for (int64_t j = 0; j < cols; ++j) {
      dw[j] += pw[j];
      db[j] += pw[cols + j];
    }
  }
}

void layer_norm_forward(DType out, const float* x, const float* w, const float* b, void* y, float* mean, float* rstd,
                        int64_t rows, int64_t cols, float eps) {
  dispatch(out, [&](auto t) {
    using T = decltype(t);
    layer_norm_forward_t(x, w, b, static_cast<T*>(y), mean, rstd, rows, cols, eps);
  });
}

void layer_norm_backward(DType dy_type, const void* dy, const float* x, const float* w, const float* mean,
                         const float* rstd, float* dx, float* dw, float* db, int64_t rows, int64_t cols) {
  dispatch(dy_type, [&](auto t) {
    using T = decltype(t);
    layer_norm_backward_t(static_cast<const T*>(dy), x, w, mean, rstd, dx, dw, db, rows, cols);
  });
}

// ---- cross-entropy, gradient in place of the logits ----

// x ← cap · tanh(x / cap) over n values, each tanh kept in t (the gradient's factor 1 − t²).
inline void soft_cap(float* x, float* t, int64_t n, float cap) {
  const float inv = 1.f / cap;
  const Vec vcap(cap), vinv(inv);
  int64_t i = 0;
  for (; i + Vec::size() <= n; i += Vec::size()) {
    const Vec th = (Vec::loadu(x + i) * vinv).tanh();
    th.store(t + i);
    (th * vcap).store(x + i);
  }
  for (; i < n; ++i) {
    t[i] = std::tanh(x[i] * inv);
    x[i] = t[i] * cap;
  }
}

// g ← g · (1 − t²): the gradient through the cap.
inline void soft_cap_backward(float* g, const float* t, int64_t n) {
  int64_t i = 0;
  for (; i + Vec::size() <= n; i += Vec::size()) {
    const Vec th = Vec::loadu(t + i);
    (Vec::loadu(g + i) * (Vec(1.f) - th * th)).store(g + i);
  }
  for (; i < n; ++i) {
    g[i] *= 1.f - t[i] * t[i];
  }
}

template <typename T>
double cross_entropy_inplace_t(T* logits, const int64_t* targets, int64_t rows, int64_t vocab, float grad_scale,
                               float softcap) {
  const int threads = at::get_num_threads();
  std::vector<double> partial(static_cast<size_t>(threads), 0.0);
  at::parallel_for(0, rows, row_grain(vocab), [&](int64_t begin, int64_t end) {
    std::vector<float> x(vocab), th(softcap > 0.f ? vocab : 0);
    double& acc = partial[static_cast<size_t>(at::get_thread_num())];
    for (int64_t r = begin; r < end; ++r) {
      T* row = logits + r * vocab;
      to_float(row, x.data(), vocab);
      if (softcap > 0.f) {
        soft_cap(x.data(), th.data(), vocab, softcap);
      }
      const int64_t target = targets[r];
      const float target_logit = x[target];
      const float mx = max_of(x.data(), vocab);
      const float sum = exp_sum(x.data(), vocab, mx);  // x = exp(logit − max)
      const float lse = mx + std::log(sum);
      acc += static_cast<double>(lse - target_logit);
      if (grad_scale != 0.f) {
        scale(x.data(), vocab, grad_scale / sum);  // softmax · grad_scale
        x[target] -= grad_scale;
        if (softcap > 0.f) {
          soft_cap_backward(x.data(), th.data(), vocab);
        }
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
                             float grad_scale, float softcap) {
  double loss = 0.0;
  dispatch(dt, [&](auto t) {
    using T = decltype(t);
    loss = cross_entropy_inplace_t(static_cast<T*>(logits), targets, rows, vocab, grad_scale, softcap);
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
      bf16* const copy = static_cast<bf16*>(s.param_bf16);
      int64_t j = lo;
      for (; j + Vec::size() <= hi; j += Vec::size()) {
        const Vec g = Vec::loadu(s.grad + j) * gs;
        const Vec m = Vec::loadu(s.exp_avg + j) * b1 + g * one_b1;
        const Vec v = Vec::loadu(s.exp_avg_sq + j) * b2 + one_b2 * g * g;
        const Vec p = Vec::loadu(s.param + j) * decay - m / (v.sqrt() / bc2 + eps) * step_size;
        m.store(s.exp_avg + j);
        v.store(s.exp_avg_sq + j);
        p.store(s.param + j);
        if (copy != nullptr) {
          store(copy + j, p);
        }
      }
      for (; j < hi; ++j) {
        const float g = s.grad[j] * grad_scale;
        const float m = s.exp_avg[j] * s.beta1 + g * s.one_minus_beta1;
        const float v = s.exp_avg_sq[j] * s.beta2 + s.one_minus_beta2 * g * g;
        s.exp_avg[j] = m;
        s.exp_avg_sq[j] = v;
        s.param[j] = s.param[j] * s.decay - m / (std::sqrt(v) / s.bias_correction2_sqrt + s.eps) * s.step_size;
        if (copy != nullptr) {
          store1(copy + j, s.param[j]);
        }
      }
      pos = offsets[seg] + hi;
    }
  });
}

}  // namespace

constexpr Ops k_ops = {
#define SWEEP_STR2(x) #x
#define SWEEP_STR(x) SWEEP_STR2(x)
    SWEEP_STR(CPU_CAPABILITY),
    false,
    false,  // bf16 products: only with AVX512-BF16's dot products (k_ops_bf16_dot, k_ops_amx)
    // AMD Zen 3 (AVX2), 2026-11-27: MKL's sgemm (ATen, PyTorch 2.15) 50 ms against oneDNN 2.6's
    // 70 ms for the MLP's linear; AVX-512 keeps oneDNN's, measured faster than OpenBLAS there
#if defined(CPU_CAPABILITY_AVX512)
    Gemm::onednn,
#else
    Gemm::aten,
#endif
    attention_forward,
    attention_backward,
    bias_act_forward,
    bias_act_backward,
    cross_entropy_inplace,
    adamw,
    layer_norm_forward,
    layer_norm_backward,
    softmax_rows,
    score_grad_rows,
#if defined(CPU_CAPABILITY_AVX512)
    nullptr,  // bf16 without bf16 products: blocks widened for oneDNN's sgemm
#else
    widened_gemm,
#endif
};

#if defined(CPU_CAPABILITY_AVX512)
// k_ops with the bf16 attention tiles on AVX512-BF16 dot products (fp32 as k_ops').
constexpr Ops k_ops_bf16_dot = [] {
  Ops o = k_ops;
  o.isa = "AVX512_BF16";
  o.bf16_matmul = true;
  o.attention_forward = attention_forward_bf16_dot;
  o.attention_backward = attention_backward_bf16_dot;
  return o;
}();

// k_ops_bf16_dot, with bf16 attention on AMX where kernels/attention_amx.cpp takes it.
constexpr Ops k_ops_amx = [] {
  Ops o = k_ops_bf16_dot;
  o.isa = "AMX";
  o.amx = true;
  return o;
}();
#endif

}  // namespace sweep::kernels::cpu::CPU_CAPABILITY
