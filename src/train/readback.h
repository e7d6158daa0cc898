// A few values of a step on their way from the device to the host: copied into page-locked
// memory without blocking when they are taken, read later — waiting for that copy alone (an event
// recorded after it), not for whatever the device was given since. On the CPU they are there at once.
// The trainer reads a step's loss and gradient norm this way, after the next step is issued.
#pragma once

#include <c10/core/Event.h>
#include <torch/torch.h>

#include <optional>
#include <vector>

namespace sweep {

class DeviceReadback {
 public:
  DeviceReadback() = default;
  // `values`: a 1-D tensor on any device, read as double.
  explicit DeviceReadback(const torch::Tensor& values);
  bool empty() const { return !m_host.defined(); }
  // The values (waits for their copy on a GPU).
  std::vector<double> get() const;

 private:
  torch::Tensor m_host;             // (n,) double, pinned on a GPU
  std::optional<c10::Event> m_copied;  // recorded after the copy (GPU only)
};

}  // namespace sweep
