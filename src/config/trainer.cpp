#include "config/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "config/size.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep {

namespace {

// A scalar of the declared type, or an error message (and nullopt).
std::optional<nlohmann::json> typed(const YAML::Node& node, const TrainerKey& key, std::string& why) {
  if (!node.IsScalar()) {
    why = "'" + key.name + "' must be a single " + to_string(key.type) + " value";
    return std::nullopt;
  }
  const std::string text = node.Scalar();
  nlohmann::json value;
  double number = std::nan("");
  if (key.type == KeyType::integer) {
    try {
      const auto v = node.as<int64_t>();
      value = v;
      number = static_cast<double>(v);
    } catch (const YAML::Exception&) {
      why = "'" + key.name + "' must be a whole number, got " + text;
      return std::nullopt;
    }
  } else if (key.type == KeyType::real) {
    try {
      number = node.as<double>();
    } catch (const YAML::Exception&) {
    }
    if (!std::isfinite(number)) {
      why = "'" + key.name + "' must be a finite number, got " + text;
      return std::nullopt;
    }
    value = number;
  } else if (key.type == KeyType::size) {
    const std::optional<int64_t> v = parse_size(text);
    if (!v) {
      why = "'" + key.name + "' must be a whole size such as 400K or 5M, got " + text;
      return std::nullopt;
    }
    value = *v;
    number = static_cast<double>(*v);
  } else if (key.type == KeyType::boolean) {
    if (text != "true" && text != "false") {
      why = "'" + key.name + "' must be true or false, got " + text;
      return std::nullopt;
    }
    value = text == "true";
  } else if (key.type == KeyType::choice) {
    if (std::find(key.choices.begin(), key.choices.end(), text) == key.choices.end()) {
      why = "'" + key.name + "' must be one of " + join(key.choices, ", ") + ", got " + text;
      return std::nullopt;
    }
    value = text;
  } else {
    value = text;
  }
  if ((key.min && number < *key.min) || (key.max && number > *key.max)) {
    why = "'" + key.name + "' must be " +
          (key.min && key.max ? "between " + format_number("%g", *key.min) + " and " + format_number("%g", *key.max)
           : key.min          ? "at least " + format_number("%g", *key.min)
                              : "at most " + format_number("%g", *key.max)) +
          ", got " + text;
    return std::nullopt;
  }
  return value;
}

// The type a bare default implies: `model.dropout: 0.1` is a float defaulting to 0.1.
KeyType implied_type(const YAML::Node& value) {
  if (!value.IsScalar() || value.Tag() == "!") {
    return KeyType::string;
  }
  const std::string text = value.Scalar();
  if (text == "true" || text == "false") {
    return KeyType::boolean;
  }
  try {
    (void)value.as<int64_t>();
    return KeyType::integer;
  } catch (const YAML::Exception&) {
  }
  try {
    (void)value.as<double>();
    return KeyType::real;
  } catch (const YAML::Exception&) {
  }
  return parse_size(text) ? KeyType::size : KeyType::string;
}

TrainerKey read_key(const std::string& name, const YAML::Node& decl, Diagnostics& diags) {
  TrainerKey key;
  key.name = name;
  auto take_default = [&](const YAML::Node& fallback) {
    if (!fallback.IsDefined() || fallback.IsNull()) {
      return;  // required: base or an intervention must set it
    }
    std::string why;
    if (const auto v = typed(fallback, key, why)) {
      key.fallback = *v;
    } else {
      diags.error(fallback.Mark(), "the default of " + why);
    }
  };
  if (!decl.IsMap()) {  // the shorthand: a default, its type implied
    key.type = implied_type(decl);
    take_default(decl);
    return key;
  }
  MapReader r(decl, "trainer.keys." + name, diags);
  r.require("type", "one of " + join(choice_names<KeyType>(), ", "));
  r.read_choice("type", key.type);
  const YAML::Node fallback = r.section("default");
  const YAML::Node choices = r.section("choices");
  double min = std::nan(""), max = std::nan("");
  r.read("min", min, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
  r.read("max", max, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
  r.finish();
  if (std::isfinite(min)) {
    key.min = min;
  }
  if (std::isfinite(max)) {
    key.max = max;
  }
  if ((key.min || key.max) && key.type != KeyType::integer && key.type != KeyType::real && key.type != KeyType::size) {
    diags.error(decl.Mark(), "key '" + name + "': min and max belong to int, float and size keys");
  }
  if (key.min && key.max && *key.min > *key.max) {
    diags.error(decl.Mark(), "key '" + name + "': min is above max");
  }
  if (key.type == KeyType::choice) {
    if (!choices.IsDefined() || !choices.IsSequence() || choices.size() == 0) {
      diags.error(choices.IsDefined() ? choices.Mark() : decl.Mark(),
                  "key '" + name + "' of type choice lists its choices, e.g. choices: [constant, cosine]");
    } else {
      for (const auto& c : choices) {
        const std::string text = c.IsScalar() ? c.Scalar() : "";
        if (!c.IsScalar()) {
          diags.error(c.Mark(), "key '" + name + "': each choice is one value, e.g. choices: [constant, cosine]");
        } else if (std::find(key.choices.begin(), key.choices.end(), text) != key.choices.end()) {
          // 1 and "1" reach the trainer as the same text: one of them could never be told apart
          diags.error(c.Mark(), "key '" + name + "': the choice '" + text + "' is listed twice — remove one");
        }
        key.choices.push_back(text);
      }
    }
  } else if (choices.IsDefined()) {
    diags.error(choices.Mark(), "key '" + name + "': choices belong to type choice");
  }
  if (key.type == KeyType::choice && key.choices.empty()) {
    return key;  // its default cannot be checked
  }
  take_default(fallback);
  return key;
}

// Every leaf of a tree of nested maps, as (dotted path, node), in the file's order.
// A key with a dot in it is refused: written in base it would be a second name for a nested key.
void leaves(const YAML::Node& node, const std::string& prefix, std::vector<std::pair<std::string, YAML::Node>>& out,
            Diagnostics& diags) {
  if (!node.IsMap()) {
    out.emplace_back(prefix, node);
    return;
  }
  for (const auto& kv : node) {
    if (kv.first.Scalar().find('.') != std::string::npos) {
      diags.error(kv.first.Mark(), "'" + kv.first.Scalar() + "': write the trainer's keys nested in base (" +
                                       "train: {lr: 0.1}); dotted keys belong to interventions");
      continue;
    }
    leaves(kv.second, prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar(), out, diags);
  }
}

// {a: {b: v}} for "a.b" = v.
void set_dotted(nlohmann::json& values, const std::string& dotted, const nlohmann::json& v) {
  nlohmann::json* node = &values;
  const std::vector<std::string> parts = split(dotted, '.');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    node = &(*node)[parts[i]];
  }
  (*node)[parts.back()] = v;
}

}  // namespace

std::string fill_placeholders(const std::string& text, const std::map<std::string, std::string>& values,
                              std::vector<std::string>* unknown) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "{{") == 0 || text.compare(i, 2, "}}") == 0) {
      out += text[i++];
      continue;
    }
    if (text[i] != '{') {
      out += text[i];
      continue;
    }
    const size_t close = text.find('}', i);
    if (close == std::string::npos) {  // an unclosed {: no placeholder
      if (unknown) {
        unknown->push_back(text.substr(i));
      }
      out += text.substr(i);
      break;
    }
    const std::string name = text.substr(i + 1, close - i - 1);
    const auto it = values.find(name);
    if (it != values.end()) {
      out += it->second;
    } else {
      if (unknown) {
        unknown->push_back("{" + name + "}");
      }
      out += text.substr(i, close - i + 1);
    }
    i = close;
  }
  return out;
}

