// File helpers: whole-file reads, and atomic writes (temp file in the same directory, fsync,
// rename, fsync of the directory) so a crash or kill never leaves a half-written file behind.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace sweep {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path);

// Writes `content` to `path` atomically: readers see the old file or the new one, never a mix.
void write_file_atomic(const fs::path& path, const std::string& content);

// Lets `write` fill a temporary path beside `path`, then fsyncs it and renames it into place.
// If `write` throws, the temporary file is removed and `path` is untouched.
void replace_file_atomic(const fs::path& path, const std::function<void(const fs::path&)>& write);

void fsync_path(const fs::path& path);

// Calls `line` with each line of a text file in turn (without its newline; the last one too when it
// has none), reading a block at a time: a file of any size in bounded memory. A line longer than
// `max_line` bytes is never held whole: it is skipped. Throws an io_error when it cannot be read.
void for_each_line(const fs::path& path, size_t max_line, const std::function<void(const std::string&)>& line);

// Appends `line` and a newline to a log of lines (created if missing), on a line of its own: after
// a newline when the file ends in a line cut short (a writer killed mid-line). Throws an io_error.
void append_line(const fs::path& path, const std::string& line);

// Removes the temporary files replace_file_atomic leaves when its process is killed mid-write
// (".NAME.tmp.PID.N") from `dir`. Call it only while holding the lock of what writes there.
void remove_stale_temporaries(const fs::path& dir);

// An exclusive advisory lock (flock) on a file, held while the object lives and released by the
// kernel when the process dies however it dies. The file holds the holder's pid.
class FileLock {
 public:
  // The lock, or nullptr when another process holds it (`holder`: its pid, as it wrote it).
  // `remove`: the lock file goes when the lock is released (a lock in a folder of the user's); the
  // file locked is checked to be the one at `path` still, so that the removal races with no one.
  static std::unique_ptr<FileLock> try_lock(const fs::path& path, std::string* holder = nullptr, bool remove = false);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  FileLock(int fd, fs::path remove) : m_fd(fd), m_remove(std::move(remove)) {}
  int m_fd;
  fs::path m_remove;  // "" = kept
};

// The last `lines` non-empty-ended lines of a text file ("" when it does not exist).
// The last `lines` lines of the file, from byte `from` on (a log's part written since then); at
// most its last MiB is read.
std::string tail_lines(const fs::path& path, size_t lines, uintmax_t from = 0);

}  // namespace sweep
