#include "data/tokenizer.h"

#include <unistd.h>

#include <cstring>
#include <fstream>

#include "data/gpt2.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"

namespace sweep {

namespace {

class BytesTokenizer : public Tokenizer {
 public:
  Encoded encode(const std::vector<std::string>& documents) const override {
    Encoded out{256, 0, {}};
    for (const auto& doc : documents) {
      out.documents.emplace_back(doc.begin(), doc.end());
      for (int& id : out.documents.back()) {
        id &= 0xff;  // char may be signed
      }
    }
    return out;
  }
  std::string decode(const std::vector<int>& ids) const override {
    std::string text;
    for (const int id : ids) {
      text += static_cast<char>(id);
    }
    return text;
  }
};

std::string helper() { return (executable_dir() / "sweep-sentencepiece").string(); }

void run_helper(const std::vector<std::string>& argv, const std::string& what) {
  const int rc = run_process(argv);
  if (rc != 0) {
    throw Error(what + " failed (sweep-sentencepiece exited with " + std::to_string(rc) + ")");
  }
}

class BpeTokenizer : public Tokenizer {
 public:
  explicit BpeTokenizer(std::string model_file) : m_model(std::move(model_file)) {}

  // The helper's files live in a folder of their own under the temp dir, never beside the model.
  Encoded encode(const std::vector<std::string>& documents) const override {
    const TempFiles tmp;
    const std::string in = tmp.path("docs"), out = tmp.path("ids");
    {
      std::ofstream f(in, std::ios::binary | std::ios::trunc);
      for (size_t i = 0; i < documents.size(); ++i) {
        f << documents[i];
        if (i + 1 < documents.size()) {
          f << '\0';
        }
      }
    }
    run_helper({helper(), "encode", m_model, in, out}, "SentencePiece encoding");
    const std::string raw = read_file(out);
    size_t pos = 0;
    auto next = [&]() {
      if (pos + 4 > raw.size()) {
        throw Error("sweep-sentencepiece wrote a truncated result");
      }
      int32_t v;
      std::memcpy(&v, raw.data() + pos, 4);
      pos += 4;
      return v;
    };
    Encoded e;
    e.vocab_size = next();
    e.eot_token = next();
    for (size_t d = 0; d < documents.size(); ++d) {
      std::vector<int> ids(static_cast<size_t>(next()));
      for (int& id : ids) {
        id = next();
      }
      e.documents.push_back(std::move(ids));
    }
    return e;
  }

  std::string decode(const std::vector<int>& ids) const override {
    const TempFiles tmp;
    const std::string in = tmp.path("ids"), out = tmp.path("text");
    {
      std::ofstream f(in, std::ios::binary | std::ios::trunc);
      for (const int id : ids) {
        const int32_t v = id;
        f.write(reinterpret_cast<const char*>(&v), sizeof v);
      }
    }
    run_helper({helper(), "decode", m_model, in, out}, "SentencePiece decoding");
    return read_file(out);
  }

 private:
  // A folder under the temp dir for the helper's files, removed with everything in it.
  struct TempFiles {
    fs::path dir;
    TempFiles() {
      static int counter = 0;
      dir = fs::temp_directory_path() / ("sweep-sentencepiece-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
      fs::create_directories(dir);
    }
    ~TempFiles() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
    std::string path(const std::string& name) const { return (dir / name).string(); }
  };
  std::string m_model;
};

class Gpt2Tokenizer : public Tokenizer {
 public:
  Gpt2Tokenizer(const std::string& encoder_json, const std::string& vocab_bpe) : m_bpe(encoder_json, vocab_bpe) {}
  Encoded encode(const std::vector<std::string>& documents) const override {
    Encoded out{Gpt2Bpe::k_vocab, Gpt2Bpe::k_eot, {}};
    Gpt2Bpe::Cache cache;
    for (const auto& doc : documents) {
      out.documents.emplace_back();
      m_bpe.encode(doc, out.documents.back(), cache);
    }
    return out;
  }
  std::string decode(const std::vector<int>& ids) const override { return m_bpe.decode(ids); }

 private:
  Gpt2Bpe m_bpe;
};

}  // namespace

std::unique_ptr<Tokenizer> make_gpt2_tokenizer(const std::string& encoder_json, const std::string& vocab_bpe) {
  return std::make_unique<Gpt2Tokenizer>(encoder_json, vocab_bpe);
}

std::unique_ptr<Tokenizer> make_bytes_tokenizer() { return std::make_unique<BytesTokenizer>(); }

std::unique_ptr<Tokenizer> open_tokenizer(TokenizerKind kind, const std::string& dir, const std::string& model_file) {
  switch (kind) {
    case TokenizerKind::bpe:
      return std::make_unique<BpeTokenizer>((fs::path(dir) / model_file).string());
    case TokenizerKind::gpt2: {  // encoder.json (model_file) and vocab.bpe, copied into the dataset
      const fs::path encoder = fs::path(dir) / model_file;
      return make_gpt2_tokenizer(encoder.string(), (encoder.parent_path() / "vocab.bpe").string());
    }
    case TokenizerKind::bytes:
      break;
  }
  return make_bytes_tokenizer();
}

std::unique_ptr<Tokenizer> train_bpe_tokenizer(const std::vector<std::string>& documents, int64_t vocab_size,
                                               const std::string& model_prefix, int threads) {
  // SentencePiece trains on lines; it never sees the newlines themselves (byte fallback
  // encodes them later).
  const std::string lines_file = model_prefix + ".train.txt";
  {
    std::ofstream out(lines_file, std::ios::trunc);
    for (const auto& doc : documents) {
      out << doc;
      if (!doc.empty() && doc.back() != '\n') {
        out << '\n';
      }
    }
    if (!out) {
      throw Error("cannot write " + lines_file);
    }
  }
  run_helper({helper(), "train", "--input=" + lines_file, "--model_prefix=" + model_prefix, "--model_type=bpe",
              "--vocab_size=" + std::to_string(vocab_size), "--character_coverage=1.0", "--byte_fallback=true",
              "--split_digits=true", "--normalization_rule_name=identity", "--remove_extra_whitespaces=false",
              "--max_sentence_length=16384", "--hard_vocab_limit=false", "--unk_id=0", "--bos_id=1", "--eos_id=2", "--pad_id=-1",
              "--minloglevel=2", "--num_threads=" + std::to_string(threads)},
             "SentencePiece BPE training (vocabulary " + std::to_string(vocab_size) + ")");
  fs::remove(lines_file);
  return std::make_unique<BpeTokenizer>(model_prefix + ".model");
}

}  // namespace sweep
