#include "data/import.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>

#include "data/gpt2.h"
#include "data/token_shard.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace {

constexpr int64_t k_out_shard_tokens = 100'000'000;  // llm.c's shard size

[[noreturn]] void bad(const std::string& what) { throw Error(what, Exit::bad_input); }

int32_t header_version(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  int32_t head[2] = {0, 0};
  in.read(reinterpret_cast<char*>(head), sizeof head);
  return in && head[0] == k_shard_magic ? head[1] : -1;
}

// Reads a shard's tokens in blocks, in order: f(tokens, count, position of the first).
template <class F>
void scan_shard(const fs::path& path, int64_t count, F&& f) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(k_shard_header_ints * 4);
  std::vector<uint16_t> block(1 << 20);
  for (int64_t at = 0; at < count;) {
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(block.size()), count - at);
    in.read(reinterpret_cast<char*>(block.data()), n * 2);
    if (!in) {
      throw io_error("read the token shard", path.string(), EIO);
    }
    f(block.data(), n, at);
    at += n;
  }
}

// Appends tokens to shards of at most k_out_shard_tokens under `dir`: NAME_000.bin, NAME_001.bin...
struct ShardWriter {
  fs::path dir;
  std::string folder;  // its name inside the dataset folder
  std::string name;
  SplitInfo* split;
  std::vector<uint16_t> tokens;
  void push(uint16_t t) {
    tokens.push_back(t);
    if (static_cast<int64_t>(tokens.size()) >= k_out_shard_tokens) {
      flush();
    }
  }
  void flush() {
    const std::string file = name + "_" + std::to_string(1000 + split->shards.size()).substr(1) + ".bin";
    write_shard((dir / file).string(), tokens);
    split->shards.push_back(folder + "/" + file);
    split->tokens += static_cast<int64_t>(tokens.size());
    tokens.clear();
  }
};

// Removes the folders in `dir` whose names start with `prefix`, except `keep`.
void remove_folders(const fs::path& dir, const std::string& prefix, const std::string& keep = "") {
  std::vector<fs::path> found;  // collected first: removing while iterating a directory is unspecified
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    std::error_code ec;  // a link that loops is none of these folders
    if (name.rfind(prefix, 0) == 0 && name != keep && entry.is_directory(ec)) {
      found.push_back(entry.path());
    }
  }
  for (const auto& path : found) {
    fs::remove_all(path);
  }
}

// The shards of an llm.c folder by their names: *_train*, *_val*, and those --test names.
struct Shards {
  std::vector<std::string> train, val, test;
};

Shards find_shards(const fs::path& dir, const ImportOptions& o) {
  Shards found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".bin") != 0) {
      continue;
    }
    std::error_code ec;
    const bool regular = entry.is_regular_file(ec);
    if (ec) {  // a link that loops or leads nowhere: the folder's content, not the disk, is wrong
      bad(entry.path().string() + ": " + ec.message() + " — a shard must be a file (or a link to one)");
    }
    if (!regular) {
      continue;
    }
    if (std::find(o.test_shards.begin(), o.test_shards.end(), name) != o.test_shards.end()) {
      found.test.push_back(name);
    } else if (name.find("_train") != std::string::npos) {
      found.train.push_back(name);
    } else if (name.find("_val") != std::string::npos) {
      found.val.push_back(name);
    }
  }
  for (const auto& name : o.test_shards) {
    if (std::find(found.test.begin(), found.test.end(), name) == found.test.end()) {
      bad("--test " + name + ": no such shard in " + o.dir + " (give file names inside the folder)");
    }
  }
  for (auto* names : {&found.train, &found.val, &found.test}) {
    std::sort(names->begin(), names->end());
  }
  if (found.val.empty() && !found.test.empty()) {
    bad("--test names every val shard of " + o.dir + " — leave at least one for the val split");
  }
  if (found.train.empty() || found.val.empty()) {
    bad(o.dir + ": found " + std::to_string(found.train.size()) + " train and " + std::to_string(found.val.size()) +
        " val shards — llm.c names them like fineweb_train_000001.bin and fineweb_val_000000.bin");
  }
  return found;
}

