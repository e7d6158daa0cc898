// Checks of event field values that both readers of events apply: the store's ingester
// (src/store) and the external trainer host (src/external).
#pragma once

#include <nlohmann/json.hpp>

namespace sweep::events {

// A loss as events.h allows it: a number, or one of the strings "nan", "inf", "-inf".
inline bool is_loss_value(const nlohmann::json& v) {
  return v.is_number() || (v.is_string() && (v == "nan" || v == "inf" || v == "-inf"));
}

}  // namespace sweep::events
