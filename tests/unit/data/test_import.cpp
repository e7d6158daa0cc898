#include <doctest/doctest.h>

#include <fstream>
#include <random>

#include "data/dataset.h"
#include "data/gpt2.h"
#include "data/import.h"
#include "data/token_shard.h"
#include "data/tokens.h"
#include "helpers.h"
#include "util/error.h"
#include "util/fs.h"

using namespace sweep;

namespace {

// llm.c's fineweb.py layout: each document <|endoftext|> + its GPT-2 tokens, shards filled to a
// fixed size (documents cut across shards), named fineweb_{val,train}_%06d.bin, val first.
struct LlmcFolder {
  std::vector<std::string> docs;
  std::vector<uint16_t> val, train;
  int64_t val_bytes = 0;
  LlmcFolder(const test::TempDir& dir, int n_docs, int64_t val_docs, int64_t shard_size) {
    std::mt19937 rng(9);
    const char* words[] = {"the", "jury", "said", "café", "it's", "2026", "naïve", "data", "won't", "中文"};
    std::vector<uint16_t> stream;
    for (int d = 0; d < n_docs; ++d) {
      std::string text = "Doc " + std::to_string(d) + ":";
      for (unsigned w = 0; w < 5 + rng() % 30; ++w) {
        text += std::string(" ") + words[rng() % 10];
      }
      docs.push_back(text);
      stream.push_back(Gpt2Bpe::k_eot);
      for (const int id : test::gpt2().encode(text)) {
        stream.push_back(static_cast<uint16_t>(id));
      }
      if (d + 1 == val_docs) {
        val = stream;
        stream.clear();
        for (const auto& doc : docs) {
          val_bytes += static_cast<int64_t>(doc.size());
        }
      }
    }
    train = stream;
    write_shard(dir.str("fineweb_val_000000.bin"), val);
    for (size_t at = 0, k = 1; at < train.size(); at += shard_size, ++k) {
      write_shard(dir.str("fineweb_train_" + std::to_string(1000000 + k).substr(1) + ".bin"),
                  std::vector<uint16_t>(train.begin() + at, train.begin() + std::min(train.size(), at + shard_size)));
    }
  }
};

std::string import_error(const ImportOptions& o) {
  return test::bad_input_message([&] { import_llmc(o); });
}

}  // namespace

TEST_CASE("llm.c's shards import as they are: train in place, test carved from val by the seeded rule") {
  test::TempDir dir;
  const LlmcFolder folder(dir, 200, 60, 1000);
  write_file_atomic(dir.str("encoder.json"), "the user's own");
  ImportOptions o;
  o.dir = dir.str();
  const DatasetInfo info = import_llmc(o);
  CHECK(info.tokenizer == TokenizerKind::gpt2);
  CHECK(info.vocab_size == 50257);
  CHECK(info.eot_token == 50256);
  const DatasetInfo read = read_dataset(dir.str());
  CHECK(read.splits.at("train").shards.front() == "fineweb_train_000001.bin");
  CHECK(ShardTokens(read, "train").all() == folder.train);
  // val ∪ test = llm.c's val, document for document, in order; the rule decides which.
  std::vector<uint16_t> val = ShardTokens(read, "val").all(), test = ShardTokens(read, "test").all();
  CHECK(val.front() == Gpt2Bpe::k_eot);
  CHECK(test.front() == Gpt2Bpe::k_eot);
  std::vector<uint16_t> merged;
  size_t iv = 0, it = 0;
  for (int64_t d = 0; d < 60; ++d) {
    std::vector<uint16_t>& from = carved_to_test(d, 1234, 0.5) ? test : val;
    size_t& at = &from == &test ? it : iv;
    do {
      merged.push_back(from[at++]);
    } while (at < from.size() && from[at] != Gpt2Bpe::k_eot);
  }
  CHECK(iv == val.size());
  CHECK(it == test.size());
  CHECK(merged == folder.val);
  CHECK(read.splits.at("val").documents + read.splits.at("test").documents == 60);
  CHECK(read.splits.at("test").documents > 15);
  CHECK(read.splits.at("val").documents > 15);
  // Bytes are GPT-2's bytes of the tokens: exactly the documents' text.
  CHECK(read.splits.at("val").bytes + read.splits.at("test").bytes == folder.val_bytes);
  CHECK(read.splits.at("train").documents == 140);
  // GPT-2's tables in the import's own folder; the user's files in DIR untouched.
  CHECK(read.tokenizer_model.rfind("sweep-import-", 0) == 0);
  CHECK(fs::exists(fs::path(dir.str()) / read.tokenizer_model));
  CHECK(read_file(dir.str("encoder.json")) == "the user's own");
  // Again over it: refused without --force; another seed carves another test split, in a new
  // folder, and the earlier one goes once dataset.yaml names the new one.
  CHECK(import_error(o).find("exists — pass --force") != std::string::npos);
  const std::vector<uint16_t> seed_1234 = ShardTokens(read, "test").all();
  o.force = true;
  o.seed = 7;
  import_llmc(o);
  const DatasetInfo again = read_dataset(dir.str());
  CHECK(ShardTokens(again, "test").all() != seed_1234);
  int folders = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) {
    folders += e.is_directory();
  }
  CHECK(folders == 1);
  CHECK(fs::exists(fs::path(dir.str()) / again.tokenizer_model));
  // One import of a folder at a time.
  const auto held = FileLock::try_lock(dir.path / ".sweep-import.lock");
  REQUIRE(held);
  CHECK(import_error(o).find("another `sweep data import` (pid") != std::string::npos);
}

