#include "report/input.h"

#include <algorithm>

namespace sweep {

const VariantRuns* find_variant(const ReportInput& in, const std::string& name) {
  for (const auto& v : in.variants) {
    if (v.name == name) {
      return &v;
    }
  }
  return nullptr;
}

double alpha_each(const ReportInput& in) {
  return in.alpha / static_cast<double>(std::max<size_t>(1, in.variants.size() - 1));
}

}  // namespace sweep
