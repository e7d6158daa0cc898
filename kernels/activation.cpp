#include "kernels/activation.h"

#include "build_options.h"
#include "kernels/common.h"
#ifdef SWEEP_WITH_CUDA
#include "kernels/cuda/activation.h"
#include "kernels/cuda/launch.h"
#endif

namespace sweep::kernels {

namespace {

void check(const torch::Tensor& h, const torch::Tensor& bias) {
  TORCH_CHECK(bias.dim() == 1 && h.dim() >= 1 && h.size(-1) == bias.size(0), "bias_activation: h (..., ",
              bias.size(0), ") expected for a bias of ", bias.size(0), ", got ", h.sizes());
  TORCH_CHECK(bias.scalar_type() == torch::kFloat && bias.is_contiguous(),
              "bias_activation: a contiguous fp32 bias expected");
}

struct BiasActivation : torch::autograd::Function<BiasActivation> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h_in,
                               const torch::Tensor& bias, int64_t act) {
    RECORD_USER_SCOPE("sweep::bias_activation");
    check(h_in, bias);
    const auto h = h_in.contiguous();
    auto y = torch::empty_like(h);
    const int64_t cols = bias.size(0);
    if (h.is_cuda()) {
      TORCH_CHECK(cuda_bias_activation_takes(h, bias), "bias_activation: not the CUDA kernel's input: use the reference");
#ifdef SWEEP_WITH_CUDA
      cuda::launch_on(h.device(), "bias_activation", [&](void* stream) {
        return cuda::bias_activation_forward(static_cast<Activation>(act) == Activation::relu2,
                                             h.scalar_type() == torch::kBFloat16, h.data_ptr(), bias.data_ptr<float>(),
                                             y.data_ptr(), h.numel() / cols, cols, stream);
      });
#endif
    } else {
      cpu::ops().bias_act_forward(static_cast<Activation>(act), cpu_dtype(h_in, "bias_activation"), h.data_ptr(),
                                  bias.data_ptr<float>(), y.data_ptr(), h.numel() / cols, cols);
    }
    ctx->save_for_backward({h, bias});
    ctx->saved_data["act"] = act;
    return y;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    RECORD_USER_SCOPE("sweep::bias_activation_backward");
    const auto saved = ctx->get_saved_variables();
    const auto& h = saved[0];
    const auto& bias = saved[1];
    const auto dy = grads[0].to(h.scalar_type()).contiguous();
    auto dh = torch::empty_like(h);
    const int64_t cols = bias.size(0);
    if (h.is_cuda()) {
#ifdef SWEEP_WITH_CUDA
      cuda::launch_on(h.device(), "bias_activation backward", [&](void* stream) {
        return cuda::bias_activation_backward(static_cast<Activation>(ctx->saved_data["act"].toInt()) == Activation::relu2,
                                              h.scalar_type() == torch::kBFloat16, h.data_ptr(), bias.data_ptr<float>(),
                                              dy.data_ptr(), dh.data_ptr(), h.numel() / cols, cols, stream);
      });
#endif
      return {dh, dh.reshape({-1, cols}).sum(0, /*keepdim=*/false, torch::kFloat), torch::Tensor()};
    }
    auto dbias = torch::empty_like(bias);
    cpu::ops().bias_act_backward(static_cast<Activation>(ctx->saved_data["act"].toInt()), cpu_dtype(h, "bias_activation"),
                                 h.data_ptr(), bias.data_ptr<float>(), dy.data_ptr(), dh.data_ptr(),
                                 dbias.data_ptr<float>(), h.numel() / cols, cols);
    return {dh, dbias, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor bias_activation(const torch::Tensor& h, const torch::Tensor& bias, Activation act) {
  return BiasActivation::apply(h, bias, static_cast<int64_t>(act));
}

bool cuda_bias_activation_takes(const torch::Tensor& h, const torch::Tensor& bias) {
#ifdef SWEEP_WITH_CUDA
  return h.is_cuda() && (h.scalar_type() == torch::kFloat || h.scalar_type() == torch::kBFloat16) && h.dim() >= 1 &&
         bias.device() == h.device() && bias.dim() == 1 && bias.scalar_type() == torch::kFloat && bias.is_contiguous() &&
         h.size(-1) == bias.size(0) && bias.size(0) > 0;
#else
  (void)h, (void)bias;
  return false;
#endif
}

torch::Tensor activation_reference(const torch::Tensor& x, Activation act) {
  return act == Activation::relu2 ? torch::relu(x).square() : torch::gelu(x);
}

torch::Tensor bias_activation_reference(const torch::Tensor& h, const torch::Tensor& bias, Activation act) {
  return activation_reference(h + bias, act);
}

}  // namespace sweep::kernels
