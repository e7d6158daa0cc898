// Writes PyTorch files for the loaders' tests, byte by byte as torch.save lays them out — a zip of
// stored entries (<archive>/data.pkl, <archive>/data/<key>, <archive>/version) and a protocol-2
// pickle of an OrderedDict of _rebuild_tensor_v2 calls — so that each crafted defect is one field
// changed in code, not a binary blob in the repository. No torch: the sanitizer build uses it.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "torchfile/zip.h"

namespace sweep::test {

struct ZipItem {
  std::string name, bytes;
};

inline void put16(std::string& s, uint32_t v) {
  s.push_back(static_cast<char>(v & 0xFF));
  s.push_back(static_cast<char>(v >> 8 & 0xFF));
}
inline void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xFFFF);
  put16(s, v >> 16);
}

// A zip of stored entries; `crc_of` lets a test write a wrong CRC on purpose.
inline std::string zip_of(const std::vector<ZipItem>& items, const std::string& bad_crc_entry = "") {
  std::string out, dir;
  for (const auto& it : items) {
    const uint32_t crc = crc32(it.bytes.data(), it.bytes.size()) ^ (it.name == bad_crc_entry ? 1u : 0u);
    const uint32_t offset = static_cast<uint32_t>(out.size());
    put32(out, 0x04034b50);
    put16(out, 20), put16(out, 0), put16(out, 0), put16(out, 0), put16(out, 0);
    put32(out, crc), put32(out, static_cast<uint32_t>(it.bytes.size())), put32(out, static_cast<uint32_t>(it.bytes.size()));
    put16(out, static_cast<uint32_t>(it.name.size())), put16(out, 0);
    out += it.name + it.bytes;
    put32(dir, 0x02014b50);
    put16(dir, 20), put16(dir, 20), put16(dir, 0), put16(dir, 0), put16(dir, 0), put16(dir, 0);
    put32(dir, crc), put32(dir, static_cast<uint32_t>(it.bytes.size())), put32(dir, static_cast<uint32_t>(it.bytes.size()));
    put16(dir, static_cast<uint32_t>(it.name.size())), put16(dir, 0), put16(dir, 0), put16(dir, 0), put16(dir, 0);
    put32(dir, 0), put32(dir, offset);
    dir += it.name;
  }
  const uint32_t dir_offset = static_cast<uint32_t>(out.size());
  out += dir;
  put32(out, 0x06054b50);
  put16(out, 0), put16(out, 0), put16(out, static_cast<uint32_t>(items.size())), put16(out, static_cast<uint32_t>(items.size()));
  put32(out, static_cast<uint32_t>(dir.size())), put32(out, dir_offset);
  put16(out, 0);
  return out;
}

// One tensor of a state dict as its pickle describes it.
struct PickledTensor {
  std::string name;
  std::string storage_type = "FloatStorage";
  std::string key;
  int64_t numel = 0;  // the storage's, as the persistent id says
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
};

class PickleWriter {
 public:
  PickleWriter& op(char c) { m_out.push_back(c); return *this; }
  PickleWriter& str(const std::string& s) {
    op('X');
    put32(m_out, static_cast<uint32_t>(s.size()));
    m_out += s;
    return *this;
  }
  PickleWriter& integer(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      put32(m_out, static_cast<uint32_t>(static_cast<int32_t>(v)));
    } else {
      op('\x8a');
      m_out.push_back(8);
      for (int i = 0; i < 8; ++i) {
        m_out.push_back(static_cast<char>(static_cast<uint64_t>(v) >> (8 * i) & 0xFF));
      }
    }
    return *this;
  }
  PickleWriter& global(const std::string& module, const std::string& name) {
    op('c');
    m_out += module + "\n" + name + "\n";
    return *this;
  }
  PickleWriter& tuple_of(const std::vector<int64_t>& v) {
    op('(');
    for (const int64_t x : v) {
      integer(x);
    }
    return op('t');
  }
  PickleWriter& tensor(const PickledTensor& t) {
    global("torch._utils", "_rebuild_tensor_v2").op('(');
    op('(').str("storage").global("torch", t.storage_type).str(t.key).str("cpu").integer(t.numel).op('t').op('Q');
    integer(t.offset).tuple_of(t.sizes).tuple_of(t.strides).op('\x89');
    global("collections", "OrderedDict").op(')').op('R');
    return op('t').op('R');
  }
  std::string bytes() const { return m_out; }
  std::string m_out = std::string("\x80\x02", 2);
};

// data.pkl of an OrderedDict of `tensors`, as torch.save writes a state dict.
inline std::string state_dict_pickle(const std::vector<PickledTensor>& tensors) {
  PickleWriter w;
  w.global("collections", "OrderedDict").op(')').op('R').op('(');
  for (const auto& t : tensors) {
    w.str(t.name).tensor(t);
  }
  return w.op('u').op('.').bytes();
}

// `floats` as a storage's bytes (float32, little-endian).
inline std::string float_bytes(const std::vector<float>& floats) {
  std::string out(floats.size() * 4, '\0');
  std::memcpy(out.data(), floats.data(), out.size());
  return out;
}

// A whole file: the pickle, its storages (key → bytes), the version record.
inline std::string torch_file_bytes(const std::string& pickle, const std::vector<std::pair<std::string, std::string>>& storages,
                                    const std::string& bad_crc_entry = "") {
  std::vector<ZipItem> items{{"archive/data.pkl", pickle}};
  for (const auto& [key, bytes] : storages) {
    items.push_back({"archive/data/" + key, bytes});
  }
  items.push_back({"archive/version", "3\n"});
  return zip_of(items, bad_crc_entry);
}

// A file under the temp folder, removed when the object goes.
struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string& bytes) {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("sweep-torchfile-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".pt");
    std::ofstream(path, std::ios::binary) << bytes;
  }
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
  std::string str() const { return path.string(); }
};

}  // namespace sweep::test
