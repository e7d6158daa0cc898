// A closed set as an enum with one string table: Choices<E>::names[i] spells the value i (an
// enum's values are declared in its table's order). The table is the one place its spellings
// live: parsing, printing, a CLI option's allowed values and messages all read it. The sets of a
// run config and a sweep file are in config/choices.h, with their JSON spelling.
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sweep {

template <class E>
struct Choices;

template <class E>
concept Choice = requires { Choices<E>::names; };

template <Choice E>
std::string to_string(E value) {
  return std::string(Choices<E>::names.at(static_cast<size_t>(value)));
}

// nullopt: not one of E's spellings.
template <Choice E>
std::optional<E> parse_choice(std::string_view spelled) {
  for (size_t i = 0; i < Choices<E>::names.size(); ++i) {
    if (Choices<E>::names[i] == spelled) {
      return static_cast<E>(i);
    }
  }
  return std::nullopt;
}

// For input already checked against choice_names (a CLI option's IsMember); throws on others.
template <Choice E>
E choice_of(std::string_view spelled) {
  if (const std::optional<E> value = parse_choice<E>(spelled)) {
    return *value;
  }
  throw std::invalid_argument("not a known choice: " + std::string(spelled));
}

template <Choice E>
std::vector<E> choices_of(const std::vector<std::string>& spelled) {
  std::vector<E> values;
  for (const std::string& s : spelled) {
    values.push_back(choice_of<E>(s));
  }
  return values;
}

template <Choice E>
std::vector<std::string> choice_names() {
  return {Choices<E>::names.begin(), Choices<E>::names.end()};
}

template <Choice E>
std::ostream& operator<<(std::ostream& out, E value) {
  return out << Choices<E>::names.at(static_cast<size_t>(value));
}

}  // namespace sweep
