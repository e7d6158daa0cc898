// A regular expression over one line of a program's output (PCRE2, Perl's syntax: named groups
// written (?<name>...) or, as in Python, (?P<name>...)). A pattern that does not compile says why
// and at which character; a match gives each named group's text.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sweep {

class Pattern {
 public:
  // The compiled pattern, or nullopt with `why` ("missing closing parenthesis") and `offset` (the
  // 0-based character of the pattern where compiling stopped) set.
  static std::optional<Pattern> compile(const std::string& pattern, std::string& why, size_t& offset);

  // Its named groups, in the order they open.
  const std::vector<std::string>& names() const { return m_names; }
  // Each named group's text where `line` matches (searched anywhere in it; a group that took no
  // part is absent), or nullopt.
  std::optional<std::map<std::string, std::string>> match(const std::string& line) const;

 private:
  struct Code;
  std::shared_ptr<const Code> m_code;
  std::vector<std::string> m_names;
};

}  // namespace sweep
