// `sweep pool`'s output (report/pool/pool.h): a table per intervention pooled, each verdict in
// words with its settings, the leave-one-setting-out table, as text, Markdown and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "report/pool/pool.h"

namespace sweep {

std::string pool_text(const Pool& pool);
std::string pool_markdown(const Pool& pool);
nlohmann::ordered_json pool_json(const Pool& pool);

}  // namespace sweep
