// Sizes with suffixes: "5M" = 5,000,000, "128K", "2G", binary "64Ki"/"1Mi", scientific "5e6".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sweep {

// The integer value of `text`, or nullopt when it is not a whole, non-negative size.
std::optional<int64_t> parse_size(const std::string& text);

}  // namespace sweep
