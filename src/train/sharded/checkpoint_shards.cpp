#include "train/sharded/checkpoint_shards.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <random>
#include <regex>
#include <set>

#include "build_options.h"
#include "parallel/parallel.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace {

using nlohmann::json;

// A tensor's elements in storage of their own on the CPU: an archive writes a view's whole
// storage, and a device tensor's is copied to the host anyway.
torch::Tensor host_copy(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous();
}

// NAME.step<N>-<save>.rank<R>-of-<W>.pt: <save> is rank 0's random tag of this save, so that a
// save never writes over a file another checkpoint names (two saves of one step: a resume from
// the previous checkpoint that saves at its step again).
std::string shard_file(const std::string& path, int64_t step, const std::string& save, int64_t rank, int64_t world) {
  const fs::path p(path);
  return p.stem().string() + ".step" + std::to_string(step) + "-" + save + ".rank" + std::to_string(rank) + "-of-" +
         std::to_string(world) + p.extension().string();
}

// A fault for the tests, compiled only into test builds (-DSWEEP_TEST_HOOKS=ON): `test-fault` in
// the run directory holding "fail_shard:R" fails rank R's shard as a full disk would.
void fail_shard_hook(const std::string& path, int64_t rank) {
#ifdef SWEEP_TEST_HOOKS
  const fs::path fault = fs::path(path).parent_path().parent_path() / "test-fault";
  std::error_code ec;
  if (fs::exists(fault, ec) && trim(read_file(fault)) == "fail_shard:" + std::to_string(rank)) {
    throw io_error("write the checkpoint shard", path, ENOSPC);
  }
#else
  (void)path;
  (void)rank;
#endif
}

// Every rank's `text`, in rank order (a collective).
std::vector<std::string> all_gather_text(Communicator& comm, const std::string& text) {
  torch::Tensor size = torch::full({1}, static_cast<int64_t>(text.size()), torch::kLong);
  int64_t longest = 0;
  for (const auto& s : comm.all_gather(size)) {
    longest = std::max(longest, s.item<int64_t>());
  }
  torch::Tensor bytes = torch::zeros({longest + 1}, torch::kUInt8);  // never empty
  std::copy(text.begin(), text.end(), bytes.data_ptr<uint8_t>());
  bytes[longest] = static_cast<int64_t>(text.size() > 0 ? 1 : 0);
  std::vector<std::string> out;
  for (const auto& s : comm.all_gather(bytes)) {
    const torch::Tensor b = s.to(torch::kCPU).contiguous();
    const char* p = reinterpret_cast<const char*>(b.data_ptr<uint8_t>());
    out.emplace_back(p, strnlen(p, static_cast<size_t>(longest)));
  }
  return out;
}

// Whether any rank says `bad` (a collective).
bool any_rank(Communicator& comm, bool bad) {
  torch::Tensor n = torch::full({1}, bad ? 1.0 : 0.0, torch::kDouble);
  comm.all_reduce_sum(n);
  return n.item<double>() > 0;
}

