#include "util/hash.h"

#include <openssl/evp.h>

#include <fstream>
#include <vector>

#include "util/error.h"

namespace sweep {

namespace {

std::string to_hex(const unsigned char* digest, unsigned int len) {
  static const char* k_hex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out += k_hex[digest[i] >> 4];
    out += k_hex[digest[i] & 15];
  }
  return out;
}

}  // namespace

std::string sha256_hex(const std::string& data) {
  Sha256 h;
  h.update(data.data(), data.size());
  return h.hex();
}

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error("cannot read " + path);
  }
  Sha256 sha;
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    sha.update(block.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) {
    throw Error("cannot read " + path);
  }
  return sha.hex();
}

struct Sha256::Ctx {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Ctx() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : m_ctx(std::make_unique<Ctx>()) {
  if (m_ctx->ctx == nullptr || EVP_DigestInit_ex(m_ctx->ctx, EVP_sha256(), nullptr) != 1) {
    throw Error("SHA-256 failed");
  }
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, size_t size) {
  if (EVP_DigestUpdate(m_ctx->ctx, data, size) != 1) {
    throw Error("SHA-256 failed");
  }
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(m_ctx->ctx, digest, &len) != 1) {
    throw Error("SHA-256 failed");
  }
  return to_hex(digest, len);
}

}  // namespace sweep