std::optional<std::string> find_trainer_program(const std::string& program, const std::string& dir) {
  if (program.find('/') == std::string::npos) {
    return find_program(program);
  }
  const fs::path at = fs::path(program).is_absolute() ? fs::path(program) : fs::path(dir) / program;
  if (!fs::is_regular_file(at) || ::access(at.c_str(), X_OK) != 0) {
    return std::nullopt;
  }
  return at.string();
}

std::string OwnTrainer::version() const {
  return sha256_hex(to_json(true).dump()).substr(0, 12);
}

nlohmann::json OwnTrainer::to_json(bool identity) const {
  nlohmann::json j{{"command", command}, {"files", files}};
  if (output) {  // how its result is read is part of what a run is (absent: the ids kept before it existed)
    j["output"] = output->to_json();
  }
  if (!resume_args.empty()) {
    j["resume_args"] = resume_args;
  }
  if (!env.empty()) {
    j["env"] = env;
  }
  if (!identity) {
    j["name"] = name;
    j["dir"] = dir;
    j["stop_grace"] = stop_grace;
  }
  return j;
}

namespace {

// trainer.files: each file's SHA-256, part of every run id — hashed in t.dir, or as `recorded`.
void read_trainer_files(const YAML::Node& files, const YAML::Node& node, OwnTrainer& t,
                        const std::map<std::string, std::string>* recorded, Diagnostics& diags) {
  if (!files.IsDefined() || files.IsNull() || (files.IsSequence() && files.size() == 0)) {
    diags.error(files.IsDefined() ? files.Mark() : node.Mark(),
                "'trainer.files' lists the files whose contents define the trainer (e.g. [train.py, model.py]): they "
                "are part of every run id — without them two different programs would share results");
  } else {
    if (!files.IsSequence()) {
      diags.error(files.Mark(), "'trainer.files' must be a list of the files whose contents define the trainer, "
                                "e.g. [train.py, model.py]");
    } else {
      for (const auto& f : files) {
        const std::string name = f.IsScalar() ? f.Scalar() : "";
        const fs::path at = fs::path(name).is_absolute() ? fs::path(name) : fs::path(t.dir) / name;
        if (recorded) {
          const auto hash = recorded->find(name);
          if (hash == recorded->end()) {
            diags.error(f.Mark(), "'trainer.files': " + name + " is not in the record of the trainer the sweep ran with");
          } else {
            t.files[name] = hash->second;
          }
          continue;
        }
        if (name.empty() || !fs::is_regular_file(at)) {
          diags.error(f.Mark(), "'trainer.files': no file " + at.string() + " (paths are relative to the sweep file)");
          continue;
        }
        if (t.files.count(name)) {
          diags.error(f.Mark(), "'trainer.files' lists " + name + " twice");
          continue;
        }
        t.files[name] = sha256_hex(read_file(at));
      }
    }
  }
}

// trainer.keys: each key's name, type and default.
void read_trainer_keys(const YAML::Node& keys, const YAML::Node& node, const std::string& file, TrainerSpec& spec,
                       Diagnostics& diags) {
  if (!keys.IsDefined() || !keys.IsMap() || keys.size() == 0) {
    diags.error(keys.IsDefined() ? keys.Mark() : node.Mark(),
                "'trainer.keys' declares the keys of the trainer's config, each with its default or type, e.g. "
                "keys: {model.dropout: 0.1, train.schedule: {type: choice, choices: [constant, cosine], default: constant}}");
  } else {
    MapReader dup_check(keys, "trainer.keys", diags);
    for (const auto& kv : keys) {
      const std::string name = kv.first.Scalar();
      const std::vector<std::string> parts = split(name, '.');
      if (name.empty() || std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); }) ||
          parts.front() == "seeds" || parts.front() == "resources" ||
          std::find(k_trainer_placeholders.begin(), k_trainer_placeholders.end(), name) != k_trainer_placeholders.end()) {
        diags.error(kv.first.Mark(), "trainer key '" + name + "': names joined by single dots, not under seeds or "
                                     "resources (sweep sets those), nor a placeholder's name (" +
                                     join(k_trainer_placeholders, ", ") + ")");
        continue;
      }
      for (const auto& other : spec.keys) {  // a.b and a.b.c cannot both be values
        if (name.rfind(other.name + ".", 0) == 0 || other.name.rfind(name + ".", 0) == 0) {
          diags.error(kv.first.Mark(), "trainer key '" + name + "' and '" + other.name + "': one is inside the other");
        }
      }
      spec.keys.push_back(read_key(name, kv.second, diags));
      spec.keys.back().at = {file, kv.first.Mark().line + 1, kv.first.Mark().column + 1};
    }
  }
}

