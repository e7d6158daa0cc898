// Text helpers: edit distance and "did you mean" suggestions, trimming, splitting.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sweep {

size_t edit_distance(const std::string& a, const std::string& b);

// The closest candidate within a small edit distance, or "" when none is close enough.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

std::string trim(const std::string& s);
// Up to its first newline (an exception's what() of several lines, in a one-line message).
std::string first_line(const std::string& s);
std::vector<std::string> split(const std::string& s, char sep);
std::string join(const std::vector<std::string>& parts, const std::string& sep);
bool ends_with(const std::string& s, const std::string& suffix);
// The offset of the first byte that is not valid UTF-8 (overlong forms and surrogates included),
// or std::string::npos when `s` is valid UTF-8.
size_t invalid_utf8_at(const std::string& s);
// `s` safe to print on a terminal: control characters (escape sequences, carriage returns, C1
// controls) written as \xNN, and the invisible bidirectional controls as \u{NNNN}; newlines and
// tabs kept only with `lines` (a one-line message has none).
std::string printable(const std::string& s, bool lines = true);

// `v` by a printf format for one double ("%.4f", "%+.2f", "%g"); "-" when it is not finite (a
// table cell with no value).
std::string format_number(const char* spec, double v);
// A ratio as a factor: "1.23×" (3 significant digits); "-" when it is not finite.
std::string factor_text(double v);
// 1234 -> "1.2k", 2500000 -> "2.50M"; for progress lines.
std::string format_count(double n);
// The local time of day, "14:03:59", for log lines.
std::string clock_time();

// "1 run", "3 runs": a count and its noun, made plural by an "s".
std::string plural(int64_t n, const std::string& word);

// 75 -> "1m15s", 3720 -> "1h02m".
std::string format_duration(double seconds);

}  // namespace sweep
