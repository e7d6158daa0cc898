#include "util/fs.h"

#include "util/text.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace sweep {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error("cannot read " + path.string() + ": " + std::strerror(errno), Exit::bad_input);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void fsync_path(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Error("cannot open " + path.string() + " to sync it: " + std::strerror(errno));
  }
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Some filesystems refuse fsync on a directory (EINVAL); the data itself was synced.
  if (rc != 0 && err != EINVAL) {
    throw Error("fsync of " + path.string() + " failed: " + std::strerror(err));
  }
}

void replace_file_atomic(const fs::path& path, const std::function<void(const fs::path&)>& write) {
  static std::atomic<int> counter{0};
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  fs::create_directories(dir);
  fs::path tmp = dir / ("." + path.filename().string() + ".tmp." + std::to_string(::getpid()) +
                        "." + std::to_string(counter++));
  try {
    write(tmp);
    fsync_path(tmp);
    fs::rename(tmp, path);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
  fsync_path(dir);
}

void write_file_atomic(const fs::path& path, const std::string& content) {
  replace_file_atomic(path, [&](const fs::path& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) {
      throw Error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    }
  });
}

std::string tail_lines(const fs::path& path, size_t lines, uintmax_t from) {
  if (!fs::exists(path)) {
    return "";
  }
  const std::string text = read_file(path);
  std::vector<std::string> all = split(text.substr(std::min<size_t>(from, text.size())), '\n');
  while (!all.empty() && trim(all.back()).empty()) {
    all.pop_back();
  }
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += all[i] + "\n";
  }
  return out;
}

}  // namespace sweep
