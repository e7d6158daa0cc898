#include "torchfile/torch_file.h"

#include <algorithm>
#include <climits>
#include <set>

#include "torchfile/pickle.h"
#include "torchfile/zip.h"
#include "util/error.h"

namespace sweep {

namespace {

// A typed storage's class (as torch.save names it) → torch's dtype name and its element size.
bool storage_dtype(const std::string& type, std::string& dtype, size_t& size) {
  static const std::map<std::string, std::pair<std::string, size_t>> types{
      {"FloatStorage", {"float32", 4}}, {"DoubleStorage", {"float64", 8}}, {"HalfStorage", {"float16", 2}},
      {"BFloat16Storage", {"bfloat16", 2}}, {"LongStorage", {"int64", 8}}, {"IntStorage", {"int32", 4}},
      {"ShortStorage", {"int16", 2}}, {"CharStorage", {"int8", 1}}, {"ByteStorage", {"uint8", 1}},
      {"BoolStorage", {"bool", 1}}};
  const auto it = types.find(type);
  if (it == types.end()) {
    return false;
  }
  dtype = it->second.first;
  size = it->second.second;
  return true;
}

// The archive folder that holds data.pkl and the storages under data/ (one), from a
// little-endian machine.
std::string archive_folder(const ZipReader& zip, const std::string& path) {
  std::string prefix;
  for (const auto& e : zip.entries()) {
    const size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash) == "/data.pkl") {
      if (!prefix.empty()) {
        throw Error(path + ": two data.pkl in one archive — not a PyTorch file", Exit::bad_input);
      }
      prefix = e.name.substr(0, slash);
    }
  }
  if (prefix.empty()) {
    throw Error(path + ": a zip without data.pkl — not a PyTorch file (torch.save, sweep export)", Exit::bad_input);
  }
  if (const ZipEntry* order = zip.find(prefix + "/byteorder")) {
    if (zip.read(*order) != "little") {
      throw Error(path + ": written on a big-endian machine — load and save it again on a little-endian one",
                  Exit::bad_input);
    }
  }
  return prefix;
}

// A tensor's storage: read once, of one type, exactly its elements. `storages`: those read, by key
// (their type, their bytes).
using Storages = std::map<std::string, std::pair<std::string, std::shared_ptr<const std::string>>>;
std::shared_ptr<const std::string> storage_bytes(const ZipReader& zip, const std::string& prefix, const TensorRef& ref,
                                                 size_t element_size, const std::string& what, Storages& storages) {
  auto& [type, bytes] = storages[ref.storage.key];
  if (!bytes) {
    const ZipEntry* record = zip.find(prefix + "/data/" + ref.storage.key);
    if (record == nullptr) {
      throw Error(what + ": its storage '" + ref.storage.key + "' is not in the file — damaged", Exit::bad_input);
    }
    type = ref.storage.type;
    bytes = std::make_shared<const std::string>(zip.read(*record));
  }
  if (type != ref.storage.type) {
    throw Error(what + " reads storage '" + ref.storage.key + "' as " + ref.storage.type + ", another tensor as " +
                    type + " — damaged or crafted",
                Exit::bad_input);
  }
  if (ref.storage.numel < 0 || bytes->size() % element_size != 0 ||
      static_cast<uint64_t>(ref.storage.numel) != bytes->size() / element_size) {
    throw Error(what + ": its storage '" + ref.storage.key + "' holds " + std::to_string(bytes->size()) + " bytes, " +
                    ref.storage.type + " of " + std::to_string(ref.storage.numel) + " elements needs " +
                    std::to_string(element_size) + " bytes each — damaged or crafted",
                Exit::bad_input);
  }
  return bytes;
}

// A tensor's view: as many sizes as strides, none negative, and every element it reaches inside its
// storage.
void check_view(const TensorRef& ref, const std::string& what) {
  if (ref.sizes.size() != ref.strides.size()) {
    throw Error(what + " has " + std::to_string(ref.sizes.size()) + " sizes and " + std::to_string(ref.strides.size()) +
                    " strides — damaged or crafted",
                Exit::bad_input);
  }
  bool empty = false;
  __int128 span = 1;  // the product of the sizes, zeros counted as ones: what LibTorch multiplies
  for (size_t d = 0; d < ref.sizes.size(); ++d) {
    if (ref.sizes[d] < 0 || ref.strides[d] < 0) {
      throw Error(what + " has a negative size or stride — damaged or crafted", Exit::bad_input);
    }
    empty = empty || ref.sizes[d] == 0;
    span = std::min<__int128>(span * std::max<int64_t>(ref.sizes[d], 1), static_cast<__int128>(INT64_MAX) + 1);
  }
  if (ref.offset < 0) {
    throw Error(what + " has a negative storage offset — damaged or crafted", Exit::bad_input);
  }
  if (span > INT64_MAX || (!empty && span > ref.storage.numel)) {
    // No more elements than its storage has (a view that repeats elements, stride 0, could
    // otherwise ask for terabytes from a small file); an empty one no larger than LibTorch counts.
    throw Error(what + " has more elements than its storage '" + ref.storage.key + "' (" +
                    std::to_string(ref.storage.numel) + ") — damaged or crafted",
                Exit::bad_input);
  }
  if (!empty) {
    // the last element it reaches, in 128 bits (every size is below the storage's elements now)
    __int128 last = ref.offset;
    for (size_t d = 0; d < ref.sizes.size() && last < ref.storage.numel; ++d) {
      last += static_cast<__int128>(ref.sizes[d] - 1) * ref.strides[d];
    }
    if (last >= ref.storage.numel) {
      throw Error(what + " reaches element " + std::to_string(static_cast<long long>(std::min<__int128>(last, INT64_MAX))) +
                      " of its storage '" + ref.storage.key + "', which has " + std::to_string(ref.storage.numel) +
                      " — damaged or crafted",
                  Exit::bad_input);
    }
  }
}

}  // namespace