// trainer.env: each probe run in the trainer's folder and its output kept (or taken from `recorded`).
void read_trainer_env(const YAML::Node& env, OwnTrainer& t, const std::map<std::string, std::string>* recorded,
                      Diagnostics& diags) {
  if (!env.IsSequence() || env.size() == 0) {
    diags.error(env.Mark(), "'trainer.env' lists commands whose output is part of every run id, e.g. env: "
                            "[\"python3 -c 'import sys, torch; print(sys.executable, torch.__version__)'\"]");
    return;
  }
  for (const auto& probe : env) {
    const std::string command = probe.IsScalar() ? probe.Scalar() : "";
    if (command.empty()) {
      diags.error(probe.Mark(), "'trainer.env': each probe is one shell command, as a string");
      continue;
    }
    if (recorded && recorded->count(command)) {
      t.env[command] = recorded->at(command);
      continue;
    }
    const std::vector<std::string> argv{"sh", "-c", "cd \"$0\" && exec sh -c \"$1\"", t.dir, command};
    const Captured got = run_capture(argv);
    const std::vector<std::string> lines = split(trim(got.output), '\n');
    if (got.code != 0) {
      diags.error(probe.Mark(), "'trainer.env': `" + command + "` exited " + std::to_string(got.code) +
                                    (lines.empty() ? "" : ": " + lines.back()) +
                                    " — run sweep in the environment the trainer needs (activate it), or mend the probe");
      continue;
    }
    if (trim(got.output).empty()) {
      diags.error(probe.Mark(), "'trainer.env': `" + command + "` printed nothing — a probe prints what the "
                                    "environment is (a version, a path)");
      continue;
    }
    // the same environment must say the same twice: a probe that varies (a clock, a GPU's load) would
    // give every `sweep run` new run ids and train the whole study again
    if (const Captured again = run_capture(argv); trim(again.output) != trim(got.output)) {
      diags.error(probe.Mark(), "'trainer.env': `" + command + "` printed something else when run again ('" +
                                    trim(got.output).substr(0, 80) + "', then '" + trim(again.output).substr(0, 80) +
                                    "') — a probe must print the same in the same environment, or every run "
                                    "trains anew");
      continue;
    }
    t.env[command] = trim(got.output);
  }
}