// Every shard's token count, from headers of one vocabulary (llm.c's version 1: GPT-2's uint16
// tokens); train and val must hold some.
std::map<std::string, int64_t> count_tokens(const fs::path& dir, const Shards& shards, const std::string& where) {
  std::map<std::string, int64_t> counts;
  std::string first_shard;
  for (const auto* names : {&shards.train, &shards.val, &shards.test}) {
    for (const auto& name : *names) {
      const fs::path path = dir / name;
      const int32_t version = header_version(path);
      if (version != -1 && version != k_shard_version) {
        bad("token shard " + path.string() + ": version " + std::to_string(version) +
            (version == 2 ? " (llm.c's uint32 tokens, e.g. LLaMA 3's)" : "") +
            (first_shard.empty() ? std::string() : ", while " + first_shard + " is version 1 (GPT-2's uint16 tokens): the shards mix vocabularies")
            + " — sweep imports GPT-2-tokenized shards (version 1)");
      }
      counts[name] = shard_tokens(path.string());  // magic, version and exact length
      if (first_shard.empty()) {
        first_shard = name;
      }
    }
  }
  for (const auto& [split, names] : {std::pair<const char*, const std::vector<std::string>*>{"train", &shards.train},
                                     {"val", &shards.val}}) {
    int64_t tokens = 0;
    for (const auto& name : *names) {
      tokens += counts[name];
    }
    if (tokens == 0) {
      bad(where + ": its " + split + " shards hold no token — nothing to " +
          (std::string(split) == "train" ? "train on" : "validate on"));
    }
  }
  return counts;
}

// Reads shards token by token: every token GPT-2's; a split's tokens, documents (<|endoftext|>s)
// and bytes counted.
class ShardScanner {
 public:
  ShardScanner(const fs::path& dir, std::map<std::string, int64_t> counts, const Gpt2Bpe& gpt2)
      : m_dir(dir), m_counts(std::move(counts)), m_bytes_of(Gpt2Bpe::k_vocab) {
    for (int id = 0; id < Gpt2Bpe::k_vocab; ++id) {
      m_bytes_of[static_cast<size_t>(id)] = id == Gpt2Bpe::k_eot ? 0 : static_cast<int64_t>(gpt2.token_bytes(id).size());
    }
  }
  int64_t bytes_of(uint16_t token) const { return m_bytes_of[token]; }
  int64_t scanned() const { return m_scanned; }

  // f sees each token.
  template <class F>
  void scan(const std::vector<std::string>& names, SplitInfo& split, F&& f) {
    for (const auto& name : names) {
      const int64_t count = m_counts.at(name);
      split.tokens += count;
      scan_shard(m_dir / name, count, [&](const uint16_t* t, int64_t n, int64_t at) {
        for (int64_t i = 0; i < n; ++i) {
          if (t[i] >= Gpt2Bpe::k_vocab) {
            bad("token shard " + (m_dir / name).string() + ": token " + std::to_string(t[i]) + " at position " +
                std::to_string(at + i) + " is outside GPT-2's vocabulary (50257) — the shards mix vocabularies or "
                "are not GPT-2-tokenized");
          }
          split.bytes += m_bytes_of[t[i]];
          split.documents += t[i] == Gpt2Bpe::k_eot;
          f(t[i]);
        }
      });
      m_scanned += count;
    }
  }
  void scan(const std::vector<std::string>& names, SplitInfo& split) {
    scan(names, split, [](uint16_t) {});
  }

 private:
  fs::path m_dir;
  std::map<std::string, int64_t> m_counts;
  std::vector<int64_t> m_bytes_of;
  int64_t m_scanned = 0;
};

// Val's documents carved into val and test (carved_to_test), as new shards in `tmp` (`folder`
// inside the dataset): neither may be left empty.
void carve_val(const ImportOptions& o, const std::vector<std::string>& val, ShardScanner& scanner, const fs::path& tmp,
               const std::string& folder, DatasetInfo& info) {
  SplitInfo scanned_val;
  ShardWriter to_val{tmp, folder, "val", &info.splits["val"], {}};
  ShardWriter to_test{tmp, folder, "test", &info.splits["test"], {}};
  int64_t document = -1;  // tokens before val's first <|endoftext|> belong to document 0
  ShardWriter* current = &to_val;
  scanner.scan(val, scanned_val, [&](uint16_t t) {
    if (t == Gpt2Bpe::k_eot || document < 0) {
      document += 1;
      current = carved_to_test(document, o.seed, o.test_fraction) ? &to_test : &to_val;
      current->split->documents += 1;
    }
    current->split->bytes += scanner.bytes_of(t);
    current->push(t);
  });
  for (ShardWriter* w : {&to_val, &to_test}) {
    if (w->split->documents == 0) {
      bad(o.dir + ": val's " + plural(document + 1, "document") + " (<|endoftext|> starts each) left the " + w->name +
          " split empty at --test-fraction " + format_number("%g", o.test_fraction) + " and --seed " +
          std::to_string(o.seed) + " — change them, or pass --test with shards of its own");
    }
    w->flush();
  }
  for (const char* split : {"val", "test"}) {
    if (info.splits[split].tokens < 2) {  // not one prediction
      bad(o.dir + ": the carved " + std::string(split) + " split has " + std::to_string(info.splits[split].tokens) +
          " tokens — too few; pass --test with shards of its own");
    }
  }
}

}  // namespace

