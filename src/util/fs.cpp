#include "util/fs.h"

#include "util/text.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

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
    throw io_error("open", path.string(), errno);
  }
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Some filesystems refuse fsync on a directory (EINVAL); the data itself was synced.
  if (rc != 0 && err != EINVAL) {
    throw io_error("sync", path.string(), err);
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
  } catch (const fs::filesystem_error& e) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw io_error("write", path.string(), e.code().value());
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
      throw io_error("write", path.string(), errno);
    }
  });
}

void for_each_line(const fs::path& path, size_t max_line, const std::function<void(const std::string&)>& line) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw io_error("read", path.string(), errno);
  }
  std::vector<char> block(1 << 16);
  std::string current;
  bool overlong = false;
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const size_t got = static_cast<size_t>(in.gcount());
    size_t from = 0;
    while (from < got) {
      const char* nl = static_cast<const char*>(std::memchr(block.data() + from, '\n', got - from));
      const size_t to = nl ? static_cast<size_t>(nl - block.data()) : got;
      if (!overlong) {
        current.append(block.data() + from, to - from);
        if (current.size() > max_line) {
          overlong = true;
          current.clear();
          current.shrink_to_fit();
        }
      }
      if (nl) {
        if (!overlong) {
          line(current);
        }
        current.clear();
        overlong = false;
      }
      from = to + (nl ? 1 : 0);
    }
  }
  if (in.bad()) {
    throw io_error("read", path.string(), errno);
  }
  if (!current.empty() && !overlong) {
    line(current);
  }
}

void append_line(const fs::path& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw io_error("open", path.string(), errno);
  }
  char last = '\n';
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size > 0 && ::pread(fd, &last, 1, size - 1) != 1) {
    last = '\n';
  }
  const std::string text = (last == '\n' ? "" : "\n") + line + "\n";
  const ssize_t wrote = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (wrote != static_cast<ssize_t>(text.size())) {
    throw io_error("write", path.string(), wrote < 0 ? err : ENOSPC);
  }
}

void remove_stale_temporaries(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 1 && name[0] == '.' && name.find(".tmp.") != std::string::npos && it->is_regular_file(ec)) {
      fs::remove(it->path(), ec);
    }
  }
}

std::unique_ptr<FileLock> FileLock::try_lock(const fs::path& path, std::string* holder, bool remove) {
  while (true) {
    const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw io_error("open the lock", path.string(), errno);
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (holder != nullptr) {
        char buf[32] = {};
        const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
        *holder = trim(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0));
      }
      ::close(fd);
      return nullptr;
    }
    // A lock file that goes on release may have gone between the open and the lock: the file
    // locked must still be the one at `path`, else it locks nothing anyone else sees.
    struct stat held = {}, now = {};
    if (remove && (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &now) != 0 || held.st_ino != now.st_ino ||
                   held.st_dev != now.st_dev)) {
      ::close(fd);
      continue;
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      // The lock holds without the pid: it only makes the message of a refused process better.
    }
    return std::unique_ptr<FileLock>(new FileLock(fd, remove ? path : fs::path()));
  }
}

FileLock::~FileLock() {
  if (!m_remove.empty()) {
    ::unlink(m_remove.c_str());  // while still held: whoever opens the path now makes a new file
  }
  ::close(m_fd);
}

namespace {
constexpr uintmax_t k_tail_bytes = 1 << 20;
}  // namespace

std::string tail_lines(const fs::path& path, size_t lines, uintmax_t from) {
  if (!fs::exists(path)) {
    return "";
  }
  // Only the file's last MiB is read: a tail of a log of any size costs the same.
  std::ifstream in(path, std::ios::binary);
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uintmax_t>(std::max<std::streamoff>(0, in.tellg()));
  const uintmax_t start = std::max<uintmax_t>(from, size > k_tail_bytes ? size - k_tail_bytes : 0);
  std::string text(static_cast<size_t>(size > start ? size - start : 0), '\0');
  in.seekg(static_cast<std::streamoff>(start));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  std::vector<std::string> all = split(text, '\n');
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
