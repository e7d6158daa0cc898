#include "data/prepare.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "data/gpt2.h"
#include "data/token_shard.h"
#include "data/tokenizer.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace {

std::string read_maybe_gz(const fs::path& path) {
  if (!ends_with(path.string(), ".gz")) {
    return read_file(path);
  }
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    throw Error("cannot open " + path.string(), Exit::bad_input);
  }
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) {
    out.append(buf, static_cast<size_t>(n));
  }
  int err = 0;
  std::string message = n < 0 ? gzerror(f, &err) : "";
  gzclose(f);
  if (n < 0) {
    throw Error(path.string() + ": not a valid gzip file (" + message + ")", Exit::bad_input);
  }
  return out;
}

// Documents of one file separated by blank lines.
std::vector<std::string> split_paragraphs(const std::string& text) {
  std::vector<std::string> docs;
  std::string current;
  for (const auto& line : split(text, '\n')) {
    if (trim(line).empty()) {
      if (!current.empty()) {
        docs.push_back(current);
        current.clear();
      }
      continue;
    }
    current += line + "\n";
  }
  if (!current.empty()) {
    docs.push_back(current);
  }
  return docs;
}

std::string clean(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '\0'), text.end());
  return text;
}

// Shuffles document indices with a seeded generator of our own (std distributions differ
// between standard libraries; a dataset must be the same everywhere).
std::vector<size_t> seeded_permutation(size_t n, uint64_t seed) {
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; ++i) {
    idx[i] = i;
  }
  std::mt19937_64 rng(seed);
  for (size_t i = n; i > 1; --i) {
    size_t j = static_cast<size_t>(rng() % i);
    std::swap(idx[i - 1], idx[j]);
  }
  return idx;
}

size_t split_count(size_t n, double fraction) {
  if (fraction <= 0) {
    return 0;
  }
  return std::max<size_t>(1, static_cast<size_t>(static_cast<double>(n) * fraction + 0.5));
}

}  // namespace

std::string strip_pos_tags(const std::string& text) {
  std::string out;
  for (const auto& line : split(text, '\n')) {
    std::string words;
    size_t i = 0;
    while (i < line.size()) {
      size_t start = line.find_first_not_of(" \t\r", i);
      if (start == std::string::npos) {
        break;
      }
      size_t end = line.find_first_of(" \t\r", start);
      std::string token = line.substr(start, end == std::string::npos ? std::string::npos : end - start);
      size_t slash = token.rfind('/');
      if (slash != std::string::npos && slash > 0) {
        token.resize(slash);
      }
      words += (words.empty() ? "" : " ") + token;
      i = end == std::string::npos ? line.size() : end;
    }
    if (!words.empty()) {
      out += words + "\n";
    }
  }
  return out;
}

std::vector<std::string> read_documents(const std::string& input, bool strip_tags) {
  std::vector<std::string> docs;
  if (fs::is_directory(input)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(input)) {
      if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') {
        files.push_back(entry.path());
      }
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::string text = clean(read_maybe_gz(f));
      if (strip_tags) {
        text = strip_pos_tags(text);
      }
      if (!trim(text).empty()) {
        docs.push_back(text);
      }
    }
  } else if (fs::is_regular_file(input)) {
    std::string text = clean(read_maybe_gz(input));
    for (auto& doc : split_paragraphs(text)) {
      docs.push_back(strip_tags ? strip_pos_tags(doc) : doc);
    }
  } else if (fs::exists(input)) {  // a device, a pipe, a socket: no documents to read
    throw Error("--input " + input + ": neither a file nor a folder of documents — give a .txt or .txt.gz file, or a "
                "folder of them",
                Exit::bad_input);
  } else {
    throw Error("--input " + input + ": no such file or directory", Exit::bad_input);
  }
  if (docs.empty()) {
    throw Error("--input " + input + ": no text found", Exit::bad_input);
  }
  return docs;
}

