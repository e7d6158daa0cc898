// Typed, validating access to a YAML map with file:line:col diagnostics. yaml-cpp silently
// keeps the first of duplicate keys and reads yes/no/on as booleans; this reader reports
// duplicates, unknown keys (with "did you mean"), wrong types and out-of-range values, and
// collects every problem instead of stopping at the first. Knows nothing about RunConfig.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/choices.h"
#include "util/error.h"

namespace sweep {

// Where a value came from when it does not come from the file being read: a `--set` option
// or an override in a sweep file. Keyed by dotted path ("train.lr").
struct Origin {
  std::string file;
  int line = 0;  // 1-based; 0 = none
  int col = 0;
  // where a grid/zip/tune value is written, apart from its key (the list may span lines); 0 = not
  // apart (an intervention's override, a --set)
  int value_line = 0, value_col = 0;
};

class Diagnostics {
 public:
  Diagnostics(std::string file, std::map<std::string, Origin> origins = {})
      : m_file(std::move(file)), m_origins(std::move(origins)) {}

  // Records `message` about the value at `path`, located by `node`'s mark or by its origin (the
  // value's place there, when it has one).
  void error(const std::string& path, const YAML::Node& node, const std::string& message);
  // The same about the key at `path` itself (unknown, say): an override's key, not its value.
  void error_at_key(const std::string& path, const YAML::Node& node, const std::string& message);
  void error(const YAML::Mark& mark, const std::string& message);
  void error(const Origin& at, const std::string& message);
  bool empty() const { return m_list.empty(); }
  // Throws InputErrors with everything collected, if anything was.
  void throw_if_any() const;

 private:
  void locate(const std::string& path, const YAML::Node& node, const std::string& message, bool key);

  std::string m_file;
  std::map<std::string, Origin> m_origins;
  std::vector<Diagnostic> m_list;
};

class MapReader {
 public:
  // `path` is the dotted path of this map ("" for the root).
  MapReader(const YAML::Node& node, std::string path, Diagnostics& diags);

  // Each reader leaves `out` untouched when the key is absent or the value is invalid.
  void read(const std::string& key, int64_t& out, int64_t min, int64_t max);
  void read(const std::string& key, double& out, double min, double max, bool min_open = false,
            bool max_open = false);
  void read(const std::string& key, bool& out);
  void read(const std::string& key, std::string& out);
  // An integer that may carry a size suffix (5M, 128K, 64Ki).
  void read_size(const std::string& key, int64_t& out, int64_t min);
  // A string from a fixed set.
  void read_choice(const std::string& key, std::string& out, const std::vector<std::string>& choices);
  template <Choice E>
  void read_choice(const std::string& key, E& out) {
    std::string spelled = to_string(out);
    read_choice(key, spelled, choice_names<E>());
    out = parse_choice<E>(spelled).value_or(out);
  }
  // A nested map; absent → an empty node. The key counts as known.
  YAML::Node section(const std::string& key);
  void require(const std::string& key, const std::string& hint);

  // Reports keys that no read_* call asked for. Call after every read.
  void finish();

  std::string child_path(const std::string& key) const;
  Diagnostics& diagnostics() { return m_diags; }

 private:
  std::optional<YAML::Node> scalar(const std::string& key);  // nullopt: absent or not a scalar
  void type_error(const std::string& key, const YAML::Node& value, const std::string& expected);

  YAML::Node m_node;
  std::string m_path;
  Diagnostics& m_diags;
  std::vector<std::string> m_known;
};

}  // namespace sweep