// The shards a checkpoint names (none for a checkpoint of one file); nothing when it is missing
// or cannot be read whole.
std::optional<std::set<std::string>> named_shards(const std::string& checkpoint) {
  try {
    if (!fs::exists(checkpoint)) {
      return std::nullopt;
    }
    std::set<std::string> files;
    if (const auto reader = ShardReader::open(checkpoint)) {
      const std::vector<std::string> named = reader->files();
      files.insert(named.begin(), named.end());
    }
    return files;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

ShardRead ShardRead::into(const std::string& name, int64_t numel, int64_t begin, torch::Tensor to) {
  return {name, numel, begin, to.numel(), false, [to](const torch::Tensor& values, const torch::Tensor&) mutable {
            torch::NoGradGuard no_grad;
            to.view({-1}).copy_(values);
          }};
}

void remove_unnamed_shards(const std::string& path) {
  const fs::path p(path);
  std::optional<std::set<std::string>> keep = named_shards(path);
  if (!keep) {
    return;  // the checkpoint just written cannot be read back: touch nothing
  }
  // those of the previous checkpoint, and of one a resume set aside as damaged (kept for a look)
  for (const std::string& other : {previous_checkpoint(path), previous_checkpoint(path) + ".damaged", path + ".damaged"}) {
    if (const auto named = named_shards(other)) {
      keep->insert(named->begin(), named->end());
    }
  }
  const std::regex shard(std::regex_replace(p.stem().string(), std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                         R"(\.step\d+-[0-9a-f]+\.rank\d+-of-\d+)" +
                         std::regex_replace(p.extension().string(), std::regex(R"([.])"), R"(\.)"));
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(p.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, shard) && keep->count(name) == 0) {
      fs::remove(entry.path(), ec);
    }
  }
}

void save_sharded_checkpoint(const std::string& path, const std::vector<ShardEntry>& entries, int64_t adam_steps,
                             const std::string& layout, const CheckpointMeta& meta, const torch::Device& device,
                             Communicator& comm, const std::function<void()>& alive) {
  const int64_t rank = comm.rank(), world = comm.world();
  char tag[9];
  std::snprintf(tag, sizeof tag, "%08x", static_cast<unsigned>(std::random_device()()));
  const std::string save = all_gather_text(comm, rank == 0 ? tag : "x")[0];
  const std::string file = shard_file(path, meta.step, save, rank, world);
  json index = json::array();
  std::string sha, error;
  Exit code = Exit::io_error;  // a shard that cannot be written: the disk, the folder (as a file of one)
  // `write`, its error (and exit code) kept: every rank must reach the collectives below either way
  auto attempt = [&](const std::function<void()>& write) {
    try {
      write();
      error.clear();
    } catch (const Error& e) {
      error = e.what();
      code = e.code();
    } catch (const std::exception& e) {
      error = e.what();
      code = Exit::failed;
    }
  };
  attempt([&] {
    torch::serialize::OutputArchive root;
    for (size_t i = 0; i < entries.size(); ++i) {
      const ShardEntry& e = entries[i];
      index.push_back({e.name, e.begin, e.value.numel()});
      root.write(std::to_string(i) + ".value", host_copy(e.value));
      if (e.exp_avg.defined()) {  // a weight's, after the first step (a buffer has none)
        root.write(std::to_string(i) + ".exp_avg", host_copy(e.exp_avg));
        root.write(std::to_string(i) + ".exp_avg_sq", host_copy(e.exp_avg_sq));
      }
    }
    fail_shard_hook(path, rank);
    write_checkpoint_meta(root, meta);
    root.write("rng_state", rng_state(device));
    write_rng_device(root, device);
    sha = write_checkpoint_file((fs::path(path).parent_path() / file).string(), root, alive, /*keep_previous=*/false,
                                meta.step);
  });
  // Every rank learns every rank's shard (its file, checksum and index), or that one failed.
  const std::vector<std::string> shards =
      all_gather_text(comm, error.empty() ? json{{"file", file}, {"sha256", sha}, {"index", index}}.dump() : "");
  for (int64_t r = 0; r < world; ++r) {
    if (shards[static_cast<size_t>(r)].empty()) {
      throw Error("checkpoint " + path + " at step " + std::to_string(meta.step) + " was not written: " +
                      (r == rank ? error : "rank " + std::to_string(r) + " could not write its shard") +
                      " — the previous checkpoint is kept",
                  r == rank ? code : Exit::io_error);
    }
  }
  if (rank == 0) {
    attempt([&] {
      json manifest = {{"world", world}, {"adam_steps", adam_steps}, {"layout", layout}, {"shards", json::array()}};
      for (const auto& s : shards) {
        manifest["shards"].push_back(json::parse(s));
      }
      torch::serialize::OutputArchive root;
      root.write("shards", c10::IValue(manifest.dump()));
      write_checkpoint_meta(root, meta);
      write_checkpoint_file(path, root, alive, /*keep_previous=*/true, meta.step);
    });
  }
  if (any_rank(comm, rank == 0 && !error.empty())) {
    throw Error(rank == 0 ? error
                          : "checkpoint " + path + " at step " + std::to_string(meta.step) +
                                ": rank 0 could not write its manifest — the previous checkpoint is kept",
                rank == 0 ? code : Exit::io_error);
  }
  if (rank == 0) {
    remove_unnamed_shards(path);
  }
}

std::unique_ptr<ShardReader> ShardReader::open(const std::string& path) {
  // Which kind it is from its archive's directory alone: a checkpoint of one file is left to its
  // reader to check (hashing it here too would read it twice); a manifest is small.
  torch::serialize::InputArchive root;
  c10::IValue text;
  bool manifest = false;
  try {
    open_checkpoint_archive(path, root, torch::kCPU);
    manifest = root.try_read("shards", text);
  } catch (const std::exception&) {  // an archive that does not read: say what is wrong with the file
    throw CheckpointDamaged(path, checkpoint_problem(path).value_or("its archive does not read"));
  }
  if (!manifest) {
    return nullptr;
  }
  if (const auto problem = checkpoint_problem(path)) {
    throw CheckpointDamaged(path, *problem);
  }
  std::unique_ptr<ShardReader> r(new ShardReader());
  r->m_path = path;
  r->m_meta = read_checkpoint_meta(root);
  try {
    const json manifest = json::parse(text.toStringRef());
    r->m_adam_steps = manifest.at("adam_steps").get<int64_t>();
    r->m_layout = manifest.value("layout", std::string());
    for (const auto& s : manifest.at("shards")) {
      const std::string file = s.at("file").get<std::string>();
      if (file.empty() || file.find('/') != std::string::npos || file[0] == '.') {
        throw CheckpointDamaged(path, "its manifest names a shard outside its folder: '" + file + "'");
      }
      r->m_shards.push_back({file, s.at("sha256").get<std::string>(), nullptr});
      const auto& index = s.at("index");
      for (size_t e = 0; e < index.size(); ++e) {
        const Piece piece{r->m_shards.size() - 1, e, index[e].at(1).get<int64_t>(), index[e].at(2).get<int64_t>()};
        if (piece.begin < 0 || piece.length < 0) {
          throw CheckpointDamaged(path, "its manifest gives a shard a negative range");
        }
        r->m_index[index[e].at(0).get<std::string>()].push_back(piece);
      }
    }
  } catch (const json::exception& e) {
    throw CheckpointDamaged(path, std::string("its manifest does not read: ") + e.what());
  }
  if (r->m_adam_steps < 0 || r->m_adam_steps > r->m_meta.step || r->m_shards.empty()) {
    throw CheckpointDamaged(path, "its manifest is not one sweep writes (AdamW steps " + std::to_string(r->m_adam_steps) +
                                      " at step " + std::to_string(r->m_meta.step) + ", " +
                                      std::to_string(r->m_shards.size()) + " shards)");
  }
  for (auto& [name, pieces] : r->m_index) {
    std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
  }
  return r;
}

std::vector<ShardReader::Piece> ShardReader::pieces(const std::string& name, int64_t begin, int64_t length) const {
  std::vector<Piece> out;
  const auto it = m_index.find(name);
  int64_t covered = begin;  // the pieces are in order of begin and do not overlap
  if (it != m_index.end()) {
    for (const Piece& p : it->second) {
      if (p.begin < begin + length && p.begin + p.length > begin && p.length > 0) {
        if (p.begin > covered) {
          break;
        }
        out.push_back(p);
        covered = std::max(covered, p.begin + p.length);
      }
    }
  }
  if (covered < begin + length) {
    throw Error("checkpoint " + m_path + " does not hold elements " + std::to_string(covered) + "… of weight '" +
                    name + "' — it was written for another model (another config.yaml)",
                Exit::bad_input);
  }
  return out;
}

std::string ShardReader::problem(size_t shard) const {
  const std::string file = (fs::path(m_path).parent_path() / m_shards[shard].file).string();
  if (const auto problem = checkpoint_problem(file)) {
    return "its shard " + m_shards[shard].file + ": " + *problem;
  }
  if (checkpoint_sha256(file) != m_shards[shard].sha256) {
    return "its shard " + m_shards[shard].file +
           " is not the file it names (its SHA-256 differs: another step's or rank's shard put in its place?)";
  }
  return "";
}

std::vector<std::string> ShardReader::files() const {
  std::vector<std::string> out;
  for (const Shard& s : m_shards) {
    out.push_back(s.file);
  }
  return out;
}

torch::serialize::InputArchive& ShardReader::archive(size_t shard) {
  Shard& s = m_shards[shard];
  if (!s.archive) {
    s.archive = std::make_unique<torch::serialize::InputArchive>();
    open_checkpoint_archive((fs::path(m_path).parent_path() / s.file).string(), *s.archive, torch::kCPU);
  }
  return *s.archive;
}

torch::Tensor ShardReader::read(const std::string& name, int64_t begin, int64_t length, const char* kind) {
  torch::Tensor out = torch::empty({length}, torch::kFloat);
  for (const Piece& p : pieces(name, begin, length)) {
    torch::Tensor t;
    archive(p.shard).read(std::to_string(p.entry) + "." + kind, t);
    if (t.dim() != 1 || t.numel() != p.length || t.scalar_type() != torch::kFloat) {
      throw Error("checkpoint " + m_path + ": shard " + m_shards[p.shard].file + " holds " + kind + " of '" + name +
                      "' unlike its index says — it was not written by sweep",
                  Exit::bad_input);
    }
    const int64_t from = std::max(begin, p.begin), to = std::min(begin + length, p.begin + p.length);
    out.narrow(0, from - begin, to - from).copy_(t.narrow(0, from - p.begin, to - from));
  }
  return out;
}

CheckpointMeta ShardReader::load(const std::vector<ShardRead>& reads, int64_t rank, const torch::Device& device,
                                 Communicator* comm) {
  // The shards this rank reads (and its own, for its dropout stream), checked before any is read.
  std::set<size_t> needed;
  for (const ShardRead& r : reads) {
    const auto it = m_index.find(r.name);
    if (it == m_index.end() || it->second.back().begin + it->second.back().length != r.numel) {
      throw Error("checkpoint " + m_path + " holds weight '" + r.name + "' " +
                      (it == m_index.end() ? "not at all" : "with another number of elements") +
                      " — it was written for another model (another config.yaml)",
                  Exit::bad_input);
    }
    for (const Piece& p : pieces(r.name, r.begin, r.length)) {
      needed.insert(p.shard);
    }
  }
  const bool own = rank >= 0 && rank < world();
  if (own) {
    needed.insert(static_cast<size_t>(rank));
  }
  std::string mine;
  for (size_t s : needed) {
    if (mine = problem(s); !mine.empty()) {
      break;
    }
  }
  if (comm != nullptr && comm->world() > 1) {  // every rank says what it found: all fall back together
    for (const std::string& found : all_gather_text(*comm, mine)) {
      if (!found.empty()) {
        throw CheckpointDamaged(m_path, found);
      }
    }
  } else if (!mine.empty()) {
    throw CheckpointDamaged(m_path, mine);
  }
  try {
    for (const ShardRead& r : reads) {
      if (r.moments) {
        r.put(read(r.name, r.begin, r.length, "exp_avg"), read(r.name, r.begin, r.length, "exp_avg_sq"));
      } else {
        r.put(read(r.name, r.begin, r.length, "value"), torch::Tensor());
      }
    }
  } catch (const c10::Error& e) {  // a record its index names is missing: not sweep's writing
    const std::string why = e.what_without_backtrace();
    throw Error("checkpoint " + m_path + " does not read (" + why.substr(0, why.find('\n')) + ")", Exit::bad_input);
  }
  CheckpointMeta meta = m_meta;
  if (own) {
    restore_rng(archive(static_cast<size_t>(rank)), "rng_state", meta, device);
  } else {
    meta.rng_restored = false;
    meta.rng_device.clear();
  }
  return meta;
}

void ShardReader::load_weights(GPT& model) {
  torch::NoGradGuard no_grad;
  std::vector<ShardRead> reads;
  for (const auto& named : {model->named_parameters(), model->named_buffers()}) {
    for (const auto& item : named) {
      reads.push_back(ShardRead::into(item.key(), item.value().numel(), 0, item.value()));
    }
  }
  if (reads.size() != m_index.size()) {
    throw Error("checkpoint " + m_path + " holds " + std::to_string(m_index.size()) + " tensors, the model " +
                    std::to_string(reads.size()) + " — it was written for another model (another config.yaml)",
                Exit::bad_input);
  }
  load(reads, -1, torch::kCPU, nullptr);
}

}  // namespace sweep
