#include "kernels/attention.h"

#include <ATen/SDPBackend.h>

#include <cmath>
#include <limits>

#include "kernels/attention_amx.h"
#include "kernels/common.h"

namespace sweep::kernels {

namespace {

cpu::AttentionArgs args_of(const torch::Tensor& qkv, int64_t n_head, double dropout_p, uint64_t seed) {
  TORCH_CHECK(qkv.dim() == 3 && qkv.size(2) % (3 * n_head) == 0, "causal_attention: qkv (B, T, 3C) with C divisible by ",
              n_head, " heads expected, got ", qkv.sizes());
  TORCH_CHECK(dropout_p >= 0 && dropout_p < 1, "causal_attention: dropout in [0, 1) expected, got ", dropout_p);
  return {qkv.size(0), qkv.size(1), n_head, qkv.size(2) / (3 * n_head), static_cast<float>(dropout_p), seed};
}

struct CausalAttention : torch::autograd::Function<CausalAttention> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv_in, int64_t n_head,
                               double dropout_p, int64_t seed) {
    RECORD_USER_SCOPE("sweep::causal_attention");
    const auto dtype = cpu_dtype(qkv_in, "causal_attention");
    const auto qkv = qkv_in.contiguous();
    const auto s = args_of(qkv, n_head, dropout_p, static_cast<uint64_t>(seed));
    auto out = torch::empty({s.batch, s.seq, s.heads * s.head_size}, qkv.options());
    auto lse = torch::empty({s.batch, s.heads, s.seq}, qkv.options().dtype(torch::kFloat));
    if (amx::takes(s, qkv.scalar_type())) {
      amx::forward(s, qkv, out, lse);
    } else {
      cpu::ops().attention_forward(s, dtype, qkv.data_ptr(), out.data_ptr(), lse.data_ptr<float>());
    }
    ctx->save_for_backward({qkv, out, lse});
    ctx->saved_data["n_head"] = n_head;
    ctx->saved_data["dropout"] = dropout_p;
    ctx->saved_data["seed"] = seed;
    return out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    RECORD_USER_SCOPE("sweep::causal_attention_backward");
    const auto saved = ctx->get_saved_variables();
    const auto& qkv = saved[0];
    const auto s = args_of(qkv, ctx->saved_data["n_head"].toInt(), ctx->saved_data["dropout"].toDouble(),
                           static_cast<uint64_t>(ctx->saved_data["seed"].toInt()));
    const auto dout = grads[0].to(qkv.scalar_type()).contiguous();
    if (amx::takes(s, qkv.scalar_type())) {
      return {amx::backward(s, qkv, saved[1], dout, saved[2]), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
    auto dqkv = torch::empty_like(qkv);
    cpu::ops().attention_backward(s, cpu_dtype(qkv, "causal_attention"), qkv.data_ptr(), saved[1].data_ptr(),
                                  dout.data_ptr(), saved[2].data_ptr<float>(), dqkv.data_ptr());
    return {dqkv, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor causal_attention(const torch::Tensor& qkv, int64_t n_head, double dropout_p, uint64_t seed) {
  return CausalAttention::apply(qkv, n_head, dropout_p, static_cast<int64_t>(seed));
}

torch::Tensor dropout_mask(int64_t batch_heads, int64_t T, double dropout_p, uint64_t seed) {
  auto mask = torch::empty({batch_heads, T, T});
  auto* m = mask.data_ptr<float>();
  const float p = static_cast<float>(dropout_p), scale = 1.f / (1.f - p);
  for (int64_t bh = 0; bh < batch_heads; ++bh) {
    for (int64_t i = 0; i < T; ++i) {
      const uint32_t key = cpu::dropout_row_key(seed, bh, i);
      for (int64_t j = 0; j < T; ++j) {
        m[(bh * T + i) * T + j] = cpu::dropout_keep(key, j, p) ? scale : 0.f;
      }
    }
  }
  return mask;
}

torch::Tensor causal_attention_reference(const torch::Tensor& qkv, int64_t n_head, double dropout_p,
                                         const torch::Tensor& dropout_scale) {
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, hs = C / n_head;
  auto parts = qkv.split(C, 2);  // 3 × (B, T, C)
  auto heads = [&](const torch::Tensor& x) {  // (B, T, C) -> (B·nh, T, hs)
    return x.reshape({B, T, n_head, hs}).transpose(1, 2).reshape({B * n_head, T, hs});
  };
  const auto mask = torch::full({T, T}, -std::numeric_limits<float>::infinity(), qkv.options()).triu(1);
  auto att = torch::baddbmm(mask.unsqueeze(0), heads(parts[0]), heads(parts[1]).transpose(1, 2), /*beta=*/1.0,
                            /*alpha=*/1.0 / std::sqrt(static_cast<double>(hs)));  // (B·nh, T, T)
  att = torch::softmax(att, -1);
  if (dropout_scale.defined()) {
    att = att * dropout_scale.to(att.scalar_type());
  } else if (dropout_p > 0) {
    att = torch::dropout(att, dropout_p, /*train=*/true);
  }
  auto y = torch::bmm(att, heads(parts[2]));  // (B·nh, T, hs)
  return y.view({B, n_head, T, hs}).transpose(1, 2).reshape({B, T, C});
}

std::string sdpa_backend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double dropout_p) {
  switch (static_cast<at::SDPBackend>(at::_fused_sdp_choice(q, k, v, {}, dropout_p, /*is_causal=*/true))) {
    case at::SDPBackend::cudnn_attention:
      return "cuDNN";
    case at::SDPBackend::flash_attention:
      return "flash";
    case at::SDPBackend::efficient_attention:
      return "memory-efficient";
    case at::SDPBackend::math:
      return "math";
    default:
      return "other";
  }
}

}  // namespace sweep::kernels
