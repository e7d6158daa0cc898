// Text helpers: edit distance and "did you mean" suggestions, trimming, splitting.
#pragma once

#include <string>
#include <vector>

namespace sweep {

size_t edit_distance(const std::string& a, const std::string& b);

// The closest candidate within a small edit distance, or "" when none is close enough.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

std::string trim(const std::string& s);
std::vector<std::string> split(const std::string& s, char sep);
bool ends_with(const std::string& s, const std::string& suffix);

}  // namespace sweep
