#include "torchfile/zip.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace sweep {

namespace {

constexpr uint32_t k_end_sig = 0x06054b50, k_end64_sig = 0x06064b50, k_locator64_sig = 0x07064b50;
constexpr uint32_t k_central_sig = 0x02014b50, k_local_sig = 0x04034b50;

uint16_t u16(const std::string& b, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(b[at]) | static_cast<uint8_t>(b[at + 1]) << 8);
}
uint32_t u32(const std::string& b, size_t at) { return u16(b, at) | static_cast<uint32_t>(u16(b, at + 2)) << 16; }
uint64_t u64(const std::string& b, size_t at) { return u32(b, at) | static_cast<uint64_t>(u32(b, at + 4)) << 32; }

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) {
        c = (c & 1) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      }
      t[i] = c;
    }
    return t;
  }();
  return table;
}

}  // namespace

uint32_t crc32(const void* data, size_t size, uint32_t crc) {
  const auto& table = crc_table();
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) {
    crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  }
  return ~crc;
}

ZipReader::ZipReader(const std::string& path) : m_path(path) {
  m_fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st = {};
  if (m_fd.fd < 0 || ::fstat(m_fd.fd, &st) != 0) {
    throw Error(path + ": cannot read it: " + std::strerror(errno), Exit::bad_input);
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error(path + ": not a regular file — give a state dict file", Exit::bad_input);
  }
  m_size = static_cast<uint64_t>(st.st_size);
  const auto [dir, count] = central_directory();
  size_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    ZipEntry e = read_entry(dir, at, i);
    if (!m_by_name.emplace(e.name, m_entries.size()).second) {
      throw Error(path + ": two entries named '" + e.name + "' — damaged or crafted", Exit::bad_input);
    }
    m_entries.push_back(std::move(e));
  }
  check_no_overlap();
}

std::pair<std::string, uint64_t> ZipReader::central_directory() const {
  // The end-of-central-directory record: in the last 22 + 65535 bytes (its comment's room).
  const uint64_t tail_size = std::min<uint64_t>(m_size, 22 + 65535);
  const std::string tail = pread_exact(m_size - tail_size, tail_size, "its end");
  size_t end = std::string::npos;
  for (size_t i = tail.size() >= 22 ? tail.size() - 22 + 1 : 0; i-- > 0;) {
    if (u32(tail, i) == k_end_sig) {
      end = i;
      break;
    }
  }
  if (end == std::string::npos) {
    throw Error(m_path + ": not a zip archive (no end of central directory) — PyTorch's files are; it is damaged or "
                "another format",
                Exit::bad_input);
  }
  uint64_t count = u16(tail, end + 10), dir_size = u32(tail, end + 12), dir_offset = u32(tail, end + 16);
  const uint64_t end_offset = m_size - tail_size + end;
  if (count == 0xFFFF || dir_size == 0xFFFFFFFF || dir_offset == 0xFFFFFFFF) {  // ZIP64: its locator just before
    if (end_offset < 20) {
      throw Error(m_path + ": a ZIP64 archive without its locator — damaged", Exit::bad_input);
    }
    const std::string locator = pread_exact(end_offset - 20, 20, "its ZIP64 locator");
    if (u32(locator, 0) != k_locator64_sig) {
      throw Error(m_path + ": a ZIP64 archive without its locator — damaged", Exit::bad_input);
    }
    const std::string end64 = pread_exact(u64(locator, 8), 56, "its ZIP64 end record");
    if (u32(end64, 0) != k_end64_sig) {
      throw Error(m_path + ": its ZIP64 end record is not where its locator says — damaged", Exit::bad_input);
    }
    count = u64(end64, 32);
    dir_size = u64(end64, 40);
    dir_offset = u64(end64, 48);
  }
  if (dir_offset > m_size || dir_size > m_size - dir_offset || count > dir_size / 46) {
    throw Error(m_path + ": its central directory lies outside the file — damaged or cut short", Exit::bad_input);
  }
  return {pread_exact(dir_offset, dir_size, "its central directory"), count};
}

