// The page's files, compiled into the binary from serve/assets/ (cmake/embed_assets.cmake): the
// page, its script and style, and the vendored chart library (uPlot, MIT, its licence beside it).
#pragma once

#include <cstddef>

namespace sweep {

struct Asset {
  const char* name;  // e.g. "app.js", as served under /assets/
  const char* type;  // its Content-Type
  const unsigned char* data;
  size_t size;
};

extern const Asset k_serve_assets[];
extern const size_t k_serve_asset_count;

}  // namespace sweep
