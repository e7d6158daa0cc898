// Validators of the CLI's number options: a message a person reads, for every element of a list
// option. Only the cli module includes CLI11.
#pragma once

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "report/metric.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

// Number options checked with a message a person reads (CLI11's NonNegativeNumber and
// PositiveNumber print their bound, the largest double, in 309 digits, and let NaN through its
// ranges). Each validates every element of a list option ("1,,2": the empty one is no number).
namespace validate {

// `text` as a double, or nullopt when it is none (NaN is none here).
inline std::optional<double> number(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return used == text.size() && !std::isnan(v) ? std::optional<double>(v) : std::nullopt;
}

// Each value of a comma-separated list a finite number: CLI11's own splitting dropped an empty
// one ("1,,2"). `option` and `example` name it in the error (bad input).
inline std::vector<double> number_list(const std::string& option, const std::string& text,
                                       const std::string& example) {
  std::vector<double> out;
  for (const std::string& value : split(text, ',')) {
    const auto v = number(trim(value));
    if (!v || !std::isfinite(*v)) {
      throw Error(option + " " + text + ": '" + value + "' is not a finite number — e.g. " + example, Exit::bad_input);
    }
    out.push_back(*v);
  }
  return out;
}

}  // namespace validate

// A number at least `min` (above it when `strictly`).
inline CLI::Validator at_least(double min, bool strictly = false) {
  const std::string bound = format_number("%g", min);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const auto v = validate::number(text);
        if (v && !std::isfinite(*v)) {
          return "'" + text + "' is not a finite number";
        }
        return v && (strictly ? *v > min : *v >= min)
                   ? ""
                   : "'" + text + "' is not a number " + (strictly ? "above " : "of at least ") + bound;
      },
      (strictly ? "> " : ">= ") + bound);
}

// A number at most `max` (a bound past which the option means nothing: a loss's noise of 1e308).
inline CLI::Validator at_most(double max) {
  const std::string bound = format_number("%g", max);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const auto v = validate::number(text);
        return v && *v <= max ? "" : "'" + text + "' is above " + bound + ", the most it may be";
      },
      "<= " + bound);
}

// A metric a report can rank by (report/metric.h).
inline CLI::Validator metric_name() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return Metric::parse(text) ? "" : "'" + text + "' is not a metric: " + metric_names();
      },
      "METRIC");
}

// A number from `min` to `max`.
inline CLI::Validator between(double min, double max) {
  const std::string range = format_number("%g", min) + " to " + format_number("%g", max);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const auto v = validate::number(text);
        return v && *v >= min && *v <= max ? "" : "'" + text + "' is not a number from " + range;
      },
      range);
}

// A whole number from 0 to 2^64 − 1, written in digits (a seed): nothing saturated on the way.
inline CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        std::strtoull(text.c_str(), &end, 10);
        const bool ok = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos && errno == 0 &&
                        end == text.c_str() + text.size();
        return ok ? "" : "'" + text + "' is not a whole number from 0 to 18446744073709551615";
      },
      "UINT64");
}

}  // namespace sweep
