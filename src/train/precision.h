// Mixed precision: an RAII autocast scope (bf16 with fp32 master weights) and TF32 switches.
// LibTorch's C++ autocast does not manage its own nesting or weight cache: without
// clear_cache() at the outermost exit, cached bf16 copies of weights go stale after the
// optimizer updates them in place. This guard does both.
#pragma once

#include <c10/core/DeviceType.h>

#include "config/choices.h"

namespace sweep {

class AutocastScope {
 public:
  // Only bf16 turns autocast on.
  AutocastScope(Precision precision, c10::DeviceType device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool m_active = false;
  c10::DeviceType m_device;
  bool m_prev_enabled = false;
  int m_prev_dtype = 0;
};

// Turns TF32 matmuls on (precision tf32) or off (anything else). CUDA only.
void configure_matmul_precision(Precision precision);

}  // namespace sweep
