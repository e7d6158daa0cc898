#include "config/size.h"

#include <cmath>
#include <cstdlib>

namespace sweep {

std::optional<int64_t> parse_size(const std::string& text) {
  if (text.empty() || text[0] == '-' || text[0] == '+') {
    return std::nullopt;
  }
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) {
    return std::nullopt;
  }
  std::string suffix(end);
  double scale = 1;
  if (suffix == "K" || suffix == "k") {
    scale = 1e3;
  } else if (suffix == "M") {
    scale = 1e6;
  } else if (suffix == "G") {
    scale = 1e9;
  } else if (suffix == "T") {
    scale = 1e12;
  } else if (suffix == "Ki") {
    scale = 1024.0;
  } else if (suffix == "Mi") {
    scale = 1024.0 * 1024;
  } else if (suffix == "Gi") {
    scale = 1024.0 * 1024 * 1024;
  } else if (!suffix.empty()) {
    return std::nullopt;
  }
  double total = value * scale;
  if (!std::isfinite(total) || total < 0 || total > 9e18 || std::floor(total) != total) {
    return std::nullopt;
  }
  return static_cast<int64_t>(total);
}

}  // namespace sweep
