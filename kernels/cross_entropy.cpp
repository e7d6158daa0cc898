#include "kernels/cross_entropy.h"

#include <limits>

#include "build_options.h"
#include "kernels/common.h"
#ifdef SWEEP_WITH_CUDA
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/launch.h"
#endif

namespace sweep::kernels {

namespace {

struct CrossEntropyInplace : torch::autograd::Function<CrossEntropyInplace> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& targets, bool want_grad, double softcap) {
    RECORD_USER_SCOPE("sweep::cross_entropy_inplace");
    if (logits.is_cuda()) {
      return forward_cuda(ctx, logits, targets, want_grad, softcap);
    }
    const auto dtype = cpu_dtype(logits, "cross_entropy_inplace");
    TORCH_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
                "cross_entropy_inplace: logits (N, V) and targets (N) expected, got ", logits.sizes(), " and ",
                targets.sizes());
    TORCH_CHECK(targets.scalar_type() == torch::kLong, "cross_entropy_inplace: int64 targets expected");
    const int64_t rows = logits.size(0), vocab = logits.size(1);
    const auto t = targets.contiguous();
    TORCH_CHECK(rows == 0 || (t.min().item<int64_t>() >= 0 && t.max().item<int64_t>() < vocab),
                "cross_entropy_inplace: a target outside [0, ", vocab, ")");
    // The gradient goes over the logits' own memory (a contiguous copy only if they are not).
    auto g = logits.is_contiguous() ? logits.detach() : logits.detach().contiguous();
    const double loss = cpu::ops().cross_entropy_inplace(dtype, g.data_ptr(), t.data_ptr<int64_t>(), rows, vocab,
                                                         want_grad ? 1.0f / static_cast<float>(rows) : 0.0f,
                                                         static_cast<float>(softcap));
    if (want_grad) {
      ctx->saved_data["grad"] = g;
    }
    return torch::full({}, loss, logits.options().dtype(torch::kFloat));
  }

  // The CUDA twin: the row losses on the device, their mean returned as a tensor there.
  static torch::Tensor forward_cuda(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                                    const torch::Tensor& targets, bool want_grad, double softcap) {
    TORCH_CHECK(cuda_cross_entropy_takes(logits, targets), "cross_entropy_inplace: these logits ", logits.sizes(), " (",
                logits.scalar_type(), ") are not the CUDA kernel's: use cross_entropy_reference");
#ifdef SWEEP_WITH_CUDA
    const int64_t rows = logits.size(0), vocab = logits.size(1);
    auto g = logits.is_contiguous() ? logits.detach() : logits.detach().contiguous();
    const auto t = targets.contiguous();
    auto losses = torch::empty({rows}, logits.options().dtype(torch::kFloat));  // (N,)
    cuda::launch_on(g.device(), "cross_entropy_inplace", [&](void* stream) {
      return cuda::cross_entropy_inplace(g.scalar_type() == torch::kBFloat16, g.data_ptr(), t.data_ptr<int64_t>(), rows,
                                         vocab, want_grad ? 1.0f / static_cast<float>(rows) : 0.0f,
                                         static_cast<float>(softcap), losses.data_ptr<float>(), stream);
    });
    if (want_grad) {
      ctx->saved_data["grad"] = g;
    }
    return losses.mean();
#else
    (void)ctx, (void)want_grad, (void)softcap;
    return torch::Tensor();
#endif
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    RECORD_USER_SCOPE("sweep::cross_entropy_inplace_backward");
    auto g = ctx->saved_data["grad"].toTensor();
    ctx->saved_data.erase("grad");  // spent: a second backward fails instead of scaling twice
    if (g.is_cuda()) {
      g.mul_(grads[0].to(g.device()));  // d(total loss) / d(this mean loss), on the device: nothing read
    } else if (const double scale = grads[0].item<double>(); scale != 1.0) {  // e.g. 1 / accumulation
      g.mul_(scale);
    }
    return {g, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor cross_entropy_inplace(const torch::Tensor& logits, const torch::Tensor& targets, double softcap) {
  TORCH_CHECK(softcap >= 0, "cross_entropy_inplace: a soft-cap >= 0 expected (0: none), got ", softcap);
  // Decided here: autograd runs forward() with gradients off.
  return CrossEntropyInplace::apply(logits, targets, torch::GradMode::is_enabled() && logits.requires_grad(), softcap);
}

bool cuda_cross_entropy_takes(c10::DeviceType device, torch::ScalarType dtype, torch::IntArrayRef sizes,
                              torch::ScalarType target_dtype, torch::IntArrayRef target_sizes) {
#ifdef SWEEP_WITH_CUDA
  return device == c10::DeviceType::CUDA && (dtype == torch::kFloat || dtype == torch::kBFloat16) && sizes.size() == 2 &&
         sizes[0] > 0 && sizes[0] <= std::numeric_limits<int32_t>::max() && sizes[1] > 0 && target_dtype == torch::kLong &&
         target_sizes.size() == 1 && target_sizes[0] == sizes[0];
#else
  (void)device, (void)dtype, (void)sizes, (void)target_dtype, (void)target_sizes;
  return false;
#endif
}

bool cuda_cross_entropy_takes(const torch::Tensor& logits, const torch::Tensor& targets) {
  return logits.device() == targets.device() &&
         cuda_cross_entropy_takes(logits.device().type(), logits.scalar_type(), logits.sizes(), targets.scalar_type(),
                                  targets.sizes());
}

torch::Tensor soft_cap_reference(const torch::Tensor& logits, double softcap) {
  return softcap > 0 ? torch::tanh(logits.to(torch::kFloat) / softcap) * softcap : logits;
}

torch::Tensor cross_entropy_reference(const torch::Tensor& logits, const torch::Tensor& targets, double softcap) {
  return torch::nn::functional::cross_entropy(soft_cap_reference(logits, softcap).to(torch::kFloat), targets);
}

}  // namespace sweep::kernels
