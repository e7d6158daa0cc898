// The tensors of a PyTorch file — torch.save of a state dict, nanoGPT's checkpoint (its "model"
// entry and "model_args"), `sweep export`'s — read without executing anything and checked before
// any of it is used: the zip's CRCs, one element type per storage, each storage's bytes exactly
// its elements, and each tensor's view (offset, sizes, strides) inside its storage. Nothing is
// read outside a storage, ever. Standard library only: the sanitizer tests build it as is.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sweep {

struct RawTensor {
  std::string dtype;  // torch's name: float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool
  size_t element_size = 0;
  int64_t offset = 0;  // in elements
  std::vector<int64_t> sizes, strides;
  std::shared_ptr<const std::string> storage;  // the storage's bytes (shared by its views)
  int64_t numel() const;
};

struct TorchFile {
  std::vector<std::pair<std::string, RawTensor>> tensors;  // the state dict, in the file's order
  std::map<std::string, int64_t> model_args;               // a nanoGPT checkpoint's integer model_args
  size_t other_entries = 0;  // the state dict's entries that are no tensors (left out)
};

// The largest data.pkl read (a state dict's is kilobytes, a checkpoint's with optimizer state a few MB).
constexpr uint64_t k_max_pickle_bytes = 64 << 20;

// Error (bad input) naming the file, the entry or tensor, and what is wrong.
TorchFile read_torch_file(const std::string& path);

}  // namespace sweep
