#include "util/pattern.h"

#include <pcre2.h>

namespace sweep {

struct Pattern::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

std::optional<Pattern> Pattern::compile(const std::string& pattern, std::string& why, size_t& offset) {
  int error = 0;
  PCRE2_SIZE at = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &error, &at, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    why = reinterpret_cast<const char*>(message);
    offset = at;
    return std::nullopt;
  }
  Pattern p;
  auto owned = std::make_shared<Code>();
  owned->code = code;
  p.m_code = owned;
  // the name table: entries of (2-byte group number, name, NUL), in name order; kept in group order
  uint32_t count = 0, entry = 0;
  PCRE2_SPTR table = nullptr;
  pcre2_pattern_info(code, PCRE2_INFO_NAMECOUNT, &count);
  pcre2_pattern_info(code, PCRE2_INFO_NAMEENTRYSIZE, &entry);
  pcre2_pattern_info(code, PCRE2_INFO_NAMETABLE, &table);
  std::map<int, std::string> by_number;
  for (uint32_t i = 0; i < count; ++i) {
    const PCRE2_SPTR e = table + i * entry;
    by_number[(e[0] << 8) | e[1]] = reinterpret_cast<const char*>(e + 2);
  }
  for (const auto& [number, name] : by_number) {
    p.m_names.push_back(name);
  }
  return p;
}

std::optional<std::map<std::string, std::string>> Pattern::match(const std::string& line) const {
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(m_code->code, nullptr);
  // a line that is not valid UTF-8 is matched in its valid parts (PCRE2_MATCH_INVALID_UTF)
  const int rc = pcre2_match(m_code->code, reinterpret_cast<PCRE2_SPTR>(line.data()), line.size(), 0, 0, data, nullptr);
  std::optional<std::map<std::string, std::string>> groups;
  if (rc > 0) {
    groups.emplace();
    for (const auto& name : m_names) {
      const auto key = reinterpret_cast<PCRE2_SPTR>(name.c_str());
      PCRE2_SIZE length = 0;
      if (pcre2_substring_length_byname(data, key, &length) == 0) {  // unset: the group took no part
        std::string text(length + 1, '\0');
        PCRE2_SIZE size = text.size();
        pcre2_substring_copy_byname(data, key, reinterpret_cast<PCRE2_UCHAR*>(text.data()), &size);
        text.resize(size);
        (*groups)[name] = std::move(text);
      }
    }
  }
  pcre2_match_data_free(data);
  return groups;
}

}  // namespace sweep