namespace {

// The options checked before any work: the BPE vocabulary of a bpe:N tokenizer (0 for the others).
int64_t checked_options(const PrepareOptions& o) {
  int64_t bpe_vocab = 0;
  if (o.tokenizer.rfind("bpe:", 0) == 0) {
    try {
      bpe_vocab = std::stoll(o.tokenizer.substr(4));
    } catch (const std::exception&) {
      bpe_vocab = -1;
    }
    if (bpe_vocab < 260 || bpe_vocab > 65536) {
      throw Error("--tokenizer " + o.tokenizer + ": the BPE vocabulary must be in [260, 65536], e.g. bpe:4096",
                  Exit::bad_input);
    }
  } else if (o.tokenizer != to_string(TokenizerKind::bytes) && o.tokenizer != to_string(TokenizerKind::gpt2)) {
    throw Error("--tokenizer " + o.tokenizer + ": expected bytes, bpe:<vocab> (e.g. bpe:4096) or gpt2",
                Exit::bad_input);
  }
  if (!o.tokenizer_dir.empty() && o.tokenizer != to_string(TokenizerKind::gpt2)) {
    throw Error("--tokenizer-dir is for --tokenizer gpt2 (GPT-2's encoder.json and vocab.bpe)", Exit::bad_input);
  }
  if (!(o.val_fraction >= 0 && o.test_fraction >= 0 && o.val_fraction + o.test_fraction < 1)) {  // NaN too
    throw Error("--val and --test must be fractions that leave documents for training", Exit::bad_input);
  }
  return bpe_vocab;
}

// The output replaces a folder only when it is a dataset this command wrote (with --force): never a
// folder of the user's files, nor an imported llm.c folder.
void check_output_folder(const PrepareOptions& o) {
  if (fs::exists(o.out)) {
    if (!fs::is_directory(o.out)) {
      throw Error("--out " + o.out + " is a file — name a folder", Exit::bad_input);
    }
    const bool dataset = fs::exists(fs::path(o.out) / "dataset.yaml");
    for (const auto& entry : fs::directory_iterator(o.out)) {
      const std::string name = entry.path().filename().string();
      const bool ours = entry.is_regular_file() &&
                        (name == "dataset.yaml" || name == "tokenizer.model" || name == "encoder.json" ||
                         name == "vocab.bpe" ||
                         ((name.rfind("train_", 0) == 0 || name.rfind("val_", 0) == 0 || name.rfind("test_", 0) == 0) &&
                          ends_with(name, ".bin")));
      if (!ours || !dataset) {
        throw Error("--out " + o.out + " holds " + name + ", which `sweep data prepare` did not write — name an "
                        "empty or new folder (it replaces only a dataset it prepared, with --force)",
                    Exit::bad_input);
      }
    }
    if (dataset && !o.force) {
      throw Error(o.out + " already holds a dataset — pass --force to replace it", Exit::bad_input);
    }
  }

}

// The documents of each split (train, val, test), in corpus order: a seeded permutation's first
// ones test, the next val.
std::map<std::string, std::vector<size_t>> split_documents(size_t documents, const PrepareOptions& o) {
  const size_t n_test = split_count(documents, o.test_fraction);
  const size_t n_val = split_count(documents, o.val_fraction);
  if (n_test + n_val >= documents) {
    throw Error("--input " + o.input + " has only " + std::to_string(documents) +
                    " documents: too few to split into train/val/test",
                Exit::bad_input);
  }
  std::vector<size_t> order = seeded_permutation(documents, static_cast<uint64_t>(o.seed));
  std::map<std::string, std::vector<size_t>> members;
  for (size_t i = 0; i < order.size(); ++i) {
    const char* split = i < n_test ? "test" : i < n_test + n_val ? "val" : "train";
    members[split].push_back(order[i]);
  }
  for (auto& [name, idx] : members) {
    std::sort(idx.begin(), idx.end());  // keep the corpus order inside a split
  }
  members.try_emplace("val");
  members.try_emplace("test");
  return members;
}

// The tokenizer the options name, its files written to `tmp` (a BPE one trained on `train_docs`).
std::unique_ptr<Tokenizer> make_tokenizer(const PrepareOptions& o, int64_t bpe_vocab,
                                          const std::vector<std::string>& train_docs, const fs::path& tmp,
                                          DatasetInfo& info) {
  if (bpe_vocab > 0) {
    info.tokenizer = TokenizerKind::bpe;
    info.tokenizer_model = "tokenizer.model";
    return train_bpe_tokenizer(train_docs, bpe_vocab, (tmp / "tokenizer").string(), o.threads);
  }
  if (o.tokenizer == to_string(TokenizerKind::gpt2)) {
    // The dataset keeps its own copy of the tables (decoding a sample needs them).
    const Gpt2Files files = gpt2_tokenizer_files(o.tokenizer_dir);
    std::unique_ptr<Tokenizer> tok = make_gpt2_tokenizer(files.encoder_json, files.vocab_bpe);
    fs::copy_file(files.encoder_json, tmp / "encoder.json");
    fs::copy_file(files.vocab_bpe, tmp / "vocab.bpe");
    info.tokenizer = TokenizerKind::gpt2;
    info.tokenizer_model = "encoder.json";
    return tok;
  }
  info.tokenizer = TokenizerKind::bytes;
  return make_bytes_tokenizer();
}

// One split's documents, each ended by <|endoftext|>, as shards NAME_000.bin... of about
// shard_tokens tokens in `tmp` (one, maybe empty, at least).
SplitInfo write_split(const std::string& name, const std::vector<size_t>& idx, const Encoded& encoded,
                      const std::vector<std::string>& docs, int64_t shard_tokens, const fs::path& tmp) {
  SplitInfo split;
  std::vector<uint16_t> tokens;
  auto flush = [&]() {
    const std::string file = name + "_" + std::to_string(1000 + split.shards.size()).substr(1) + ".bin";
    split.tokens += static_cast<int64_t>(tokens.size());
    write_shard((tmp / file).string(), tokens);
    split.shards.push_back(file);
    tokens.clear();
  };
  for (size_t i : idx) {
    for (int id : encoded.documents[i]) {
      tokens.push_back(static_cast<uint16_t>(id));
    }
    tokens.push_back(static_cast<uint16_t>(encoded.eot_token));
    split.bytes += static_cast<int64_t>(docs[i].size());
    split.documents += 1;
    if (static_cast<int64_t>(tokens.size()) >= shard_tokens) {
      flush();
    }
  }
  if (!tokens.empty() || split.shards.empty()) {
    flush();
  }
  return split;
}

}  // namespace

