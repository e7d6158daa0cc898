#include "data/tokens.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "data/token_shard.h"
#include "util/error.h"
#include "util/fs.h"

namespace sweep {

std::vector<uint16_t> Tokens::all() const {
  std::vector<uint16_t> out(static_cast<size_t>(size()));
  read(0, size(), out.data());
  return out;
}

void MemoryTokens::read(int64_t start, int64_t n, uint16_t* out) const {
  std::memcpy(out, m_tokens.data() + start, static_cast<size_t>(n) * sizeof(uint16_t));
}

ShardTokens::ShardTokens(const DatasetInfo& info, const std::string& split) : m_vocab(info.vocab_size) {
  try {
    for (const auto& name : info.splits.at(split).shards) {
      Shard s;
      s.path = (fs::path(info.dir) / name).string();
      s.count = shard_tokens(s.path);  // header and exact length checked
      s.first = m_size;
      m_size += s.count;
      s.fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (s.fd < 0 && errno == EMFILE) {  // a split of more shards than the soft limit of open files
        rlimit limit{};
        if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
          limit.rlim_cur = limit.rlim_max;
          ::setrlimit(RLIMIT_NOFILE, &limit);
          s.fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
        }
      }
      if (s.fd < 0) {
        throw io_error("open the token shard", s.path, errno);
      }
      ::posix_fadvise(s.fd, 0, 0, POSIX_FADV_RANDOM);  // windows come in a shuffled order: no read-ahead
      m_shards.push_back(s);
    }
    if (m_size != info.splits.at(split).tokens) {
      throw Error((fs::path(info.dir) / "dataset.yaml").string() + ": the " + split + " split has " +
                      std::to_string(info.splits.at(split).tokens) + " tokens, its shards hold " +
                      std::to_string(m_size) + " — prepare the dataset again",
                  Exit::bad_input);
    }
  } catch (...) {
    for (auto& s : m_shards) {
      ::close(s.fd);
    }
    throw;
  }
}

ShardTokens::~ShardTokens() {
  for (auto& s : m_shards) {
    ::close(s.fd);
  }
}

void ShardTokens::read(int64_t start, int64_t n, uint16_t* out) const {
  if (start < 0 || n < 0 || start + n > m_size) {
    throw std::out_of_range("ShardTokens::read past the split's end");
  }
  if (n == 0) {
    return;
  }
  // The shard holding `start`: the last one whose first token is at or before it.
  auto it = std::upper_bound(m_shards.begin(), m_shards.end(), start,
                             [](int64_t pos, const Shard& s) { return pos < s.first; });
  for (--it; n > 0; ++it) {
    const int64_t offset = start - it->first;
    const int64_t take = std::min(n, it->count - offset);
    const size_t bytes = static_cast<size_t>(take) * 2;
    size_t done = 0;
    while (done < bytes) {
      const ssize_t got = ::pread(it->fd, reinterpret_cast<char*>(out) + done, bytes - done,
                                  static_cast<off_t>(k_shard_header_ints * 4 + offset * 2 + static_cast<int64_t>(done)));
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got <= 0) {
        throw io_error("read the token shard", it->path, got < 0 ? errno : EIO);
      }
      done += static_cast<size_t>(got);
    }
    for (int64_t i = 0; i < take; ++i) {
      if (out[i] >= m_vocab) {
        throw Error("token shard " + it->path + ": token " + std::to_string(out[i]) + " at position " +
                        std::to_string(offset + i) + " is outside the vocabulary (size " + std::to_string(m_vocab) +
                        ") — the shard and dataset.yaml disagree",
                    Exit::bad_input);
      }
    }
    out += take;
    start += take;
    n -= take;
  }
}

}  // namespace sweep