bool carved_to_test(int64_t document, int64_t seed, double fraction) {
  // splitmix64 of (seed, document): the same split on every machine and library.
  uint64_t z = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(document) + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 < fraction;
}

DatasetInfo import_llmc(const ImportOptions& o, ImportStats* stats) {
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path dir(o.dir);
  if (!fs::is_directory(dir)) {
    bad(o.dir + ": no such folder — name the folder holding llm.c's *_train*.bin and *_val*.bin shards");
  }
  if (fs::exists(dir / "dataset.yaml") && !o.force) {
    bad((dir / "dataset.yaml").string() + " exists — pass --force to import again over it");
  }
  if (!(o.test_fraction > 0 && o.test_fraction < 1)) {  // nan too
    bad("--test-fraction " + std::to_string(o.test_fraction) + ": a fraction of val's documents, in (0, 1)");
  }
  // One import of a folder at a time (its lock file goes with it); what a killed one left (its
  // unfinished folder) goes.
  std::string holder;
  const auto lock = FileLock::try_lock(dir / ".sweep-import.lock", &holder, /*remove=*/true);
  if (!lock) {
    bad("another `sweep data import` (pid " + holder + ") is writing " + o.dir + " — wait for it");
  }
  remove_folders(dir, ".sweep-import-");

  const Shards shards = find_shards(dir, o);
  std::map<std::string, int64_t> counts = count_tokens(dir, shards, o.dir);
  const Gpt2Files files = gpt2_tokenizer_files(o.tokenizer_dir);
  const Gpt2Bpe gpt2(files.encoder_json, files.vocab_bpe);
  ShardScanner scanner(dir, std::move(counts), gpt2);
  DatasetInfo info;
  info.dir = o.dir;
  info.tokenizer = TokenizerKind::gpt2;
  // Everything the import writes but dataset.yaml lives in a folder of its own, named afresh each
  // time: dataset.yaml (renamed into place last) names either the old folder or the new one, so a
  // kill at any point leaves a consistent dataset, and the user's files in DIR are never touched.
  const std::string folder =
      "sweep-import-" +
      std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count()) +
      "-" + std::to_string(::getpid());
  info.tokenizer_model = folder + "/encoder.json";
  info.vocab_size = Gpt2Bpe::k_vocab;
  info.eot_token = Gpt2Bpe::k_eot;
  SplitInfo& train_split = info.splits["train"];
  train_split.shards = shards.train;
  scanner.scan(shards.train, train_split);

  // ---- val and test: named shards as they are, or val's documents carved into the folder ----
  const fs::path tmp = dir / ("." + folder);
  fs::create_directories(tmp);
  try {
    if (!shards.test.empty()) {
      for (const auto& [names, split] : {std::pair{&shards.val, "val"}, std::pair{&shards.test, "test"}}) {
        SplitInfo& s = info.splits[split];
        s.shards = *names;
        scanner.scan(*names, s);
      }
    } else {
      carve_val(o, shards.val, scanner, tmp, folder, info);
    }

    // ---- into place: the folder, then dataset.yaml; then the folders it no longer names ----
    write_file_atomic(tmp / "encoder.json", read_file(files.encoder_json));
    write_file_atomic(tmp / "vocab.bpe", read_file(files.vocab_bpe));
    fs::rename(tmp, dir / folder);
    write_dataset_yaml(info, o.dir);
    remove_folders(dir, "sweep-import-", folder);  // earlier imports' folders, no longer named
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }
  if (stats != nullptr) {
    stats->scanned_tokens = scanner.scanned();
    stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return info;
}

}  // namespace sweep
