#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "data/dataset.h"
#include "data/gpt2.h"
#include "data/prepare.h"
#include "data/tokenizer.h"
#include "data/tokens.h"
#include "helpers.h"
#include "util/error.h"
#include "util/fs.h"

using namespace sweep;

namespace {

std::string error_of(const std::string& encoder_json, const std::string& vocab_bpe) {
  return test::bad_input_message([&] { Gpt2Bpe bad(encoder_json, vocab_bpe); });
}

}  // namespace

TEST_CASE("GPT-2's BPE gives the reference encoder's ids and decodes back to the same bytes") {
  std::ifstream in(std::string(SWEEP_TEST_DATA) + "/gpt2/known-ids.jsonl");
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const std::string text = j["text"];
    const std::vector<int> ids = j["ids"];
    CAPTURE(text);
    CHECK(test::gpt2().encode(text) == ids);
    CHECK(test::gpt2().decode(ids) == text);
    ++checked;
  }
  CHECK(checked == 30);
  // Well-known ids, independent of the fixture.
  CHECK(test::gpt2().encode("Hello world") == std::vector<int>{15496, 995});
  CHECK(test::gpt2().encode(" the") == std::vector<int>{262});
  CHECK(test::gpt2().decode({Gpt2Bpe::k_eot}) == "<|endoftext|>");
}

TEST_CASE("GPT-2's pre-tokenization: contractions, letters, numbers, other characters and white space") {
  using P = std::vector<std::string_view>;
  CHECK(Gpt2Bpe::pieces("I'm here, they'll see") == P{"I", "'m", " here", ",", " they", "'ll", " see"});
  CHECK(Gpt2Bpe::pieces("   leading") == P{"  ", " leading"});  // \s+(?!\S) leaves the last space to the word
  CHECK(Gpt2Bpe::pieces("end   ") == P{"end", "   "});
  CHECK(Gpt2Bpe::pieces("a\n\nb") == P{"a", "\n", "\n", "b"});
  CHECK(Gpt2Bpe::pieces("x 123abc ½") == P{"x", " 123", "abc", " ½"});
  CHECK(Gpt2Bpe::pieces("café 中文 !!?") == P{"café", " 中文", " !!?"});
  CHECK(Gpt2Bpe::pieces("don'T 'x") == P{"don", "'", "T", " '", "x"});  // contractions are lower case only
  CHECK(Gpt2Bpe::pieces("").empty());
}

TEST_CASE("any byte string round-trips through GPT-2's BPE, UTF-8 or not") {
  std::mt19937 rng(5);
  for (int i = 0; i < 200; ++i) {
    std::string s(rng() % 40, '\0');
    for (char& c : s) {
      c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : " ea'1\n\xc3\xa9"[rng() % 9]);
    }
    const std::vector<int> ids = test::gpt2().encode(s);
    for (const int id : ids) {
      CHECK(id >= 0);
      CHECK(id < Gpt2Bpe::k_eot);
    }
    CHECK(test::gpt2().decode(ids) == s);
  }
}

TEST_CASE("tables that are not GPT-2's are refused with the file, line and what is wrong") {
  const Gpt2Files files = gpt2_tokenizer_files();
  test::TempDir dir;
  write_file_atomic(dir.str("broken.json"), read_file(files.encoder_json).substr(0, 1000));
  CHECK(error_of(dir.str("broken.json"), files.vocab_bpe).find("broken.json: not JSON") != std::string::npos);
  write_file_atomic(dir.str("small.json"), R"({"a": 0, "b": 1})");
  CHECK(error_of(dir.str("small.json"), files.vocab_bpe).find("small.json: holds 2 tokens, GPT-2's has 50257") !=
        std::string::npos);
  const std::string merges = read_file(files.vocab_bpe);
  // Two merges swapped: every token still exists, the ranks are not GPT-2's.
  const size_t a = merges.find('\n') + 1, b = merges.find('\n', a) + 1, c = merges.find('\n', b) + 1;
  write_file_atomic(dir.str("swapped.bpe"), merges.substr(0, a) + merges.substr(b, c - b) + merges.substr(a, b - a) +
                                                merges.substr(c));
  CHECK(error_of(files.encoder_json, dir.str("swapped.bpe")).find("swapped.bpe:2: the merge") != std::string::npos);
  write_file_atomic(dir.str("short.bpe"), merges.substr(0, c));
  CHECK(error_of(files.encoder_json, dir.str("short.bpe")).find("short.bpe: holds 2 merges, GPT-2's has 50000") !=
        std::string::npos);
  write_file_atomic(dir.str("garbage.bpe"), "#version: 0.2\nnot a merge line\n");
  CHECK(error_of(files.encoder_json, dir.str("garbage.bpe")).find("garbage.bpe:2:") != std::string::npos);
}

TEST_CASE("sweep data prepare --tokenizer gpt2 writes GPT-2 ids that decode to the documents") {
  test::TempDir dir;
  fs::create_directories(dir.path / "docs");
  std::vector<std::string> docs;
  for (int i = 0; i < 20; ++i) {
    docs.push_back("Document " + std::to_string(i) + ": the jury said it's café time.\nSecond line  ends   \n");
    write_file_atomic(dir.path / "docs" / ("d" + std::to_string(100 + i) + ".txt"), docs.back());
  }
  PrepareOptions o;
  o.input = dir.str("docs");
  o.out = dir.str("gpt2");
  o.tokenizer = "gpt2";
  o.val_fraction = 0.1;
  o.test_fraction = 0.1;
  const DatasetInfo info = prepare_dataset(o);
  CHECK(info.tokenizer == TokenizerKind::gpt2);
  CHECK(info.vocab_size == 50257);
  CHECK(info.eot_token == 50256);
  CHECK(fs::exists(dir.str("gpt2/encoder.json")));
  CHECK(fs::exists(dir.str("gpt2/vocab.bpe")));
  const DatasetInfo read = read_dataset(dir.str("gpt2"));
  const auto tok = open_tokenizer(read.tokenizer, read.dir, read.tokenizer_model);
  const std::vector<uint16_t> train = ShardTokens(read, "train").all();
  std::vector<int> doc;
  int decoded = 0;
  for (const uint16_t t : train) {
    if (t == Gpt2Bpe::k_eot) {
      CHECK(std::find(docs.begin(), docs.end(), tok->decode(doc)) != docs.end());
      doc.clear();
      ++decoded;
    } else {
      doc.push_back(t);
    }
  }
  CHECK(decoded == info.splits.at("train").documents);
  CHECK(info.bytes_per_token("train") > 2.5);  // GPT-2's merges on English text
  o.tokenizer = "bpe:300";
  o.tokenizer_dir = dir.str();
  o.force = true;
  CHECK_THROWS_WITH_AS(prepare_dataset(o), doctest::Contains("--tokenizer-dir is for --tokenizer gpt2"), Error);
}
