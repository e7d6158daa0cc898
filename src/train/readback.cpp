#include "train/readback.h"

#include <c10/core/impl/VirtualGuardImpl.h>

namespace sweep {

DeviceReadback::DeviceReadback(const torch::Tensor& values) {
  const torch::Tensor v = values.detach().to(torch::kDouble).reshape({-1});
  if (v.device().is_cpu()) {
    m_host = v.clone();
    return;
  }
  m_host = torch::empty({v.numel()}, torch::TensorOptions().dtype(torch::kDouble).pinned_memory(true));
  m_host.copy_(v, /*non_blocking=*/true);
  m_copied.emplace(v.device().type());
  m_copied->record(c10::impl::VirtualGuardImpl(v.device().type()).getStream(v.device()));
}

std::vector<double> DeviceReadback::get() const {
  if (m_copied) {
    m_copied->synchronize();
  }
  const double* p = m_host.data_ptr<double>();
  return {p, p + m_host.numel()};
}

}  // namespace sweep
