// A reader of the Python pickles PyTorch writes (torch.save's and LibTorch's data.pkl, protocol
// 2; protocol 4's opcodes too) that executes nothing: it builds the values — dicts, lists,
// tuples, strings, numbers, booleans, None — and turns the few calls PyTorch's files make
// (OrderedDict, _rebuild_tensor_v2, _rebuild_parameter, restore_type_tag) into plain values,
// tensors as references to storages. Any other global is an opaque value. Everything it reads is
// bounded by the bytes given. Standard library only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sweep {

// A storage a pickle refers to by persistent id ('storage', torch.FloatStorage, key, location, numel).
struct StorageRef {
  std::string type;  // "FloatStorage", "BFloat16Storage", ...
  std::string key;   // its record: <archive>/data/<key>
  int64_t numel = 0;
};

// _rebuild_tensor_v2(storage, offset, size, stride, ...): a view of a storage (not yet checked).
struct TensorRef {
  StorageRef storage;
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
};

struct PyValue {
  enum class Kind { none, boolean, integer, real, string, tuple, list, dict, global, storage, tensor, opaque };
  Kind kind = Kind::none;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::string text;  // a string (or bytes), a global's "module name", an opaque value's origin
  std::vector<std::shared_ptr<PyValue>> items;                                      // tuple, list
  std::vector<std::pair<std::shared_ptr<PyValue>, std::shared_ptr<PyValue>>> entries;  // dict, in order
  StorageRef storage;
  TensorRef tensor;

  PyValue() = default;
  PyValue(const PyValue&) = delete;
  PyValue& operator=(const PyValue&) = delete;
  // Frees nested values one by one, not recursively: a pickle may nest them a million deep.
  ~PyValue();
};
using PyRef = std::shared_ptr<PyValue>;

// The value `bytes` pickles. Errors: Error (bad input) starting with `where`.
PyRef read_pickle(const std::string& bytes, const std::string& where);

// A dict's value for a string key; nullptr when it is no dict or has no such key.
PyRef dict_get(const PyRef& dict, const std::string& key);

}  // namespace sweep