TEST_CASE("--test names the test shards, and bad llm.c folders are refused with nothing written") {
  test::TempDir dir;
  const LlmcFolder folder(dir, 80, 30, 500);
  write_shard(dir.str("fineweb_val_000001.bin"), std::vector<uint16_t>(folder.val.begin(), folder.val.begin() + 50));
  ImportOptions o;
  o.dir = dir.str();
  o.test_shards = {"fineweb_val_000001.bin"};
  const DatasetInfo info = import_llmc(o);
  CHECK(info.splits.at("test").shards == std::vector<std::string>{"fineweb_val_000001.bin"});
  CHECK(info.splits.at("val").shards == std::vector<std::string>{"fineweb_val_000000.bin"});
  for (const auto& e : fs::directory_iterator(dir.path)) {  // the shards, dataset.yaml, its folder: no lock left
    const std::string name = e.path().filename().string();
    CHECK((name.rfind("fineweb_", 0) == 0 || name == "dataset.yaml" || name.rfind("sweep-import-", 0) == 0));
  }
  fs::remove(dir.str("dataset.yaml"));
  o.test_shards = {"nope.bin"};
  CHECK(import_error(o).find("--test nope.bin: no such shard") != std::string::npos);
  o.test_shards.clear();

  // A header that lies about its length.
  {
    std::ofstream(dir.str("fineweb_train_000002.bin"), std::ios::app) << "x";
    CHECK(import_error(o).find("fineweb_train_000002.bin: has trailing bytes") != std::string::npos);
    fs::resize_file(dir.str("fineweb_train_000002.bin"), fs::file_size(dir.str("fineweb_train_000002.bin")) - 1);
  }
  // Another vocabulary's tokens (uint32, llm.c's version 2) among GPT-2's.
  {
    std::string raw = read_file(dir.str("fineweb_train_000001.bin"));
    raw[4] = 2;
    write_file_atomic(dir.str("fineweb_train_000003.bin"), raw);
    CHECK(import_error(o).find("version 2 (llm.c's uint32 tokens, e.g. LLaMA 3's), while") != std::string::npos);
    fs::remove(dir.str("fineweb_train_000003.bin"));
  }
  // A token GPT-2 does not have.
  {
    write_shard(dir.str("fineweb_train_000003.bin"), {50256, 17, 60000});
    CHECK(import_error(o).find("fineweb_train_000003.bin: token 60000 at position 2 is outside GPT-2's vocabulary") !=
          std::string::npos);
    fs::remove(dir.str("fineweb_train_000003.bin"));
  }
  // A val of one document cannot be split.
  {
    test::TempDir one;
    write_shard(one.str("x_train.bin"), {50256, 1, 2, 3});
    write_shard(one.str("x_val.bin"), {50256, 4, 5, 6});
    o.dir = one.str();
    CHECK(import_error(o).find("val's 1 document (<|endoftext|> starts each) left the") != std::string::npos);
    CHECK(!fs::exists(one.str("dataset.yaml")));
    int left = 0;
    for (const auto& e : fs::directory_iterator(one.path)) {
      left += e.is_directory();  // no folder left behind, finished or not
    }
    CHECK(left == 0);
  }
  // A train split of no token; a link that loops among the shards (bad input, not a disk's error)
  {
    test::TempDir empty_train;
    write_shard(empty_train.str("x_train.bin"), {});
    write_shard(empty_train.str("x_val.bin"), {50256, 4, 5, 6, 50256, 7});
    o.dir = empty_train.str();
    CHECK(import_error(o).find("its train shards hold no token — nothing to train on") != std::string::npos);
    fs::remove(empty_train.str("x_train.bin"));
    fs::create_symlink(empty_train.str("x_train.bin"), empty_train.str("loop_train.bin"));
    fs::create_symlink(empty_train.str("loop_train.bin"), empty_train.str("x_train.bin"));
    CHECK(import_error(o).find("loop_train.bin: Too many levels of symbolic links — a shard must be a file") !=
          std::string::npos);
    for (const auto& e : fs::directory_iterator(empty_train.path)) {  // refused: nothing written, no lock left
      const std::string name = e.path().filename().string();
      CHECK((name == "x_val.bin" || name == "x_train.bin" || name == "loop_train.bin"));
    }
  }
  o.dir = dir.str("none");
  CHECK(import_error(o).find("no such folder") != std::string::npos);
  o.dir = dir.str();
  fs::create_directories(dir.str("empty"));
  o.dir = dir.str("empty");
  CHECK(import_error(o).find("found 0 train and 0 val shards") != std::string::npos);
  CHECK(!fs::exists(dir.str("dataset.yaml")));
}