// trainer.command: each part's placeholders known, the program found (when `find`: not for a
// record of a trainer, which may be elsewhere).
void read_trainer_command(const YAML::Node& command, TrainerSpec& spec, bool find, Diagnostics& diags) {
  OwnTrainer& t = spec.trainer;
  if (command.IsDefined() && (!command.IsSequence() || command.size() == 0)) {
    diags.error(command.Mark(), "'trainer.command' must be a non-empty list: the program and its arguments, e.g. "
                                "[python3, train.py, --config, \"{config_json}\"]");
  } else if (command.IsDefined()) {
    for (const auto& part : command) {
      const std::string text = part.IsScalar() ? part.Scalar() : "";
      if (!part.IsScalar()) {
        diags.error(part.Mark(), "'trainer.command': each part is one string");
        continue;
      }
      // {name} placeholders: each must be one sweep fills in; {{ and }} are literal braces
      std::map<std::string, std::string> known;
      for (const auto& name : k_trainer_placeholders) {
        known[name] = "";
      }
      for (const auto& k : spec.keys) {
        known[k.name] = "";
      }
      std::vector<std::string> unknown;
      fill_placeholders(text, known, &unknown);
      for (const auto& u : unknown) {
        if (u.front() != '{' || u.back() != '}') {
          diags.error(part.Mark(), "'trainer.command': an unclosed { in '" + text + "' (write {{ for a literal brace)");
          continue;
        }
        std::vector<std::string> names;
        for (const auto& [name, value] : known) {
          names.push_back(name);
        }
        const std::string near = closest_match(u.substr(1, u.size() - 2), names);
        diags.error(part.Mark(), "'trainer.command': unknown placeholder " + u +
                                     (near.empty() ? "" : " — did you mean {" + near + "}?") + " (known: {" +
                                     join(k_trainer_placeholders, "}, {") + "} and each declared key, e.g. {" +
                                     (spec.keys.empty() ? std::string("train.lr") : spec.keys.front().name) +
                                     "}; {{ and }} are literal braces)");
      }
      t.command.push_back(text);
    }
    // The program: a path (relative to the sweep file's folder) must be an executable file; a
    // bare name must be on PATH.
    if (!t.command.empty()) {
      const std::string& program = t.command.front();
      const bool path = program.find('/') != std::string::npos;
      if (program.empty()) {
        diags.error(command[0].Mark(), "'trainer.command': its first part, the program, is empty — name the program, "
                                       "e.g. [python3, train.py]");
      } else if (find && !find_trainer_program(program, t.dir)) {
        diags.error(command[0].Mark(),
                    "'trainer.command': " + program +
                        (path ? " is not an executable file (paths are relative to the sweep file's folder " + t.dir + ")"
                              : " is not found on PATH") +
                        " — install it, or name the program by its path");
      }
    }
  }
}

}  // namespace

