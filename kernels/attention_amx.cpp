#include "kernels/attention_amx.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "kernels/onednn.h"

namespace sweep::kernels::amx {

namespace {

using onednn::product;

// (3, batch · heads, seq, head_size): Q, K and V of each head, each dense.
torch::Tensor split_heads(const cpu::AttentionArgs& s, const torch::Tensor& qkv) {
  return qkv.view({s.batch, s.seq, 3, s.heads, s.head_size}).permute({2, 0, 3, 1, 4}).contiguous();
}

// Query rows a product takes at a time: the rows below see fewer keys, so the products skip the
// scores above the diagonal block by block.
constexpr int64_t k_rows = 256;

// Head bh of a (…, batch · heads, seq, head_size) tensor t of dense heads.
template <typename P>
P* head(P* base, int64_t bh, const cpu::AttentionArgs& s) {
  return base + bh * s.seq * s.head_size;
}

}  // namespace

bool takes(const cpu::AttentionArgs& s, torch::ScalarType dtype) {
  return dtype == torch::kBFloat16 && cpu::ops().amx && head_bytes(s.seq) <= k_thread_bytes;
}

void forward(const cpu::AttentionArgs& s, const torch::Tensor& qkv, torch::Tensor& out, torch::Tensor& lse) {
  using bf16 = c10::BFloat16;
  const int64_t T = s.seq, hs = s.head_size, BH = s.batch * s.heads;
  const torch::Tensor heads = split_heads(s, qkv);
  const bf16* q = heads[0].data_ptr<bf16>();
  const bf16* k = heads[1].data_ptr<bf16>();
  const bf16* v = heads[2].data_ptr<bf16>();
  auto o = torch::empty({BH, T, hs}, qkv.options());
  bf16* o_ptr = o.data_ptr<bf16>();
  float* lse_ptr = lse.data_ptr<float>();
  // One head at a time on each thread: its scores stay in the thread's cache between the products.
  at::parallel_for(0, BH, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(T * T);
    std::vector<bf16> p(T * T);
    for (int64_t bh = begin; bh < end; ++bh) {
      const bf16 *qh = head(q, bh, s), *kh = head(k, bh, s), *vh = head(v, bh, s);
      for (int64_t i0 = 0; i0 < T; i0 += k_rows) {  // Q Kᵀ: query rows i0 .. i1 see keys 0 .. i1
        const int64_t i1 = std::min(T, i0 + k_rows);
        product(i1 - i0, i1, hs, qh + i0 * hs, false, hs, kh, true, hs, scores.data() + i0 * T, T, true);
      }
      cpu::ops().softmax_rows(s, bh, 1, scores.data(), lse_ptr + bh * T, p.data());
      for (int64_t i0 = 0; i0 < T; i0 += k_rows) {  // P̃ V
        const int64_t i1 = std::min(T, i0 + k_rows);
        product(i1 - i0, hs, i1, p.data() + i0 * T, false, T, vh, false, hs, head(o_ptr, bh, s) + i0 * hs, hs, false);
      }
    }
  });
  out.view({s.batch, T, s.heads, hs}).copy_(o.view({s.batch, s.heads, T, hs}).permute({0, 2, 1, 3}));
}

torch::Tensor backward(const cpu::AttentionArgs& s, const torch::Tensor& qkv, const torch::Tensor& out,
                       const torch::Tensor& dout, const torch::Tensor& lse) {
  using bf16 = c10::BFloat16;
  const int64_t B = s.batch, T = s.seq, nh = s.heads, hs = s.head_size, BH = B * nh;
  const torch::Tensor heads = split_heads(s, qkv);
  const bf16* q = heads[0].data_ptr<bf16>();
  const bf16* k = heads[1].data_ptr<bf16>();
  const bf16* v = heads[2].data_ptr<bf16>();
  const torch::Tensor dO = dout.view({B, T, nh, hs}).permute({0, 2, 1, 3}).contiguous();
  const bf16* dO_ptr = dO.data_ptr<bf16>();
  // D = rowsum(dO ∘ O) per head and query, in fp32
  const torch::Tensor d =
      (dout.to(torch::kFloat) * out).view({B, T, nh, hs}).sum(-1).permute({0, 2, 1}).contiguous();
  const float* d_ptr = d.data_ptr<float>();
  const float* lse_ptr = lse.data_ptr<float>();
  auto grads = torch::empty({3, BH, T, hs}, qkv.options());  // dQ, dK, dV per head
  bf16* dq = grads[0].data_ptr<bf16>();
  bf16* dk = grads[1].data_ptr<bf16>();
  bf16* dv = grads[2].data_ptr<bf16>();
  at::parallel_for(0, BH, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(T * T), dp(T * T);
    std::vector<bf16> pd(T * T), ds(T * T);
    for (int64_t bh = begin; bh < end; ++bh) {
      const bf16 *qh = head(q, bh, s), *kh = head(k, bh, s), *vh = head(v, bh, s), *dOh = head(dO_ptr, bh, s);
      for (int64_t i0 = 0; i0 < T; i0 += k_rows) {  // query rows i0 .. i1 against keys 0 .. i1
        const int64_t i1 = std::min(T, i0 + k_rows), m = i1 - i0;
        product(m, i1, hs, qh + i0 * hs, false, hs, kh, true, hs, scores.data() + i0 * T, T, true);  // Q Kᵀ
        product(m, i1, hs, dOh + i0 * hs, false, hs, vh, true, hs, dp.data() + i0 * T, T, true);     // dO Vᵀ
      }
      cpu::ops().score_grad_rows(s, bh, 1, scores.data(), dp.data(), lse_ptr + bh * T, d_ptr + bh * T, pd.data(),
                                 ds.data());
      for (int64_t i0 = 0; i0 < T; i0 += k_rows) {
        const int64_t i1 = std::min(T, i0 + k_rows), m = i1 - i0;
        // dQ for query rows i0 .. i1 (keys 0 .. i1); dV and dK for keys i0 .. i1 (query rows i0 .. T)
        product(m, hs, i1, ds.data() + i0 * T, false, T, kh, false, hs, head(dq, bh, s) + i0 * hs, hs, false);  // dS K
        product(m, hs, T - i0, pd.data() + i0 * T + i0, true, T, dOh + i0 * hs, false, hs, head(dv, bh, s) + i0 * hs,
                hs, false);  // P̃ᵀ dO
        product(m, hs, T - i0, ds.data() + i0 * T + i0, true, T, qh + i0 * hs, false, hs, head(dk, bh, s) + i0 * hs,
                hs, false);  // dSᵀ Q
      }
    }
  });
  return grads.view({3, B, nh, T, hs}).permute({1, 3, 0, 2, 4}).reshape({B, T, 3 * nh * hs});
}

}  // namespace sweep::kernels::amx
