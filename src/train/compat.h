// The one place that knows the API differences between LibTorch 1.13 (Debian's) and 2.x
// (official builds, CUDA): autocast control and scaled-dot-product attention.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#define SWEEP_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace sweep::compat {

inline bool autocast_enabled(c10::DeviceType device) {
#if SWEEP_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

inline at::ScalarType autocast_dtype(c10::DeviceType device) {
#if SWEEP_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::kCPU ? at::autocast::get_autocast_cpu_dtype()
                             : at::autocast::get_autocast_gpu_dtype();
#endif
}

inline void set_autocast(c10::DeviceType device, bool enabled, at::ScalarType dtype) {
#if SWEEP_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::kCPU) {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_enabled(enabled);
    at::autocast::set_autocast_gpu_dtype(dtype);
  }
#endif
}

// Whether this LibTorch has the public fused attention (flash / memory-efficient on CUDA).
constexpr bool k_has_sdpa = SWEEP_TORCH_AT_LEAST(2, 0);

// Causal attention through at::scaled_dot_product_attention. q, k, v: (B, nh, T, hs).
inline at::Tensor sdpa_causal(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout_p) {
#if SWEEP_TORCH_AT_LEAST(2, 0)
  return at::scaled_dot_product_attention(q, k, v, {}, dropout_p, /*is_causal=*/true);
#else
  TORCH_CHECK(false, "scaled_dot_product_attention needs LibTorch >= 2.0");
  return {};
#endif
}

}  // namespace sweep::compat
