#include "kernels/gelu.h"

#include "kernels/common.h"

namespace sweep::kernels {

namespace {

void check(const torch::Tensor& h, const torch::Tensor& bias) {
  TORCH_CHECK(bias.dim() == 1 && h.dim() >= 1 && h.size(-1) == bias.size(0), "bias_gelu: h (..., ", bias.size(0),
              ") expected for a bias of ", bias.size(0), ", got ", h.sizes());
  TORCH_CHECK(bias.scalar_type() == torch::kFloat && bias.is_contiguous(), "bias_gelu: a contiguous fp32 bias expected");
}

struct BiasGelu : torch::autograd::Function<BiasGelu> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h_in,
                               const torch::Tensor& bias) {
    RECORD_USER_SCOPE("sweep::bias_gelu");
    check(h_in, bias);
    const auto dtype = cpu_dtype(h_in, "bias_gelu");
    const auto h = h_in.contiguous();
    auto y = torch::empty_like(h);
    const int64_t cols = bias.size(0);
    cpu::ops().bias_gelu_forward(dtype, h.data_ptr(), bias.data_ptr<float>(), y.data_ptr(), h.numel() / cols, cols);
    ctx->save_for_backward({h, bias});
    return y;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    RECORD_USER_SCOPE("sweep::bias_gelu_backward");
    const auto saved = ctx->get_saved_variables();
    const auto& h = saved[0];
    const auto& bias = saved[1];
    const auto dy = grads[0].to(h.scalar_type()).contiguous();
    auto dh = torch::empty_like(h);
    auto dbias = torch::empty_like(bias);
    const int64_t cols = bias.size(0);
    cpu::ops().bias_gelu_backward(cpu_dtype(h, "bias_gelu"), h.data_ptr(), bias.data_ptr<float>(), dy.data_ptr(),
                                  dh.data_ptr(), dbias.data_ptr<float>(), h.numel() / cols, cols);
    return {dh, dbias};
  }
};

}  // namespace

torch::Tensor bias_gelu(const torch::Tensor& h, const torch::Tensor& bias) { return BiasGelu::apply(h, bias); }

torch::Tensor bias_gelu_reference(const torch::Tensor& h, const torch::Tensor& bias) {
  return torch::gelu(h + bias);
}

}  // namespace sweep::kernels
