#include "config/yaml_reader.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>
#include <utility>

#include "config/size.h"
#include "util/text.h"

namespace sweep {

// ---- diagnostics ----

void Diagnostics::error(const std::string& path, const YAML::Node& node, const std::string& message) {
  locate(path, node, message, false);
}

void Diagnostics::error_at_key(const std::string& path, const YAML::Node& node, const std::string& message) {
  locate(path, node, message, true);
}

void Diagnostics::locate(const std::string& path, const YAML::Node& node, const std::string& message, bool key) {
  // An overridden value is reported where the override was written; a prefix counts too,
  // so an override that replaced a whole section locates the errors inside it (in its value).
  for (std::string p = path; !p.empty();) {
    auto it = m_origins.find(p);
    if (it != m_origins.end()) {
      const Origin& o = it->second;
      const bool at_value = o.value_line > 0 && !(key && p == path);
      m_list.push_back({o.file, at_value ? o.value_line : o.line, at_value ? o.value_col : o.col, message});
      return;
    }
    size_t dot = p.rfind('.');
    p = dot == std::string::npos ? "" : p.substr(0, dot);
  }
  error(node.IsDefined() ? node.Mark() : YAML::Mark::null_mark(), message);
}

void Diagnostics::error(const YAML::Mark& mark, const std::string& message) {
  bool known = !mark.is_null();
  m_list.push_back({m_file, known ? mark.line + 1 : 0, known ? mark.column + 1 : 0, message});
}

void Diagnostics::error(const Origin& at, const std::string& message) {
  m_list.push_back({at.file, at.line, at.col, message});
}

void Diagnostics::throw_if_any() const {
  if (!m_list.empty()) {
    throw InputErrors(m_list);
  }
}

// ---- map reader ----

static std::string describe(const YAML::Node& node) {
  if (node.IsMap()) {
    return "a map";
  }
  if (node.IsSequence()) {
    return "a list";
  }
  if (node.IsNull()) {
    return "nothing";
  }
  return "'" + node.Scalar() + "'";
}

// yaml-cpp hands out "invalid" nodes for missing keys, which throw on any use but IsDefined().
static YAML::Node map_or_empty(const YAML::Node& node) {
  return node.IsDefined() && node.IsMap() ? node : YAML::Node(YAML::NodeType::Map);
}

MapReader::MapReader(const YAML::Node& node, std::string path, Diagnostics& diags)
    : m_node(map_or_empty(node)), m_path(std::move(path)), m_diags(diags) {
  if (node.IsDefined() && !node.IsNull() && !node.IsMap()) {
    m_diags.error(m_path, node,
                  (m_path.empty() ? std::string("the file") : "'" + m_path + "'") +
                      " must be a map of key: value, got " + describe(node));
    return;
  }
  std::map<std::string, int> first_line;
  for (const auto& kv : m_node) {
    std::string key = kv.first.Scalar();
    auto [it, inserted] = first_line.emplace(key, kv.first.Mark().line + 1);
    if (!inserted) {
      m_diags.error(kv.first.Mark(), "duplicate key '" + child_path(key) + "' (first at line " +
                                         std::to_string(it->second) + ") — keep only one");
    }
  }
}

std::string MapReader::child_path(const std::string& key) const {
  return m_path.empty() ? key : m_path + "." + key;
}

void MapReader::type_error(const std::string& key, const YAML::Node& value, const std::string& expected) {
  m_diags.error(child_path(key), value,
                "'" + child_path(key) + "' must be " + expected + ", got " + describe(value));
}

std::optional<YAML::Node> MapReader::scalar(const std::string& key) {
  m_known.push_back(key);
  YAML::Node value = std::as_const(m_node)[key];
  if (!value.IsDefined()) {
    return std::nullopt;
  }
  if (!value.IsScalar()) {
    type_error(key, value, "a single value");
    return std::nullopt;
  }
  return value;
}

void MapReader::read(const std::string& key, int64_t& out, int64_t min, int64_t max) {
  std::optional<YAML::Node> found = scalar(key);
  if (!found) {
    return;
  }
  const YAML::Node& value = *found;
  const std::string& s = value.Scalar();
  int64_t parsed = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), parsed);
  if (ec != std::errc() || end != s.data() + s.size()) {
    type_error(key, value, "an integer");
    return;
  }
  if (parsed < min || parsed > max) {
    m_diags.error(child_path(key), value,
                  "'" + child_path(key) + "' must be in [" + std::to_string(min) + ", " +
                      std::to_string(max) + "], got " + s);
    return;
  }
  out = parsed;
}

