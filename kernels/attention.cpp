#include "kernels/attention.h"

#include <cmath>
#include <limits>

#include "kernels/common.h"

namespace sweep::kernels {

namespace {

cpu::AttentionShape shape_of(const torch::Tensor& qkv, int64_t n_head) {
  TORCH_CHECK(qkv.dim() == 3 && qkv.size(2) % (3 * n_head) == 0, "causal_attention: qkv (B, T, 3C) with C divisible by ",
              n_head, " heads expected, got ", qkv.sizes());
  return {qkv.size(0), qkv.size(1), n_head, qkv.size(2) / (3 * n_head)};
}

struct CausalAttention : torch::autograd::Function<CausalAttention> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv_in, int64_t n_head) {
    RECORD_USER_SCOPE("sweep::causal_attention");
    const auto dtype = cpu_dtype(qkv_in, "causal_attention");
    const auto qkv = qkv_in.contiguous();
    const auto s = shape_of(qkv, n_head);
    auto out = torch::empty({s.batch, s.seq, s.heads * s.head_size}, qkv.options());
    auto lse = torch::empty({s.batch, s.heads, s.seq}, qkv.options().dtype(torch::kFloat));
    cpu::ops().attention_forward(s, dtype, qkv.data_ptr(), out.data_ptr(), lse.data_ptr<float>());
    ctx->save_for_backward({qkv, out, lse});
    ctx->saved_data["n_head"] = n_head;
    return out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    RECORD_USER_SCOPE("sweep::causal_attention_backward");
    const auto saved = ctx->get_saved_variables();
    const auto& qkv = saved[0];
    const auto s = shape_of(qkv, ctx->saved_data["n_head"].toInt());
    const auto dout = grads[0].to(qkv.scalar_type()).contiguous();
    auto dqkv = torch::empty_like(qkv);
    cpu::ops().attention_backward(s, cpu_dtype(qkv, "causal_attention"), qkv.data_ptr(), saved[1].data_ptr(),
                                  dout.data_ptr(), saved[2].data_ptr<float>(), dqkv.data_ptr());
    return {dqkv, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor causal_attention(const torch::Tensor& qkv, int64_t n_head) {
  return CausalAttention::apply(qkv, n_head);
}

torch::Tensor causal_attention_reference(const torch::Tensor& qkv, int64_t n_head, double dropout_p) {
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, hs = C / n_head;
  auto parts = qkv.split(C, 2);  // 3 × (B, T, C)
  auto heads = [&](const torch::Tensor& x) {  // (B, T, C) -> (B·nh, T, hs)
    return x.reshape({B, T, n_head, hs}).transpose(1, 2).reshape({B * n_head, T, hs});
  };
  const auto mask = torch::full({T, T}, -std::numeric_limits<float>::infinity(), qkv.options()).triu(1);
  auto att = torch::baddbmm(mask.unsqueeze(0), heads(parts[0]), heads(parts[1]).transpose(1, 2), /*beta=*/1.0,
                            /*alpha=*/1.0 / std::sqrt(static_cast<double>(hs)));  // (B·nh, T, T)
  att = torch::softmax(att, -1);
  if (dropout_p > 0) {
    att = torch::dropout(att, dropout_p, /*train=*/true);
  }
  auto y = torch::bmm(att, heads(parts[2]));  // (B·nh, T, hs)
  return y.view({B, n_head, T, hs}).transpose(1, 2).reshape({B, T, C});
}

}  // namespace sweep::kernels
