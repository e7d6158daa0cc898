#include "train/checkpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "build_options.h"
#include "train/sharded/checkpoint_shards.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/text.h"

namespace sweep {

namespace {

// The device's default generator (a handle: its state is the process's own).
at::Generator rng_for(const torch::Device& device) {
  return device.is_cpu() ? at::detail::getDefaultCPUGenerator() : at::globalContext().defaultGenerator(device);
}

// A checkpoint file: this header line, then the LibTorch archive. The header holds the archive's
// SHA-256, written last (its place is filled once the archive is out).
constexpr char k_magic[] = "sweep-checkpoint 1 sha256=";
constexpr size_t k_magic_size = sizeof k_magic - 1;
constexpr size_t k_header_size = k_magic_size + 64 + 1;

struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

bool pwrite_all(int fd, const void* data, size_t size, off_t at) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, p, size, at);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
    at += n;
  }
  return true;
}

// Files of LibTorch archives written before checkpoints had a header (a zip: "PK").
bool is_bare_archive(const char* head, ssize_t n) { return n >= 2 && head[0] == 'P' && head[1] == 'K'; }

}  // namespace

// The archive of a checked checkpoint file (checkpoint_problem first), read in place.
void open_checkpoint_archive(const std::string& path, torch::serialize::InputArchive& root, const torch::Device& device) {
  const Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  char head[2];
  const ssize_t n = f.fd < 0 ? -1 : ::pread(f.fd, head, sizeof head, 0);
  try {
    if (is_bare_archive(head, n)) {
      root.load_from(path, device);
      return;
    }
    struct stat st = {};
    if (f.fd < 0 || ::fstat(f.fd, &st) != 0) {
      throw Error("cannot read checkpoint " + path + ": " + std::strerror(errno));
    }
    const size_t size = static_cast<size_t>(st.st_size) - k_header_size;
    root.load_from(
        [&](uint64_t pos, void* buf, size_t bytes) -> size_t {
          const ssize_t got = ::pread(f.fd, buf, bytes, static_cast<off_t>(k_header_size + pos));
          return got < 0 ? 0 : static_cast<size_t>(got);
        },
        [size]() { return size; }, device);
  } catch (const c10::Error& e) {
    throw Error("cannot read checkpoint " + path + ": " + e.what_without_backtrace());
  }
}

namespace {

// A fault for the tests, compiled only into test builds (-DSWEEP_TEST_HOOKS=ON): `test-fault` in
// the run directory holding "kill_in_save:N" kills the worker (SIGKILL) inside the save at step
// N, between setting the latest checkpoint aside and putting the new one in its place.
void kill_in_save_hook(const std::string& path, int64_t step) {
#ifdef SWEEP_TEST_HOOKS
  const fs::path fault = fs::path(path).parent_path().parent_path() / "test-fault";
  std::error_code ec;
  if (fs::exists(fault, ec) && trim(read_file(fault)) == "kill_in_save:" + std::to_string(step)) {
    std::fprintf(stderr, "test-fault: killed inside the checkpoint save at step %lld\n", static_cast<long long>(step));
    ::kill(::getpid(), SIGKILL);
  }
#else
  (void)path;
  (void)step;
#endif
}

}  // namespace

void restore_rng(torch::serialize::InputArchive& root, const std::string& key, CheckpointMeta& meta,
                 const torch::Device& device) {
  c10::IValue written_on;
  if (root.try_read("rng_device", written_on)) {  // absent: written before the tag, on a CPU
    meta.rng_device = written_on.toStringRef();
  }
  torch::Tensor state;
  if (!root.try_read(key, state)) {
    meta.rng_device.clear();  // none for this rank: written by fewer ranks
  }
  meta.rng_restored = meta.rng_device == c10::DeviceTypeName(device.type(), /*lower_case=*/true);
  if (meta.rng_restored) {
    set_rng_state(device, state);
  }
}

std::string checkpoint_sha256(const std::string& path) {
  const Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  char head[k_header_size];
  const ssize_t n = f.fd < 0 ? -1 : ::pread(f.fd, head, sizeof head, 0);
  if (n != static_cast<ssize_t>(sizeof head) || std::memcmp(head, k_magic, k_magic_size) != 0) {
    return "";
  }
  return std::string(head + k_magic_size, 64);
}

