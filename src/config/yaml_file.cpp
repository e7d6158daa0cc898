// Reading a run or sweep file (bounded, UTF-8, one document) and finding the dataset it names.
#include "config/run_config.h"

#include <algorithm>
#include <cstdio>

#include "util/fs.h"
#include "util/text.h"

namespace sweep {

YAML::Node load_yaml_file(const std::string& path) {
  // Refused before parsing: a bigger file is data, not a config, and parsing it costs memory.
  std::error_code ec;
  const uintmax_t bytes = fs::file_size(path, ec);
  if (!ec && bytes > k_max_config_bytes) {
    throw InputErrors({{path, 0, 0,
                        "is " + std::to_string(bytes) + " bytes; a run or sweep file may have at most " +
                            std::to_string(k_max_config_bytes) + " — list values, not data"}});
  }
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error&) {
    throw InputErrors({{path, 0, 0, "cannot read this file — check the path"}});
  }
  // Every name and path in it reaches JSON, the database and reports: it must be text.
  if (const size_t bad = invalid_utf8_at(text); bad != std::string::npos) {
    const size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(bad), '\n'));
    const int col = 1 + static_cast<int>(bad - (line_start == std::string::npos || bad == 0 ? 0 : line_start + 1));
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[bad]));
    throw InputErrors({{path, line, col, std::string("invalid UTF-8 (byte ") + byte + ") — save the file as UTF-8"}});
  }
  try {
    const std::vector<YAML::Node> documents = YAML::LoadAll(text);
    // Silently reading only the first would drop what the others say (an empty one says nothing).
    const auto second = std::find_if(documents.begin() + std::min<size_t>(1, documents.size()), documents.end(),
                                     [](const YAML::Node& d) { return !d.IsNull(); });
    if (second != documents.end()) {
      const YAML::Mark at = second->Mark();
      throw InputErrors({{path, at.line >= 0 ? at.line + 1 : 0, at.column >= 0 ? at.column + 1 : 0,
                          "a second YAML document: a run or sweep file holds one — remove the '---' line "
                          "and what follows, or merge it into the first"}});
    }
    return documents.empty() ? YAML::Node() : documents.front();
  } catch (const YAML::ParserException& e) {
    throw InputErrors({{path, e.mark.line + 1, e.mark.column + 1, "YAML syntax error: " + e.msg}});
  }
}

std::string find_dataset(const std::string& dataset, const std::string& file) {
  const fs::path name(dataset);
  std::error_code ec;  // a folder that cannot be read is a folder that does not have it
  if (name.is_absolute()) {
    return fs::is_directory(name, ec) ? dataset : "";
  }
  for (fs::path dir = fs::absolute(file).lexically_normal().parent_path();; dir = dir.parent_path()) {
    if (fs::is_directory(dir / name, ec)) {
      return (dir / name).lexically_normal().string();
    }
    if (dir == dir.root_path()) {
      return "";
    }
  }
}

}  // namespace sweep
