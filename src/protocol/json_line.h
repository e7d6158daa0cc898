// One line of JSON from outside sweep's own code — an event a trainer printed, a line of a run
// folder's events.jsonl (`sweep ingest` reads any folder) — parsed within bounds, so that no line
// can crash its reader: longer than k_max_json_line bytes, or nested deeper than
// k_max_json_depth, it is no JSON here (discarded, as a malformed line is). The depth bound is for
// the stack: nlohmann's parser is iterative, but its serializer, comparisons and copies recurse
// once per level, and 100,000 levels of `[` (200 KB) overflowed the worker's stack.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace sweep::events {

inline constexpr size_t k_max_json_line = 256 * 1024;
inline constexpr int k_max_json_depth = 64;

// Whether `text` opens more than `max_depth` arrays or objects at once (brackets inside strings,
// escaped quotes included, do not count). Linear, no allocation.
inline bool nested_deeper_than(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return true;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

// The line as JSON; discarded (is_discarded()) when it is malformed, too long or too deep. With
// `why`, a discarded line also says why, in the parser's own words where it is malformed (that
// costs an exception: ask only for lines that were meant as JSON).
inline nlohmann::json parse_json_line(std::string_view line, std::string* why = nullptr) {
  const auto discarded = nlohmann::json(nlohmann::json::value_t::discarded);
  if (line.size() > k_max_json_line) {
    if (why) *why = "longer than " + std::to_string(k_max_json_line / 1024) + " KiB";
    return discarded;
  }
  if (nested_deeper_than(line, k_max_json_depth)) {
    if (why) *why = "nested deeper than " + std::to_string(k_max_json_depth) + " arrays and objects";
    return discarded;
  }
  if (why == nullptr) {
    return nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  }
  try {
    return nlohmann::json::parse(line.begin(), line.end());
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e400
    *why = std::string("malformed JSON: ") + e.what();
    return discarded;
  }
}

}  // namespace sweep::events