std::string previous_checkpoint(const std::string& path) {
  const fs::path p(path);
  return (p.parent_path() / (p.stem().string() + ".prev" + p.extension().string())).string();
}

std::optional<std::string> checkpoint_problem(const std::string& path) {
  const Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) {
    return std::string("cannot open it: ") + std::strerror(errno);
  }
  char head[k_header_size];
  const ssize_t n = ::pread(f.fd, head, sizeof head, 0);
  if (is_bare_archive(head, n)) {  // no checksum to check: it is whole if LibTorch reads it
    try {
      torch::serialize::InputArchive root;
      root.load_from(path, torch::kCPU);
      return std::nullopt;
    } catch (const c10::Error& e) {
      return std::string("unreadable: ") + e.what_without_backtrace();
    }
  }
  if (n < 0) {
    return std::string("read error: ") + std::strerror(errno);
  }
  if (std::memcmp(head, k_magic, std::min<size_t>(static_cast<size_t>(n), k_magic_size)) != 0) {
    return std::string("not a sweep checkpoint (no header)");
  }
  if (n < static_cast<ssize_t>(sizeof head) || head[k_header_size - 1] != '\n') {
    return "truncated: " + std::to_string(n) + " bytes";
  }
  Sha256 hash;
  std::vector<char> buf(1 << 20);
  for (off_t at = k_header_size;;) {
    const ssize_t got = ::pread(f.fd, buf.data(), buf.size(), at);
    if (got < 0) {
      return std::string("read error: ") + std::strerror(errno);
    }
    if (got == 0) {
      break;
    }
    hash.update(buf.data(), static_cast<size_t>(got));
    at += got;
  }
  const std::string written(head + k_magic_size, 64), now = hash.hex();
  if (now != written) {
    return "its bytes changed or were cut since it was written (SHA-256 " + now.substr(0, 12) + "…, written " +
           written.substr(0, 12) + "…)";
  }
  return std::nullopt;
}

