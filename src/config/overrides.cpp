// Dotted overrides: parsed from --set, applied to a YAML tree with their origins.
#include "config/run_config.h"

#include <algorithm>

#include "util/text.h"

namespace sweep {

Override parse_set_option(const std::string& option) {
  size_t eq = option.find('=');
  Origin origin{"--set " + option, 0, 0};
  if (eq == std::string::npos || eq == 0) {
    throw InputErrors({{origin.file, 0, 0, "expected key.path=value, e.g. --set train.lr=1e-3"}});
  }
  if (invalid_utf8_at(option) != std::string::npos) {
    throw InputErrors({{origin.file, 0, 0, "invalid UTF-8 — pass the value as UTF-8 text"}});
  }
  Override o;
  o.path = trim(option.substr(0, eq));
  o.origin = origin;
  try {
    o.value = YAML::Load(option.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw InputErrors({{origin.file, 0, 0, "the value is not valid YAML: " + e.msg}});
  }
  return o;
}

std::string flow_yaml(const YAML::Node& value) {
  YAML::Emitter out;
  out << YAML::Flow << value;
  return out.c_str();
}

void apply_overrides(YAML::Node& root, const std::vector<Override>& overrides,
                     std::map<std::string, Origin>& origins) {
  if (!root || root.IsNull()) {
    root = YAML::Node(YAML::NodeType::Map);
  }
  for (const auto& o : overrides) {
    std::vector<std::string> parts = split(o.path, '.');
    if (std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return trim(p).empty(); })) {
      throw InputErrors({{o.origin.file, o.origin.line, o.origin.col,
                          "'" + o.path + "' is not a key path — names joined by single dots, e.g. train.lr"}});
    }
    // Walk by reset() so each step rebinds the handle instead of assigning through it.
    YAML::Node node;
    node.reset(root);
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node child = node[parts[i]];
      if (!child.IsMap()) {
        node[parts[i]] = YAML::Node(YAML::NodeType::Map);
        child = node[parts[i]];
      }
      node.reset(child);
    }
    node[parts.back()] = YAML::Clone(o.value);
    origins[o.path] = o.origin;
  }
}

}  // namespace sweep