DatasetInfo prepare_dataset(const PrepareOptions& o, double* encode_seconds) {
  const int64_t bpe_vocab = checked_options(o);
  check_output_folder(o);
  std::vector<std::string> docs = read_documents(o.input, o.strip_tags);
  std::map<std::string, std::vector<size_t>> members = split_documents(docs.size(), o);

  // ---- build in a temporary folder; rename into place at the end ----
  fs::path out(o.out);
  fs::path tmp = out.parent_path() / ("." + out.filename().string() + ".tmp." + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    DatasetInfo info;
    info.dir = o.out;
    std::vector<std::string> train_docs;
    if (bpe_vocab > 0) {
      for (size_t i : members["train"]) {
        train_docs.push_back(docs[i]);
      }
    }
    const std::unique_ptr<Tokenizer> tok = make_tokenizer(o, bpe_vocab, train_docs, tmp, info);
    const auto t0 = std::chrono::steady_clock::now();
    const Encoded encoded = tok->encode(docs);
    if (encode_seconds != nullptr) {
      *encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    info.vocab_size = encoded.vocab_size;
    info.eot_token = encoded.eot_token;
    for (const auto& [name, idx] : members) {
      info.splits[name] = write_split(name, idx, encoded, docs, o.shard_tokens, tmp);
    }
    write_dataset_yaml(info, tmp.string());

    if (fs::exists(out)) {
      fs::path old = out.parent_path() / ("." + out.filename().string() + ".old." + std::to_string(::getpid()));
      fs::rename(out, old);
      fs::rename(tmp, out);
      fs::remove_all(old);
    } else {
      fs::rename(tmp, out);
    }
    return info;
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }
}

}  // namespace sweep