torch::Tensor rng_state(const torch::Device& device) {
  at::Generator gen = rng_for(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_rng_state(const torch::Device& device, const torch::Tensor& state) {
  at::Generator gen = rng_for(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state.to(torch::kCPU));
}

std::string write_checkpoint_file(const std::string& path, torch::serialize::OutputArchive& root,
                                  const std::function<void()>& alive, bool keep_previous, int64_t step) {
  std::string sha;
  replace_file_atomic(path, [&](const fs::path& tmp) {
    const Fd f(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    int err = f.fd < 0 ? errno : 0;
    Sha256 hash;
    off_t at = k_header_size;
    // LibTorch's writer must never see an exception (its destructor writes again, and throwing
    // there terminates the process): a failed write is kept and thrown once it is done.
    root.save_to([&](const void* data, size_t size) -> size_t {
      if (err == 0 && !pwrite_all(f.fd, data, size, at)) {
        err = errno != 0 ? errno : EIO;
      }
      hash.update(data, size);
      at += static_cast<off_t>(size);
      if (alive) {
        try {
          alive();  // a heartbeat that cannot be written (the disk the checkpoint fills) must not throw here
        } catch (const std::exception&) {
        }
      }
      return size;
    });
    sha = hash.hex();
    const std::string header = std::string(k_magic) + sha + "\n";
    if (err == 0 && !pwrite_all(f.fd, header.data(), header.size(), 0)) {
      err = errno != 0 ? errno : EIO;
    }
    if (err != 0) {
      throw io_error("write the checkpoint", path, err);  // the previous one is kept
    }
    if (const auto problem = checkpoint_problem(tmp.string())) {
      throw Error("checkpoint " + path + " did not read back whole (" + *problem + ") — the previous one is kept");
    }
    if (!keep_previous) {
      return;
    }
    // The last whole checkpoint steps aside only now, and stays until the next one replaces it.
    std::error_code ec;
    if (fs::exists(path) && (fs::rename(path, previous_checkpoint(path), ec), ec)) {
      throw io_error("keep the previous checkpoint as", previous_checkpoint(path), ec.value());
    }
    kill_in_save_hook(path, step);
  });
  return sha;
}

void write_rng_device(torch::serialize::OutputArchive& root, const torch::Device& device) {
  root.write("rng_device", c10::IValue(c10::DeviceTypeName(device.type(), /*lower_case=*/true)));
}

void write_checkpoint_meta(torch::serialize::OutputArchive& root, const CheckpointMeta& meta) {
  root.write("step", torch::tensor(meta.step, torch::kLong));
  root.write("tokens_per_step", torch::tensor(meta.tokens_per_step, torch::kLong));
  root.write("config_json", c10::IValue(meta.config_json));
}

CheckpointMeta read_checkpoint_meta(torch::serialize::InputArchive& root) {
  CheckpointMeta meta;
  torch::Tensor t;
  root.read("step", t);
  meta.step = t.item<int64_t>();
  root.read("tokens_per_step", t);
  meta.tokens_per_step = t.item<int64_t>();
  c10::IValue config;
  root.read("config_json", config);
  meta.config_json = config.toStringRef();
  return meta;
}

void save_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer& opt,
                     const CheckpointMeta& meta, const torch::Device& device,
                     const std::vector<torch::Tensor>& rng_states, const std::function<void()>& alive,
                     torch::optim::Optimizer* muon) {
  torch::serialize::OutputArchive root, model_archive, optim_archive;
  model->save(model_archive);
  opt.save(optim_archive);
  root.write("model", model_archive);
  root.write("optimizer", optim_archive);
  if (muon != nullptr) {
    torch::serialize::OutputArchive muon_archive;
    muon->save(muon_archive);
    root.write("muon", muon_archive);
  }
  write_checkpoint_meta(root, meta);
  // Rank 0's state under the single-process name, so that checkpoints of any world size load alike.
  root.write("rng_state", rng_states.empty() ? rng_state(device) : rng_states[0]);
  write_rng_device(root, device);
  for (size_t r = 1; r < rng_states.size(); ++r) {
    root.write("rng_state_rank" + std::to_string(r), rng_states[r]);
  }
  write_checkpoint_file(path, root, alive, /*keep_previous=*/true, meta.step);
}

namespace {

// The model's weights from a checkpoint's archive: a checkpoint of another architecture (another
// family, expert count, norm) is a one-line error, not LibTorch's backtrace.
void load_model(torch::serialize::InputArchive& root, GPT& model, const std::string& path) {
  torch::serialize::InputArchive model_archive;
  try {
    root.read("model", model_archive);
    model->load(model_archive);
  } catch (const c10::Error& e) {
    const std::string why = e.what_without_backtrace();
    throw Error("checkpoint " + path + " does not hold this model (" + why.substr(0, why.find('\n')) +
                    ") — it was written for another config.yaml",
                Exit::bad_input);
  }
}

}  // namespace

CheckpointMeta load_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer& opt,
                               const torch::Device& device, int64_t rank, torch::optim::Optimizer* muon) {
  if (const auto problem = checkpoint_problem(path)) {
    throw CheckpointDamaged(path, *problem);
  }
  torch::serialize::InputArchive root, optim_archive;
  open_checkpoint_archive(path, root, device);
  load_model(root, model, path);
  // The optimizers' states: another optimizer's (AdamW's where this run has Muon, or the other
  // way) is a one-line error, as another model's is.
  try {
    root.read("optimizer", optim_archive);
    opt.load(optim_archive);
    if (muon != nullptr) {
      torch::serialize::InputArchive muon_archive;
      root.read("muon", muon_archive);
      muon->load(muon_archive);
    }
  } catch (const c10::Error& e) {
    const std::string why = e.what_without_backtrace();
    throw Error("checkpoint " + path + " does not hold this run's optimizer state (" + why.substr(0, why.find('\n')) +
                    ") — it was written for another config.yaml",
                Exit::bad_input);
  }
  CheckpointMeta meta = read_checkpoint_meta(root);
  restore_rng(root, rank == 0 ? "rng_state" : "rng_state_rank" + std::to_string(rank), meta, device);
  return meta;
}

void load_checkpoint_weights(const std::string& path, GPT& model) {
  if (const auto shards = ShardReader::open(path)) {  // a sharded run's: every weight assembled whole
    shards->load_weights(model);
    return;
  }
  if (const auto problem = checkpoint_problem(path)) {
    throw CheckpointDamaged(path, *problem);
  }
  torch::serialize::InputArchive root;
  open_checkpoint_archive(path, root, torch::kCPU);
  load_model(root, model, path);
}

}  // namespace sweep