int64_t RawTensor::numel() const {  // read_torch_file has bounded the product
  int64_t n = 1;
  for (const int64_t s : sizes) {
    if (s == 0) {
      return 0;
    }
    n *= s;
  }
  return n;
}

TorchFile read_torch_file(const std::string& path) {
  const ZipReader zip(path);
  const std::string prefix = archive_folder(zip, path);
  const ZipEntry& pickle = *zip.find(prefix + "/data.pkl");
  if (pickle.size > k_max_pickle_bytes) {  // a state dict's is kilobytes; its values cost ~300 bytes a byte
    throw Error(path + ": data.pkl has " + std::to_string(pickle.size) + " bytes, more than any state dict's (" +
                    std::to_string(k_max_pickle_bytes) + ") — not a state dict",
                Exit::bad_input);
  }
  const PyRef top = read_pickle(zip.read(pickle), path + ": data.pkl");
  PyRef dict = top;
  TorchFile out;
  if (const PyRef model = dict_get(top, "model"); model && model->kind == PyValue::Kind::dict) {
    dict = model;  // nanoGPT's checkpoint: the state dict, its model_args beside it
    if (const PyRef args = dict_get(top, "model_args")) {
      for (const auto& [k, v] : args->entries) {
        if (k->kind == PyValue::Kind::string && v->kind == PyValue::Kind::integer) {
          out.model_args[k->text] = v->integer;
        }
      }
    }
  }
  if (!dict || dict->kind != PyValue::Kind::dict) {
    throw Error(path + " is not a PyTorch state dict (a dict of tensors, as `sweep export` or torch.save writes)",
                Exit::bad_input);
  }
  Storages storages;
  std::set<std::string> names;
  for (const auto& [key, value] : dict->entries) {
    if (key->kind == PyValue::Kind::string && value->kind == PyValue::Kind::opaque && value->text.rfind("torch", 0) == 0) {
      throw Error(path + ": '" + key->text + "' is made by " + value->text + ", which sweep does not read (a plain "
                  "tensor's _rebuild_tensor_v2 only) — save the state dict's tensors as plain tensors",
                  Exit::bad_input);
    }
    if (key->kind != PyValue::Kind::string && value->kind == PyValue::Kind::tensor) {
      // a tensor no name can reach: neither loaded nor reported as extra, it would pass silently
      throw Error(path + ": a tensor is stored under a key that is no name (" +
                      (key->kind == PyValue::Kind::integer ? "the integer " + std::to_string(key->integer) : "not a string") +
                      ") — damaged or crafted; a state dict names every tensor",
                  Exit::bad_input);
    }
    if (key->kind != PyValue::Kind::string || value->kind != PyValue::Kind::tensor) {
      ++out.other_entries;  // nanoGPT's checkpoint also holds optimizer state and arguments
      continue;
    }
    std::string name = key->text;
    if (name.rfind("_orig_mod.", 0) == 0) {  // torch.compile's module
      name = name.substr(10);
    }
    if (!names.insert(name).second) {  // a name twice (or x and _orig_mod.x): which one is meant?
      throw Error(path + ": tensor '" + name + "' is in the state dict twice — damaged or crafted", Exit::bad_input);
    }
    const TensorRef& ref = value->tensor;
    const std::string what = path + ": tensor '" + name + "'";
    RawTensor t;
    if (!storage_dtype(ref.storage.type, t.dtype, t.element_size)) {
      throw Error(what + " has a storage of type '" + ref.storage.type + "', which sweep does not read (float, half, "
                  "bfloat16, integer or bool storages)",
                  Exit::bad_input);
    }
    const std::shared_ptr<const std::string> bytes = storage_bytes(zip, prefix, ref, t.element_size, what, storages);
    check_view(ref, what);
    t.offset = ref.offset;
    t.sizes = ref.sizes;
    t.strides = ref.strides;
    t.storage = bytes;
    out.tensors.emplace_back(std::move(name), std::move(t));
  }
  if (out.tensors.empty()) {
    throw Error(path + " holds no tensors — not a state dict", Exit::bad_input);
  }
  return out;
}

}  // namespace sweep