ZipEntry ZipReader::read_entry(const std::string& dir, size_t& at, uint64_t i) const {
  if (at + 46 > dir.size() || u32(dir, at) != k_central_sig) {
    throw Error(m_path + ": its central directory is damaged (entry " + std::to_string(i) + ")", Exit::bad_input);
  }
  const uint16_t method = u16(dir, at + 10), name_len = u16(dir, at + 28), extra_len = u16(dir, at + 30),
                 comment_len = u16(dir, at + 32);
  const uint16_t flags = u16(dir, at + 8);
  if (at + 46 + name_len + extra_len + comment_len > dir.size()) {
    throw Error(m_path + ": its central directory is damaged (entry " + std::to_string(i) + ")", Exit::bad_input);
  }
  ZipEntry e;
  e.name = dir.substr(at + 46, name_len);
  e.crc = u32(dir, at + 16);
  uint64_t compressed = u32(dir, at + 20), size = u32(dir, at + 24), local = u32(dir, at + 42);
  // ZIP64 sizes and offset, in the order of the fields that are full
  for (size_t x = at + 46 + name_len; x + 4 <= at + 46 + name_len + extra_len;) {
    const uint16_t id = u16(dir, x), len = u16(dir, x + 2);
    if (x + 4 + len > at + 46 + name_len + extra_len) {
      break;
    }
    if (id == 1) {
      size_t f = x + 4;
      auto next = [&](uint64_t& field) {
        if (field == 0xFFFFFFFF && f + 8 <= x + 4 + len) {
          field = u64(dir, f);
          f += 8;
        }
      };
      next(size);
      next(compressed);
      next(local);
    }
    x += 4 + static_cast<size_t>(len);
  }
  if (method != 0 || compressed != size || (flags & 1) != 0) {
    throw Error(m_path + ": entry '" + e.name + "' is compressed or encrypted — PyTorch stores its entries as they are; "
                "not a PyTorch file",
                Exit::bad_input);
  }
  if (local > m_size || m_size - local < 30) {
    throw Error(m_path + ": entry '" + e.name + "' lies outside the file — damaged or cut short", Exit::bad_input);
  }
  const std::string header = pread_exact(local, 30, "the header of '" + e.name + "'");
  if (u32(header, 0) != k_local_sig) {
    throw Error(m_path + ": entry '" + e.name + "' has no header where the directory says — damaged", Exit::bad_input);
  }
  e.header_offset = local;
  e.data_offset = local + 30 + u16(header, 26) + u16(header, 28);
  e.size = size;
  if (e.data_offset > m_size || e.size > m_size - e.data_offset) {
    throw Error(m_path + ": entry '" + e.name + "' (" + std::to_string(e.size) + " bytes) runs past the end of the " +
                    "file — cut short",
                Exit::bad_input);
  }
  at += 46 + static_cast<size_t>(name_len) + extra_len + comment_len;
  return e;
}

void ZipReader::check_no_overlap() const {
  std::vector<const ZipEntry*> by_offset;
  for (const auto& e : m_entries) {
    by_offset.push_back(&e);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const ZipEntry* a, const ZipEntry* b) { return a->header_offset < b->header_offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i - 1]->data_offset + by_offset[i - 1]->size > by_offset[i]->header_offset) {
      throw Error(m_path + ": entries '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name +
                      "' overlap — damaged or crafted",
                  Exit::bad_input);
    }
  }
}

ZipReader::Fd::~Fd() {
  if (fd >= 0) {
    ::close(fd);
  }
}

const ZipEntry* ZipReader::find(const std::string& name) const {
  const auto it = m_by_name.find(name);
  return it == m_by_name.end() ? nullptr : &m_entries[it->second];
}

std::string ZipReader::read(const ZipEntry& entry) const {
  std::string bytes = pread_exact(entry.data_offset, entry.size, "'" + entry.name + "'");
  if (crc32(bytes.data(), bytes.size()) != entry.crc) {
    throw Error(m_path + ": entry '" + entry.name + "' does not match its CRC-32 — its bytes changed since it was "
                "written: the file is damaged",
                Exit::bad_input);
  }
  return bytes;
}

std::string ZipReader::pread_exact(uint64_t offset, uint64_t size, const std::string& what) const {
  if (offset > m_size || size > m_size - offset) {
    throw Error(m_path + ": " + what + " lies outside the file — damaged or cut short", Exit::bad_input);
  }
  std::string out(size, '\0');
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(m_fd.fd, out.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      throw Error(m_path + ": cannot read " + what + (n < 0 ? std::string(": ") + std::strerror(errno) : ""),
                  Exit::bad_input);
    }
    done += static_cast<uint64_t>(n);
  }
  return out;
}

}  // namespace sweep
