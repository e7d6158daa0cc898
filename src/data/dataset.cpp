#include "data/dataset.h"

#include <yaml-cpp/yaml.h>

#include "data/token_shard.h"
#include "data/tokens.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

double DatasetInfo::bytes_per_token(const std::string& split) const {
  const SplitInfo& s = splits.at(split);
  return s.tokens > 0 ? static_cast<double>(s.bytes) / static_cast<double>(s.tokens) : 0.0;
}

DatasetInfo read_dataset(const std::string& dir) {
  fs::path yaml = fs::path(dir) / "dataset.yaml";
  if (!fs::exists(yaml)) {
    throw Error("no dataset at " + dir + " (" + yaml.string() +
                    " is missing) — create it with `sweep data prepare --out " + dir + " ...`",
                Exit::bad_input);
  }
  DatasetInfo info;
  info.dir = dir;
  // Written by `sweep data prepare`, but a file another process wrote: every key checked.
  auto get = [&](const YAML::Node& map, const std::string& key, auto fallback, bool required = true) {
    using T = decltype(fallback);
    const YAML::Node value = map.IsMap() ? map[key] : YAML::Node();
    if (!value.IsDefined() || value.IsNull()) {
      if (required) {
        throw Error(yaml.string() + ": '" + key + "' is missing — prepare the dataset again", Exit::bad_input);
      }
      return fallback;
    }
    try {
      return value.as<T>();
    } catch (const YAML::Exception&) {
      throw Error(yaml.string() + ":" + std::to_string(value.Mark().line + 1) + ": '" + key +
                      "' has the wrong type — prepare the dataset again",
                  Exit::bad_input);
    }
  };
  std::error_code ec;
  if (!fs::is_regular_file(yaml, ec) || fs::file_size(yaml, ec) > (1u << 20)) {
    throw Error(yaml.string() + " is not a dataset description (a file of at most 1 MiB) — prepare the dataset again",
                Exit::bad_input);
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(yaml.string());
  } catch (const YAML::Exception& e) {
    throw Error(yaml.string() + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg + " — prepare the dataset again",
                Exit::bad_input);
  }
  const std::string tokenizer = get(root, "tokenizer", std::string());
  if (const auto kind = parse_choice<TokenizerKind>(tokenizer)) {
    info.tokenizer = *kind;
  } else {
    throw Error(yaml.string() + ":" + std::to_string(root["tokenizer"].Mark().line + 1) + ": 'tokenizer' is '" +
                    tokenizer + "', expected one of " + join(choice_names<TokenizerKind>(), ", ") +
                    " — prepare the dataset again",
                Exit::bad_input);
  }
  info.tokenizer_model = get(root, "tokenizer_model", std::string(), false);
  info.vocab_size = get(root, "vocab_size", int64_t{0});
  info.eot_token = get(root, "eot_token", int64_t{0});
  // Tokens are uint16: a vocabulary of 1 to 65536, the separator one of them.
  if (info.vocab_size < 1 || info.vocab_size > 65536 || info.eot_token < 0 || info.eot_token >= info.vocab_size) {
    throw Error(yaml.string() + ": vocab_size " + std::to_string(info.vocab_size) + " and eot_token " +
                    std::to_string(info.eot_token) + " are no uint16 vocabulary (1 to 65536 tokens, the separator "
                    "one of them) — prepare the dataset again",
                Exit::bad_input);
  }
  const YAML::Node splits = root.IsMap() ? root["splits"] : YAML::Node();
  for (const char* name : {"train", "val", "test"}) {
    const YAML::Node s = splits.IsMap() ? splits[name] : YAML::Node();
    if (!s.IsMap()) {
      throw Error(yaml.string() + ": split '" + name + "' is missing — prepare the dataset again", Exit::bad_input);
    }
    SplitInfo split;
    split.documents = get(s, "documents", int64_t{0});
    split.tokens = get(s, "tokens", int64_t{0});
    split.bytes = get(s, "bytes", int64_t{0});
    split.shards = get(s, "shards", std::vector<std::string>());
    info.splits[name] = split;
  }
  return info;
}

void write_dataset_yaml(const DatasetInfo& info, const std::string& dir) {
  YAML::Emitter out;
  out << YAML::Comment("written by `sweep data prepare` or `sweep data import`; token shards are llm.c format (uint16)");
  out << YAML::BeginMap;
  out << YAML::Key << "tokenizer" << YAML::Value << to_string(info.tokenizer);
  out << YAML::Key << "tokenizer_model" << YAML::Value << info.tokenizer_model;
  out << YAML::Key << "vocab_size" << YAML::Value << info.vocab_size;
  out << YAML::Key << "eot_token" << YAML::Value << info.eot_token;
  out << YAML::Key << "splits" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, s] : info.splits) {
    out << YAML::Key << name << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "documents" << YAML::Value << s.documents;
    out << YAML::Key << "tokens" << YAML::Value << s.tokens;
    out << YAML::Key << "bytes" << YAML::Value << s.bytes;
    out << YAML::Key << "bytes_per_token" << YAML::Value << info.bytes_per_token(name);
    out << YAML::Key << "shards" << YAML::Value << YAML::Flow << s.shards;
    out << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndMap;
  write_file_atomic(fs::path(dir) / "dataset.yaml", std::string(out.c_str()) + "\n");
}

void check_shards(const DatasetInfo& info) {
  for (const auto& entry : info.splits) {
    const ShardTokens opened(info, entry.first);  // checks headers, lengths and the split's total
  }
}

}  // namespace sweep
