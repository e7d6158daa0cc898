#include "report/metric.h"

#include <algorithm>
#include <array>
#include <utility>

#include "util/error.h"

namespace sweep {

namespace {

constexpr int64_t k_last_least = 2, k_last_most = 100;
constexpr const char* k_last_prefix = "val_last";
constexpr std::array<std::pair<Metric::Kind, const char*>, 3> k_names{{
    {Metric::Kind::test_loss, "test_loss"},
    {Metric::Kind::test_bpb, "test_bpb"},
    {Metric::Kind::val_loss, "val_loss"},
}};

}  // namespace

std::optional<Metric> Metric::parse(const std::string& name) {
  for (const auto& [kind, spelled] : k_names) {
    if (name == spelled) {
      return Metric{kind, 0};
    }
  }
  const std::string prefix = k_last_prefix;
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || name.size() > prefix.size() + 3) {
    return std::nullopt;
  }
  const std::string digits = name.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) || digits[0] == '0') {
    return std::nullopt;
  }
  const int64_t k = std::stoll(digits);
  if (k < k_last_least || k > k_last_most) {
    return std::nullopt;
  }
  return Metric{Kind::val_last, k};
}

std::string Metric::name() const {
  for (const auto& [each, spelled] : k_names) {
    if (kind == each) {
      return spelled;
    }
  }
  return k_last_prefix + std::to_string(k);
}

std::string metric_names() { return "test_loss, test_bpb, val_loss or val_lastK (K from 2 to 100, e.g. val_last3)"; }

Metric parse_metric(const std::string& name) {
  if (const std::optional<Metric> metric = Metric::parse(name)) {
    return *metric;
  }
  throw Error("--metric " + name + ": expected " + metric_names(), Exit::bad_input);
}

}  // namespace sweep