static std::string fmt_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void MapReader::read(const std::string& key, double& out, double min, double max, bool min_open,
                     bool max_open) {
  std::optional<YAML::Node> found = scalar(key);
  if (!found) {
    return;
  }
  const YAML::Node& value = *found;
  const std::string& s = value.Scalar();
  char* end = nullptr;
  errno = 0;
  double parsed = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(parsed)) {
    type_error(key, value, "a number");
    return;
  }
  bool below = min_open ? parsed <= min : parsed < min;
  bool above = max_open ? parsed >= max : parsed > max;
  if (below || above) {
    std::string range = (min_open ? "(" : "[") + fmt_double(min) + ", " +
                        (std::isinf(max) ? std::string("inf") : fmt_double(max)) + (max_open ? ")" : "]");
    m_diags.error(child_path(key), value,
                  "'" + child_path(key) + "' must be in " + range + ", got " + s);
    return;
  }
  out = parsed;
}

void MapReader::read(const std::string& key, bool& out) {
  std::optional<YAML::Node> found = scalar(key);
  if (!found) {
    return;
  }
  const YAML::Node& value = *found;
  const std::string& s = value.Scalar();
  if (s == "true") {
    out = true;
  } else if (s == "false") {
    out = false;
  } else {
    type_error(key, value, "true or false");
  }
}

void MapReader::read(const std::string& key, std::string& out) {
  if (std::optional<YAML::Node> value = scalar(key)) {
    out = value->Scalar();
  }
}

void MapReader::read_size(const std::string& key, int64_t& out, int64_t min) {
  std::optional<YAML::Node> found = scalar(key);
  if (!found) {
    return;
  }
  const YAML::Node& value = *found;
  auto parsed = parse_size(value.Scalar());
  if (!parsed) {
    type_error(key, value, "a whole number, optionally with a suffix (128K, 5M, 2G, 64Ki)");
    return;
  }
  if (*parsed < min) {
    m_diags.error(child_path(key), value,
                  "'" + child_path(key) + "' must be at least " + std::to_string(min) + ", got " +
                      value.Scalar());
    return;
  }
  out = *parsed;
}

void MapReader::read_choice(const std::string& key, std::string& out,
                            const std::vector<std::string>& choices) {
  std::optional<YAML::Node> found = scalar(key);
  if (!found) {
    return;
  }
  const YAML::Node& value = *found;
  const std::string& s = value.Scalar();
  for (const auto& c : choices) {
    if (s == c) {
      out = s;
      return;
    }
  }
  std::string list;
  for (const auto& c : choices) {
    list += (list.empty() ? "" : ", ") + c;
  }
  std::string message = "unknown " + key + " '" + s + "' for '" + child_path(key) + "' (one of: " + list + ")";
  std::string near = closest_match(s, choices);
  if (!near.empty()) {
    message += " — did you mean '" + near + "'?";
  }
  m_diags.error(child_path(key), value, message);
}

YAML::Node MapReader::section(const std::string& key) {
  m_known.push_back(key);
  return std::as_const(m_node)[key];
}

void MapReader::require(const std::string& key, const std::string& hint) {
  if (!std::as_const(m_node)[key].IsDefined()) {
    m_diags.error(m_path, m_node,
                  "missing required key '" + child_path(key) + "' — " + hint);
  }
}

void MapReader::finish() {
  std::set<std::string> known(m_known.begin(), m_known.end());
  for (const auto& kv : m_node) {
    std::string key = kv.first.Scalar();
    if (known.count(key)) {
      continue;
    }
    std::string message = "unknown key '" + child_path(key) + "'";
    std::string near = closest_match(key, m_known);
    if (!near.empty()) {
      message += " — did you mean '" + near + "'?";
    } else {
      std::string list;
      for (const auto& k : m_known) {
        list += (list.empty() ? "" : ", ") + k;
      }
      message += " (known keys here: " + list + ")";
    }
    m_diags.error_at_key(child_path(key), kv.first, message);
  }
}

}  // namespace sweep
