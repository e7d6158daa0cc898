#include "kernels/attention_amx.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "kernels/onednn.h"

namespace sweep::kernels::amx {

namespace {

using onednn::product;

// Query rows a product takes at a time: the rows below see fewer keys, so the products skip the
// scores above the diagonal block by block.
constexpr int64_t k_rows = 256;

using bf16 = c10::BFloat16;

// Head bh's rows in a (batch, seq, parts · C) tensor, part `part` (Q, K, V of qkv; 0 of out and
// dout) — each row head_size wide, parts · C apart — copied to and from a dense seq × head_size
// block of the thread's own: oneDNN's AMX matmul takes dense matrices only (with rows apart it
// falls back to a slower kernel), and a head's block stays in the thread's cache, where copying all
// heads dense beforehand would be one more pass over memory.
struct HeadRows {
  const cpu::AttentionArgs& s;
  int64_t parts;
  int64_t offset(int64_t bh, int64_t part) const {
    const int64_t b = bh / s.heads, h = bh % s.heads, C = s.heads * s.head_size;
    return b * s.seq * parts * C + part * C + h * s.head_size;
  }
  void gather(const bf16* from, int64_t bh, int64_t part, bf16* to) const {
    const int64_t stride = parts * s.heads * s.head_size;
    const bf16* row = from + offset(bh, part);
    for (int64_t t = 0; t < s.seq; ++t) {
      std::copy(row + t * stride, row + t * stride + s.head_size, to + t * s.head_size);
    }
  }
  void scatter(const bf16* from, int64_t bh, int64_t part, bf16* to) const {
    const int64_t stride = parts * s.heads * s.head_size;
    bf16* row = to + offset(bh, part);
    for (int64_t t = 0; t < s.seq; ++t) {
      std::copy(from + t * s.head_size, from + (t + 1) * s.head_size, row + t * stride);
    }
  }
};

}  // namespace

bool takes(const cpu::AttentionArgs& s, torch::ScalarType dtype) {
  return dtype == torch::kBFloat16 && cpu::ops().amx && head_bytes(s.seq) <= k_thread_bytes;
}

void forward(const cpu::AttentionArgs& s, const torch::Tensor& qkv, torch::Tensor& out, torch::Tensor& lse) {
  const int64_t T = s.seq, hs = s.head_size, BH = s.batch * s.heads;
  const HeadRows in{s, 3}, outs{s, 1};
  const bf16* qkv_ptr = qkv.data_ptr<bf16>();
  bf16* o_ptr = out.data_ptr<bf16>();
  float* lse_ptr = lse.data_ptr<float>();
  // One head at a time on each thread: its scores stay in the thread's cache between the products.
  at::parallel_for(0, BH, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(T * T);
    std::vector<bf16> p(T * T), q(T * hs), k(T * hs), v(T * hs), o(T * hs);
    for (int64_t bh = begin; bh < end; ++bh) {
      in.gather(qkv_ptr, bh, 0, q.data());
      in.gather(qkv_ptr, bh, 1, k.data());
      in.gather(qkv_ptr, bh, 2, v.data());
      for (int64_t i0 = 0; i0 < T; i0 += k_rows) {  // Q Kᵀ: query rows i0 .. i1 see keys 0 .. i1
        const int64_t i1 = std::min(T, i0 + k_rows);
        product(i1 - i0, i1, hs, q.data() + i0 * hs, false, hs, k.data(), true, hs, scores.data() + i0 * T, T, true);
      }
      cpu::ops().softmax_rows(s, bh, 1, scores.data(), lse_ptr + bh * T, p.data());
      for (int64_t i0 = 0; i0 < T; i0 += k_rows) {  // P̃ V
        const int64_t i1 = std::min(T, i0 + k_rows);
        product(i1 - i0, hs, i1, p.data() + i0 * T, false, T, v.data(), false, hs, o.data() + i0 * hs, hs, false);
      }
      outs.scatter(o.data(), bh, 0, o_ptr);
    }
  });
}

torch::Tensor backward(const cpu::AttentionArgs& s, const torch::Tensor& qkv, const torch::Tensor& out,
                       const torch::Tensor& dout, const torch::Tensor& lse) {
  const int64_t B = s.batch, T = s.seq, nh = s.heads, hs = s.head_size, BH = B * nh;
  const HeadRows in{s, 3}, outs{s, 1};
  const bf16* qkv_ptr = qkv.data_ptr<bf16>();
  const bf16* dout_ptr = dout.data_ptr<bf16>();
  // D = rowsum(dO ∘ O) per head and query, in fp32
  const torch::Tensor d = (dout.to(torch::kFloat) * out).view({B, T, nh, hs}).sum(-1).permute({0, 2, 1}).contiguous();
  const float* d_ptr = d.data_ptr<float>();
  const float* lse_ptr = lse.data_ptr<float>();
  auto dqkv = torch::empty_like(qkv);
  bf16* dqkv_ptr = dqkv.data_ptr<bf16>();
  at::parallel_for(0, BH, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(T * T), dp(T * T);
    std::vector<bf16> pd(T * T), ds(T * T), q(T * hs), k(T * hs), v(T * hs), dO(T * hs), dq(T * hs), dk(T * hs),
        dv(T * hs);
    for (int64_t bh = begin; bh < end; ++bh) {
      in.gather(qkv_ptr, bh, 0, q.data());
      in.gather(qkv_ptr, bh, 1, k.data());
      in.gather(qkv_ptr, bh, 2, v.data());
      outs.gather(dout_ptr, bh, 0, dO.data());
      for (int64_t i0 = 0; i0 < T; i0 += k_rows) {  // query rows i0 .. i1 against keys 0 .. i1
        const int64_t i1 = std::min(T, i0 + k_rows), m = i1 - i0;
        product(m, i1, hs, q.data() + i0 * hs, false, hs, k.data(), true, hs, scores.data() + i0 * T, T, true);  // Q Kᵀ
        product(m, i1, hs, dO.data() + i0 * hs, false, hs, v.data(), true, hs, dp.data() + i0 * T, T, true);  // dO Vᵀ
      }
      cpu::ops().score_grad_rows(s, bh, 1, scores.data(), dp.data(), lse_ptr + bh * T, d_ptr + bh * T, pd.data(),
                                 ds.data());
      for (int64_t i0 = 0; i0 < T; i0 += k_rows) {
        const int64_t i1 = std::min(T, i0 + k_rows), m = i1 - i0;
        // dQ for query rows i0 .. i1 (keys 0 .. i1); dV and dK for keys i0 .. i1 (query rows i0 .. T)
        product(m, hs, i1, ds.data() + i0 * T, false, T, k.data(), false, hs, dq.data() + i0 * hs, hs, false);  // dS K
        product(m, hs, T - i0, pd.data() + i0 * T + i0, true, T, dO.data() + i0 * hs, false, hs, dv.data() + i0 * hs,
                hs, false);  // P̃ᵀ dO
        product(m, hs, T - i0, ds.data() + i0 * T + i0, true, T, q.data() + i0 * hs, false, hs, dk.data() + i0 * hs,
                hs, false);  // dSᵀ Q
      }
      in.scatter(dq.data(), bh, 0, dqkv_ptr);
      in.scatter(dk.data(), bh, 1, dqkv_ptr);
      in.scatter(dv.data(), bh, 2, dqkv_ptr);
    }
  });
  return dqkv;
}

}  // namespace sweep::kernels::amx
