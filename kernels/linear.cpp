#include "kernels/linear.h"

#include <dnnl.h>

#include "kernels/common.h"

namespace sweep::kernels {

namespace {

// Row-major C (m × n) = op(A) · op(B) (+ C when accumulate).
void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
           float* c, int64_t ldc, bool accumulate = false) {
  const auto status = dnnl_sgemm(ta, tb, m, n, k, 1.f, a, lda, b, ldb, accumulate ? 1.f : 0.f, c, ldc);
  TORCH_CHECK(status == dnnl_success, "oneDNN sgemm failed with status ", static_cast<int>(status));
}

void check(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat && weight.scalar_type() == torch::kFloat &&
                  bias.scalar_type() == torch::kFloat,
              "linear: fp32 tensors expected");
  TORCH_CHECK(x.device().is_cpu() && weight.device().is_cpu(), "linear: CPU tensors expected");
  TORCH_CHECK(bias.numel() == 0 || (bias.dim() == 1 && bias.size(0) == weight.size(0)), "linear: a bias of ",
              weight.size(0), " expected, got ", bias.sizes());
  TORCH_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: x (..., ", weight.size(1),
              ") expected for a weight of ", weight.sizes(), ", got ", x.sizes());
}

struct Linear : torch::autograd::Function<Linear> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                               const torch::Tensor& weight_in, const torch::Tensor& bias) {
    RECORD_USER_SCOPE("sweep::linear");
    const bool has_bias = bias.numel() > 0;
    check(x_in, weight_in, bias);
    const auto x = x_in.contiguous(), weight = weight_in.contiguous();
    const int64_t K = weight.size(1), N = weight.size(0), M = x.numel() / K;
    auto out_sizes = x.sizes().vec();
    out_sizes.back() = N;
    torch::Tensor y;
    if (has_bias) {  // start from the bias in every row, then accumulate x Wᵀ onto it
      // a copy: with M = 1 the expanded bias is already contiguous, and contiguous() would hand
      // back the bias itself, which the sgemm would then accumulate into
      y = torch::empty({M, N}, x.options()).copy_(bias.expand({M, N}));
    } else {
      y = torch::empty({M, N}, x.options());
    }
    sgemm('N', 'T', M, N, K, x.data_ptr<float>(), K, weight.data_ptr<float>(), K, y.data_ptr<float>(), N, has_bias);
    ctx->save_for_backward({x, weight});
    ctx->saved_data["bias"] = has_bias;
    return y.view(out_sizes);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    RECORD_USER_SCOPE("sweep::linear_backward");
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& weight = saved[1];
    const int64_t K = weight.size(1), N = weight.size(0), M = x.numel() / K;
    const auto dy = grads[0].contiguous();
    auto dx = torch::empty_like(x);
    auto dw = torch::empty_like(weight);
    sgemm('N', 'N', M, K, N, dy.data_ptr<float>(), N, weight.data_ptr<float>(), K, dx.data_ptr<float>(), K);  // dY W
    sgemm('T', 'N', N, K, M, dy.data_ptr<float>(), N, x.data_ptr<float>(), K, dw.data_ptr<float>(), K);  // dYᵀ X
    torch::Tensor db;
    if (ctx->saved_data["bias"].toBool()) {
      db = dy.view({M, N}).sum(0);
    }
    return {dx, dw, db};
  }
};

}  // namespace

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  // LibTorch 1.13's autograd Functions take no undefined tensor: no bias is an empty one.
  return Linear::apply(x, weight, bias.defined() ? bias : torch::empty({0}, weight.options()));
}

torch::Tensor linear_reference(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return torch::nn::functional::linear(x, weight, bias);
}

}  // namespace sweep::kernels