TrainerSpec read_trainer(const YAML::Node& node, const std::string& file, Diagnostics& diags, const TrainerRecord* record) {
  TrainerSpec spec;
  OwnTrainer& t = spec.trainer;
  t.dir = record ? record->dir : fs::absolute(file).lexically_normal().parent_path().string();
  const bool as_recorded = record && !record->files.empty();
  MapReader r(node, "trainer", diags);
  r.read("name", t.name);
  r.require("command", "the program that trains one run, as a list: command: [python3, train.py, --config, \"{config_json}\"]");
  const YAML::Node command = r.section("command");
  const YAML::Node files = r.section("files");
  const YAML::Node keys = r.section("keys");
  r.read("stall_timeout", spec.stall_timeout, 0, 999999);
  r.read("stop_grace", t.stop_grace, 0, 86400);
  const YAML::Node output = r.section("output"), resume_args = r.section("resume_args"), env = r.section("env");
  r.finish();
  if (t.name.empty()) {
    t.name = record && !record->name.empty() ? record->name : fs::path(file).stem().string();
  }
  read_trainer_files(files, node, t, as_recorded ? &record->files : nullptr, diags);
  read_trainer_keys(keys, node, file, spec, diags);  // before the command: its placeholders name the keys
  read_trainer_command(command, spec, !as_recorded, diags);
  if (output.IsDefined()) {
    std::vector<std::string> names;
    for (const auto& k : spec.keys) {
      names.push_back(k.name);
    }
    t.output = read_trainer_output(output, names, diags);
    for (const auto& [name, sha] : t.files) {
      if (fs::path(name).filename() == "sweep_events.py") {
        diags.error(output.Mark(), "'trainer.output' reads the program's own lines, but its files include " + name +
                                       ", sweep's events client: a program prints events or is read by rules, not "
                                       "both — drop 'output' (it prints events) or the client from 'files'");
      }
    }
  }
  if (env.IsDefined()) {
    read_trainer_env(env, t, record && !record->env.empty() ? &record->env : nullptr, diags);
  }
  if (resume_args.IsDefined()) {
    if (!resume_args.IsSequence() || resume_args.size() == 0) {
      diags.error(resume_args.Mark(), "'trainer.resume_args' is a list of the arguments added to the command when a "
                                      "run resumes from its checkpoint, e.g. [--init_from=resume]");
    } else {
      for (const auto& a : resume_args) {
        if (!a.IsScalar()) {
          diags.error(a.Mark(), "'trainer.resume_args': each argument is one string");
        } else {
          t.resume_args.push_back(a.Scalar());
        }
      }
    }
  }
  return spec;
}

nlohmann::json resolve_trainer_values(const YAML::Node& tree, const TrainerSpec& spec, const std::string& file,
                                      const std::map<std::string, Origin>& origins) {
  Diagnostics diags(file, origins);
  std::vector<std::pair<std::string, YAML::Node>> given;
  if (tree.IsDefined() && tree.IsMap()) {
    for (const auto& kv : tree) {
      const std::string top = kv.first.Scalar();
      if (top.find('.') != std::string::npos) {
        diags.error(kv.first.Mark(), "'" + top + "': write the trainer's keys nested in base (train: {lr: 0.1}); "
                                     "dotted keys belong to interventions");
      } else if (top != "resources" && top != "seeds") {  // the scheduler's, read as for every run
        leaves(kv.second, top, given, diags);
      }
    }
  }
  std::vector<std::string> names;
  for (const auto& k : spec.keys) {
    names.push_back(k.name);
  }
  nlohmann::json values = nlohmann::json::object();
  std::vector<std::string> set;
  for (const auto& [path, node] : given) {
    const auto key = std::find_if(spec.keys.begin(), spec.keys.end(), [&](const TrainerKey& k) { return k.name == path; });
    if (key == spec.keys.end()) {
      const std::string near = closest_match(path, names);
      diags.error_at_key(path, node, "unknown key '" + path + "': the trainer does not declare it" +
                                         (near.empty() ? "" : " — did you mean '" + near + "'?") +
                                         " (declare it under trainer.keys)");
      continue;
    }
    std::string why;
    if (const auto v = typed(node, *key, why)) {
      set_dotted(values, path, *v);
      set.push_back(path);
    } else {
      diags.error(path, node, why);
    }
  }
  for (const auto& k : spec.keys) {
    if (std::find(set.begin(), set.end(), k.name) != set.end()) {
      continue;
    }
    if (k.fallback.is_null()) {
      diags.error(k.at, "trainer key '" + k.name + "' has no default and nothing sets it — give it a default, or set it in base");
    } else {
      set_dotted(values, k.name, k.fallback);
    }
  }
  diags.throw_if_any();
  return values;
}

}  // namespace sweep
