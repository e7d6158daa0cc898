#include "train/precision.h"

#include <ATen/autocast_mode.h>

namespace sweep {

AutocastScope::AutocastScope(Precision precision, c10::DeviceType device) : m_device(device) {
  if (precision != Precision::bf16) {
    return;
  }
  m_active = true;
  m_prev_enabled = at::autocast::is_autocast_enabled(device);
  m_prev_dtype = static_cast<int>(at::autocast::get_autocast_dtype(device));
  at::autocast::set_autocast_enabled(device, true);
  at::autocast::set_autocast_dtype(device, at::kBFloat16);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!m_active) {
    return;
  }
  if (at::autocast::decrement_nesting() == 0) {
    at::autocast::clear_cache();
  }
  at::autocast::set_autocast_enabled(m_device, m_prev_enabled);
  at::autocast::set_autocast_dtype(m_device, static_cast<at::ScalarType>(m_prev_dtype));
}

void configure_matmul_precision(Precision precision) {
  // The one switch that means the same from LibTorch 1.12 to 2.x ("high": TF32 tensor cores for
  // fp32 matmuls on CUDA; allow_tf32 warns that it is deprecated from 2.9). No convolutions here:
  // cuDNN's own TF32 switch does not matter.
  at::globalContext().setFloat32MatmulPrecision(precision == Precision::tf32 ? "high" : "highest");
}

}  // namespace sweep
