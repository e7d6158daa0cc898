// SHA-256 (OpenSSL's EVP interface), as lowercase hex: of a byte string, or fed piece by piece.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace sweep {

std::string sha256_hex(const std::string& data);

// The SHA-256 of a file's bytes, read a MiB at a time. Throws Error when it cannot be read.
std::string file_sha256(const std::string& path);

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t size);
  std::string hex();  // the digest of everything fed; ends the object's use

 private:
  struct Ctx;
  std::unique_ptr<Ctx> m_ctx;
};

}  // namespace sweep
