#include "bench/rows.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/error.h"

namespace sweep {

void append_bench_row(const std::string& file, const BenchRow& row) {
  if (file.empty()) {
    return;
  }
  const auto optional = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  const nlohmann::json j{{"device", row.device},     {"model", row.model},
                         {"precision", row.precision}, {"who", row.who},
                         {"tokens_per_s", row.tokens_per_s}, {"step_ms", row.step_ms},
                         {"flops_per_s", row.flops_per_s},   {"mfu", row.mfu},
                         {"peak_mib", optional(row.peak_mib)}, {"optimizer_ms", optional(row.optimizer_ms)},
                         {"reads_per_step", optional(row.reads_per_step)}, {"note", row.note}};
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::FILE* f = std::fopen(file.c_str(), "a");
  bool written = f != nullptr && std::fwrite(line.data(), 1, line.size(), f) == line.size();
  written = f != nullptr && std::fclose(f) == 0 && written;
  if (!written) {
    throw Error("--rows " + file + ": cannot append a row (" + std::strerror(errno) + ")", Exit::io_error);
  }
}

}  // namespace sweep
