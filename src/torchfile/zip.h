// The zip container of PyTorch's files (torch.save, LibTorch's pickle_save): a reader that trusts
// nothing in it. Every offset and size is checked against the file before it is used, entries
// are stored (PyTorch never compresses), ZIP64 is followed, and each entry's CRC-32 is checked
// when it is read. Standard library only: built into the sanitizer tests as it is into sweep.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sweep {

struct ZipEntry {
  std::string name;
  uint64_t header_offset = 0;  // of its local header
  uint64_t data_offset = 0;    // of the entry's bytes in the file
  uint64_t size = 0;
  uint32_t crc = 0;
};

class ZipReader {
 public:
  // Reads the central directory of `path`; throws Error (bad input) naming the file and what is wrong:
// among others two entries of one name, or entries whose bytes overlap (a small file that reads as
// many large ones), which no zip writer makes.
  explicit ZipReader(const std::string& path);
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;

  const std::vector<ZipEntry>& entries() const { return m_entries; }
  const ZipEntry* find(const std::string& name) const;  // nullptr when absent
  // The entry's bytes, their CRC-32 checked (an Error when it differs).
  std::string read(const ZipEntry& entry) const;
  const std::string& path() const { return m_path; }

 private:
  struct Fd {  // closed however the constructor ends
    int fd = -1;
    ~Fd();
  };
  std::string m_path;
  Fd m_fd;
  uint64_t m_size = 0;
  std::vector<ZipEntry> m_entries;
  std::unordered_map<std::string, size_t> m_by_name;
  std::string pread_exact(uint64_t offset, uint64_t size, const std::string& what) const;
  // The central directory's bytes and its entry count, from the end record (ZIP64's too).
  std::pair<std::string, uint64_t> central_directory() const;
  // Entry i of the directory at `at` (moved past it), its header and bytes inside the file.
  ZipEntry read_entry(const std::string& dir, size_t& at, uint64_t i) const;
  // Each entry's header and bytes apart from every other's.
  void check_no_overlap() const;
};

// CRC-32 (ISO-HDLC, zip's) of `size` bytes, continuing from `crc` (0 to start).
uint32_t crc32(const void* data, size_t size, uint32_t crc = 0);

}  // namespace sweep
