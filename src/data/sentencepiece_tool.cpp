// sweep-sentencepiece: SentencePiece BPE training and encoding in a process of its own.
// Debian's libsentencepiece embeds protobuf-lite 3.14, LibTorch loads libprotobuf 3.21: in one
// process they crash at start-up (or abort on the version check when isolated with dlopen), so
// `sweep data prepare` runs this small program instead (tokenizer.cpp).
//   sweep-sentencepiece train ARGS...            SentencePieceTrainer flags (--input=... etc.)
//   sweep-sentencepiece encode MODEL IN OUT      IN: documents separated by NUL bytes
//     OUT: int32 vocab size, int32 eos id, then per document: int32 count, count × int32 ids
//   sweep-sentencepiece decode MODEL IN OUT      IN: int32 ids; OUT: their text
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "sweep-sentencepiece: %s\n", message.c_str());
  return 1;
}

void put(std::ofstream& out, int32_t v) { out.write(reinterpret_cast<const char*>(&v), sizeof v); }

int encode(const std::string& model, const std::string& in_path, const std::string& out_path) {
  sentencepiece::SentencePieceProcessor sp;
  auto status = sp.Load(model);
  if (!status.ok()) {
    return fail("cannot load " + model + ": " + status.ToString());
  }
  std::ifstream in(in_path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  put(out, sp.GetPieceSize());
  put(out, sp.eos_id());
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\0', start);
    if (end == std::string::npos) {
      end = all.size();
    }
    std::vector<int> ids;
    status = sp.Encode(all.substr(start, end - start), &ids);
    if (!status.ok()) {
      return fail("encoding failed: " + status.ToString());
    }
    put(out, static_cast<int32_t>(ids.size()));
    out.write(reinterpret_cast<const char*>(ids.data()), static_cast<std::streamsize>(ids.size() * sizeof(int)));
    start = end + 1;
  }
  out.close();
  return out ? 0 : fail("cannot write " + out_path);
}

int decode(const std::string& model, const std::string& in_path, const std::string& out_path) {
  sentencepiece::SentencePieceProcessor sp;
  auto status = sp.Load(model);
  if (!status.ok()) {
    return fail("cannot load " + model + ": " + status.ToString());
  }
  std::ifstream in(in_path, std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<int> ids(raw.size() / sizeof(int32_t));
  std::memcpy(ids.data(), raw.data(), ids.size() * sizeof(int32_t));
  std::string text;
  status = sp.Decode(ids, &text);
  if (!status.ok()) {
    return fail("decoding failed: " + status.ToString());
  }
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return out ? 0 : fail("cannot write " + out_path);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "train") {
    std::string args;
    for (int i = 2; i < argc; ++i) {
      args += (i > 2 ? " " : "") + std::string(argv[i]);
    }
    auto status = sentencepiece::SentencePieceTrainer::Train(args);
    return status.ok() ? 0 : fail(status.ToString());
  }
  if (cmd == "encode" && argc == 5) {
    return encode(argv[2], argv[3], argv[4]);
  }
  if (cmd == "decode" && argc == 5) {
    return decode(argv[2], argv[3], argv[4]);
  }
  return fail("usage: sweep-sentencepiece train FLAGS... | encode MODEL IN OUT | decode MODEL IN OUT");
}
