#include <doctest/doctest.h>
#include <zlib.h>

#include <random>

#include "data/dataset.h"
#include "data/prepare.h"
#include "helpers.h"
#include "util/error.h"
#include "util/fs.h"

using namespace sweep;

namespace {

// n documents of made-up words; document i carries the marker "docmark<i>q" once.
void write_corpus(const fs::path& dir, int n) {
  fs::create_directories(dir);
  std::mt19937 rng(3);
  const char* syllables[] = {"ka", "lo", "mi", "ne", "ru", "ta", "vo", "si", "pe", "du", "ga", "ho"};
  for (int i = 0; i < n; ++i) {
    std::string text = "docmark" + std::to_string(i) + "q";
    for (int w = 0; w < 300; ++w) {
      text += (w % 12 == 11) ? ".\n" : " ";
      for (unsigned s = 0; s < 1 + rng() % 3; ++s) {
        text += syllables[rng() % 12];
      }
    }
    write_file_atomic(dir / ("doc" + std::to_string(100 + i)), text + "\n");
  }
}

std::string split_text(const DatasetInfo& info, const std::string& split) {
  std::string out;
  for (uint16_t t : ShardTokens(info, split).all()) {
    out += static_cast<char>(t);
  }
  return out;
}

}  // namespace

TEST_CASE("prepare with the bytes tokenizer splits by document") {
  test::TempDir dir;
  write_corpus(dir.path / "in", 40);
  PrepareOptions o;
  o.input = dir.str("in");
  o.out = dir.str("data");
  o.val_fraction = 0.1;
  o.test_fraction = 0.1;
  const DatasetInfo info = prepare_dataset(o);
  CHECK(info.vocab_size == 256);
  CHECK(info.splits.at("test").documents == 4);
  CHECK(info.splits.at("val").documents == 4);
  CHECK(info.splits.at("train").documents == 32);

  const DatasetInfo back = read_dataset(dir.str("data"));
  CHECK(back.splits.at("train").tokens == info.splits.at("train").tokens);
  const std::string train = split_text(back, "train"), test = split_text(back, "test");
  CHECK(static_cast<int64_t>(train.size()) == back.splits.at("train").tokens);
  // bytes: one token per byte plus one separator per document
  CHECK(back.splits.at("train").tokens == back.splits.at("train").bytes + 32);
  int in_test = 0;
  for (int i = 0; i < 40; ++i) {
    const std::string mark = "docmark" + std::to_string(i) + "q";
    const bool train_has = train.find(mark) != std::string::npos, test_has = test.find(mark) != std::string::npos;
    CHECK_FALSE((train_has && test_has));  // no document in two splits
    in_test += test_has;
  }
  CHECK(in_test == 4);

  // the same seed gives the same split; the folder holds nothing half-done
  o.force = true;
  prepare_dataset(o);
  CHECK(split_text(read_dataset(dir.str("data")), "test") == test);
  for (const auto& e : fs::directory_iterator(dir.path)) {
    CHECK(e.path().filename().string()[0] != '.');
  }
}

TEST_CASE("prepare refuses to overwrite a dataset without --force, and bad options write nothing") {
  test::TempDir dir;
  write_corpus(dir.path / "in", 10);
  PrepareOptions o;
  o.input = dir.str("in");
  o.out = dir.str("data");
  prepare_dataset(o);
  const std::string before = read_file(dir.str("data/dataset.yaml"));
  CHECK_THROWS_WITH_AS(prepare_dataset(o), doctest::Contains("--force"), Error);
  CHECK(read_file(dir.str("data/dataset.yaml")) == before);

  o.out = dir.str("other");
  o.tokenizer = "bpe:12";
  CHECK_THROWS_WITH_AS(prepare_dataset(o), doctest::Contains("[260, 65536]"), Error);
  o.tokenizer = "words";
  CHECK_THROWS_WITH_AS(prepare_dataset(o), doctest::Contains("expected bytes, bpe:<vocab> (e.g. bpe:4096) or gpt2"), Error);
  CHECK_FALSE(fs::exists(dir.str("other")));
}

TEST_CASE("a .txt.gz file is read as documents separated by blank lines") {
  test::TempDir dir;
  const std::string path = dir.str("corpus.txt.gz");
  gzFile f = gzopen(path.c_str(), "wb");
  for (int i = 0; i < 20; ++i) {
    const std::string para = "paragraph " + std::to_string(i) + " has some words in it.\nand a second line.\n\n";
    gzwrite(f, para.data(), static_cast<unsigned>(para.size()));
  }
  gzclose(f);
  const auto docs = read_documents(path, false);
  REQUIRE(docs.size() == 20);
  CHECK(docs[3] == "paragraph 3 has some words in it.\nand a second line.\n");
}

TEST_CASE("POS tags are stripped from tagged text (Brown's word/tag form)") {
  CHECK(strip_pos_tags("\n\n\tThe/at Fulton/np-tl County/nn-tl said/vbd ./.\n\n\tIt/pps was/bedz 1/2/cd\n") ==
        "The Fulton County said .\nIt was 1/2\n");
}

TEST_CASE("prepare with a BPE tokenizer trained by SentencePiece") {
  test::TempDir dir;
  write_corpus(dir.path / "in", 30);
  PrepareOptions o;
  o.input = dir.str("in");
  o.out = dir.str("bpe");
  o.tokenizer = "bpe:400";
  const DatasetInfo info = prepare_dataset(o);
  CHECK(info.tokenizer == TokenizerKind::bpe);
  CHECK(info.vocab_size > 260);
  CHECK(info.vocab_size <= 400);
  CHECK(info.eot_token == 2);
  CHECK(fs::exists(dir.str("bpe/tokenizer.model")));
  CHECK(info.bytes_per_token("train") > 1.5);  // merges make tokens longer than a byte
  const auto train = ShardTokens(read_dataset(dir.str("bpe")), "train").all();
  CHECK(static_cast<int64_t>(train.size()) == info.splits.at("train").tokens);
}

TEST_CASE("prepare never replaces a folder it did not write, --force or not") {
  test::TempDir dir;
  write_corpus(dir.path / "docs", 10);
  write_file_atomic(dir.path / "mine" / "notes.txt", "the user's");
  PrepareOptions o;
  o.input = dir.str("docs");
  o.out = dir.str("mine");
  CHECK_THROWS_WITH_AS(prepare_dataset(o), doctest::Contains("holds notes.txt, which `sweep data prepare` did not write"),
                       Error);
  o.force = true;
  CHECK_THROWS_AS(prepare_dataset(o), Error);
  CHECK(read_file(dir.path / "mine" / "notes.txt") == "the user's");
  // An imported llm.c folder (dataset.yaml beside llm.c's shards) is not prepare's either.
  o.out = dir.str("ok");
  prepare_dataset(o);
  write_file_atomic(dir.path / "ok" / "fineweb_train_000001.bin", "x");
  CHECK_THROWS_WITH_AS(prepare_dataset(o), doctest::Contains("holds fineweb_train_000001.bin"), Error);
  CHECK(fs::exists(dir.path / "ok" / "fineweb_train_000001.bin"));
}
