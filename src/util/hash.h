// SHA-256 of a byte string, as lowercase hex (OpenSSL's EVP interface).
#pragma once

#include <string>

namespace sweep {

std::string sha256_hex(const std::string& data);

}  // namespace sweep
