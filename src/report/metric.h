// What a report ranks by: one closed set, parsed once (`--metric`, the serve page, a backtest)
// and named once. test_loss and test_bpb are measured on the whole test split at a run's end,
// val_loss is its last validation loss, and val_lastK the mean of its last K validation
// evaluations after step 0 (K from 2 to 100; the untrained model's is none).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sweep {

struct Metric {
  enum class Kind { test_loss, test_bpb, val_loss, val_last };
  Kind kind = Kind::test_loss;
  int64_t k = 0;  // val_last's K

  // The metric a name says, or none (a name out of the set, a K out of range).
  static std::optional<Metric> parse(const std::string& name);
  std::string name() const;
  bool operator==(const Metric& other) const = default;
  bool operator==(Kind other) const { return kind == other; }
};

// The names, for an error message.
std::string metric_names();
// The metric `name` says, or an Error (bad input) naming the ones there are.
Metric parse_metric(const std::string& name);

}  // namespace sweep
