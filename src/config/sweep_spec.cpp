#include "config/sweep_spec.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/text.h"

namespace sweep {

namespace {

Origin origin_of(const std::string& file, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  return {file, m.is_null() ? 0 : m.line + 1, m.is_null() ? 0 : m.column + 1};
}

std::string short_key(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

std::string scalar_text(const YAML::Node& value) {
  if (value.IsScalar()) {
    return value.Scalar();
  }
  YAML::Emitter out;
  out << YAML::Flow << value;
  return out.c_str();
}

// ---- seeds: a list (init = data), or {init: [...], data: [...], repeat: k} ----
struct SeedPlan {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  int64_t repeat = 1;
};

std::vector<int64_t> int_list(const YAML::Node& node, const std::string& what, Diagnostics& diags) {
  std::vector<int64_t> out;
  if (!node.IsDefined()) {
    return out;
  }
  if (!node.IsSequence() || node.size() == 0) {
    diags.error(node.Mark(), "'" + what + "' must be a non-empty list of integers, e.g. [1, 2, 3]");
    return out;
  }
  for (const auto& item : node) {
    try {
      const int64_t v = item.as<int64_t>();
      if (v < 0) {
        throw YAML::Exception(item.Mark(), "negative");
      }
      if (std::find(out.begin(), out.end(), v) != out.end()) {
        diags.error(item.Mark(), "'" + what + "' lists " + std::to_string(v) +
                                     " twice — a seed is run once (use repeat: k to rerun identical seeds)");
        continue;
      }
      out.push_back(v);
    } catch (const YAML::Exception&) {
      diags.error(item.Mark(), "'" + what + "' must hold non-negative integers, got " + scalar_text(item));
    }
  }
  return out;
}

SeedPlan read_seeds(const YAML::Node& node, Diagnostics& diags) {
  SeedPlan plan;
  if (!node.IsDefined()) {
    plan.pairs = {{1, 1}};
    return plan;
  }
  if (node.IsSequence()) {
    for (int64_t s : int_list(node, "seeds", diags)) {
      plan.pairs.emplace_back(s, s);
    }
    return plan;
  }
  MapReader r(node, "seeds", diags);
  std::vector<int64_t> init = int_list(r.section("init"), "seeds.init", diags);
  std::vector<int64_t> data = int_list(r.section("data"), "seeds.data", diags);
  r.read("repeat", plan.repeat, 1, 1000);
  r.finish();
  if (init.empty()) {
    init = {1};
  }
  if (data.empty()) {
    data = {1};
  }
  for (int64_t i : init) {
    for (int64_t d : data) {
      plan.pairs.emplace_back(i, d);
    }
  }
  return plan;
}

// Seeds are the sweep's (its top-level `seeds:`), never a variant's: a seed set in base or in an
// override would be replaced by the sweep's seeds without a word.
void refuse_seeds(const std::string& path, const YAML::Mark& at, Diagnostics& diags) {
  if (path == "seeds" || path.rfind("seeds.", 0) == 0) {
    diags.error(at, "'" + path + "': seeds belong to the sweep, not to a variant — list them in the top-level "
                    "'seeds:' ([1, 2, 3], or {init: [...], data: [...]})");
  }
}

// ---- interventions: name -> {dotted.key: value, ...} ----
std::vector<Override> read_overrides(const YAML::Node& node, const std::string& file, const std::string& where,
                                     Diagnostics& diags) {
  std::vector<Override> out;
  if (!node.IsDefined() || node.IsNull()) {
    return out;
  }
  if (!node.IsMap()) {
    diags.error(node.Mark(), where + " must be a map of dotted overrides, e.g. {train.lr: 1e-3}");
    return out;
  }
  MapReader dup_check(node, where, diags);  // reports duplicate keys
  for (const auto& kv : node) {
    refuse_seeds(kv.first.Scalar(), kv.first.Mark(), diags);
    out.push_back({kv.first.Scalar(), kv.second, origin_of(file, kv.first)});
  }
  return out;
}

void check_name(const std::string& name, const YAML::Node& at, const std::string& what, Diagnostics& diags) {
  if (!is_safe_name(name)) {
    diags.error(at.Mark(), "invalid " + what + " name '" + name +
                               "': use letters, digits and _ - . + = , only, starting with a letter or digit (names become table keys and file names)");
  }
}

// One point of the grid × zip: the axis overrides it adds, one per axis key (located at the
// key, as every override is), and where each value is written.
struct Combo {
  std::vector<Override> overrides;
  std::vector<Origin> values_at;
  std::string rung;  // a ladder's rung: names the variant instead of the axis values
};

// "the sweep expands to more than N variants (...) — ...", for an expansion past --max-variants.
std::string too_many(size_t max_variants, const std::string& why) {
  return "the sweep expands to more than --max-variants " + std::to_string(max_variants) + " variants (" + why +
         ") — split it into smaller sweeps, or raise --max-variants";
}

// Reads `grid` (each key its own dimension) and `zip` (its keys one dimension) into the points
// of their cartesian product, and the dimensions into `axes` — or stops, reporting it, before
// the points would pass `max_points`.
std::vector<Combo> read_axes(const YAML::Node& grid, const YAML::Node& zip, const std::string& file,
                             std::vector<SweepAxis>& axes, size_t max_points, Diagnostics& diags) {
  std::vector<Combo> combos{{}};
  if (grid.IsDefined() && !grid.IsNull() && !(grid.IsMap() && grid.size() == 0)) {
    if (!grid.IsMap()) {
      diags.error(grid.Mark(), "'grid' must be a map of dotted key: [values]");
    } else {
      MapReader dup_check(grid, "grid", diags);
      for (const auto& axis : grid) {
        if (!axis.second.IsSequence() || axis.second.size() == 0) {
          diags.error(axis.second.Mark(), "grid axis '" + axis.first.Scalar() + "' must be a non-empty list");
          continue;
        }
        refuse_seeds(axis.first.Scalar(), axis.first.Mark(), diags);
        axes.push_back({"grid", {axis.first.Scalar()}});
        if (combos.size() * axis.second.size() > max_points) {  // before expanding: memory stays small
          diags.error(axis.first.Mark(), too_many(max_points, std::to_string(combos.size()) + " grid points × " +
                                                                  std::to_string(axis.second.size()) + " values of '" +
                                                                  axis.first.Scalar() + "'"));
          return combos;
        }
        std::vector<Combo> next;
        for (const auto& c : combos) {
          for (const auto& value : axis.second) {
            Combo n = c;
            n.overrides.push_back({axis.first.Scalar(), value, origin_of(file, axis.first)});
            n.values_at.push_back(origin_of(file, value));
            next.push_back(n);
          }
        }
        combos = next;
      }
    }
  }
  if (zip.IsDefined() && !zip.IsNull() && !(zip.IsMap() && zip.size() == 0)) {
    if (!zip.IsMap()) {
      diags.error(zip.Mark(), "'zip' must be a map of dotted key: [values], all lists of one length");
      return combos;
    }
    MapReader dup_check(zip, "zip", diags);
    size_t length = 0;
    for (const auto& axis : zip) {
      if (!axis.second.IsSequence() || axis.second.size() == 0) {
        diags.error(axis.second.Mark(), "zip axis '" + axis.first.Scalar() + "' must be a non-empty list");
        return combos;
      }
      if (length != 0 && axis.second.size() != length) {
        diags.error(axis.second.Mark(), "zip axis '" + axis.first.Scalar() + "' has " +
                                            std::to_string(axis.second.size()) + " values, the first axis has " +
                                            std::to_string(length) + " — zip axes vary together");
        return combos;
      }
      length = axis.second.size();
      refuse_seeds(axis.first.Scalar(), axis.first.Mark(), diags);
      if (std::any_of(axes.begin(), axes.end(), [&](const SweepAxis& a) { return a.keys.front() == axis.first.Scalar(); })) {
        diags.error(axis.first.Mark(), "'" + axis.first.Scalar() + "' is on both grid and zip — an axis key belongs to one of them");
      }
    }
    SweepAxis dimension{"zip", {}};
    for (const auto& axis : zip) {
      dimension.keys.push_back(axis.first.Scalar());
    }
    axes.push_back(dimension);
    if (combos.size() * length > max_points) {
      diags.error(zip.Mark(), too_many(max_points, std::to_string(combos.size()) + " grid points × " +
                                                       std::to_string(length) + " zip positions"));
      return combos;
    }
    std::vector<Combo> next;
    for (const auto& c : combos) {
      for (size_t i = 0; i < length; ++i) {
        Combo n = c;
        for (const auto& axis : zip) {
          n.overrides.push_back({axis.first.Scalar(), axis.second[i], origin_of(file, axis.first)});
          n.values_at.push_back(origin_of(file, axis.second[i]));
        }
        next.push_back(n);
      }
    }
    combos = next;
  }
  return combos;
}

// Reads `scale:` into the ladder and one point per rung, and the rung keys into `axes` (one
// dimension). The tokens a `tokens_per_param` ladder trains are set later, once the baseline's
// parameters at each rung are known (they depend on the dataset's vocabulary).
std::vector<Combo> read_scale(const YAML::Node& node, const std::string& file, std::vector<SweepAxis>& axes,
                              std::optional<Ladder>& ladder, Diagnostics& diags) {
  std::vector<Combo> combos;
  Ladder l;
  MapReader r(node, "scale", diags);
  r.require("rungs", "3 or more named rungs, smallest first, e.g. rungs: {small: {model.n_layer: 2, "
                     "model.n_embd: 128}, ...}");
  const YAML::Node rungs = r.section("rungs");
  r.read("tokens_per_param", l.tokens_per_param, 0, 1e6, true);
  r.read("beyond", l.beyond, 1, 1e12);
  const YAML::Node target = r.section("target");
  r.finish();
  SweepAxis dimension{"scale", {}};
  if (rungs.IsDefined() && (!rungs.IsMap() || rungs.size() < 3)) {
    diags.error(rungs.Mark(), "'scale.rungs' must be a map of 3 or more named rungs (a trend needs 3), smallest "
                              "first, e.g. {small: {model.n_layer: 2}, medium: {model.n_layer: 4}, large: {model.n_layer: 8}}");
  } else if (rungs.IsDefined()) {
    MapReader dup_check(rungs, "scale.rungs", diags);
    for (const auto& kv : rungs) {
      const std::string name = kv.first.Scalar();
      check_name(name, kv.first, "rung", diags);
      Combo c;
      c.rung = name;
      c.overrides = read_overrides(kv.second, file, "rung '" + name + "'", diags);
      if (c.overrides.empty()) {
        diags.error(kv.first.Mark(), "rung '" + name + "' sets no key — a rung is a model size, e.g. "
                                     "{model.n_layer: 4, model.n_head: 4, model.n_embd: 256}");
      }
      for (const auto& o : c.overrides) {
        if (o.path == "train.tokens" && l.tokens_per_param > 0) {
          diags.error(o.origin, "rung '" + name + "' sets train.tokens, and scale.tokens_per_param sets every "
                                "rung's tokens — keep one of them");
        }
        if (std::find(dimension.keys.begin(), dimension.keys.end(), o.path) == dimension.keys.end()) {
          dimension.keys.push_back(o.path);
        }
        c.values_at.push_back(origin_of(file, o.value));
      }
      l.rungs.push_back(name);
      combos.push_back(c);
    }
  }
  if (l.tokens_per_param > 0) {
    dimension.keys.push_back("train.tokens");
  }
  if (target.IsDefined() && !target.IsNull()) {
    MapReader t(target, "scale.target", diags);
    int64_t params = 0;
    double flops = 0;
    t.read_size("params", params, 1);
    t.read("flops", flops, 0, 1e40, true);
    t.finish();
    if ((params > 0) == (flops > 0)) {
      diags.error(target.Mark(), "'scale.target' names one size to extrapolate to: {params: 124M} or {flops: 1e18}");
    }
    l.target_unit = params > 0 ? "params" : "flops";
    l.target = params > 0 ? static_cast<double>(params) : flops;
  }
  axes.push_back(dimension);
  ladder = l;
  return combos;
}

// How an axis key appears in variant names: its last part ("grad_accum"), or the whole dotted
// key when two axes share a last part.
std::map<std::string, std::string> axis_labels(const std::vector<SweepAxis>& axes) {
  std::map<std::string, int> uses;
  for (const auto& a : axes) {
    for (const auto& k : a.keys) {
      uses[short_key(k)]++;
    }
  }
  std::map<std::string, std::string> out;
  for (const auto& a : axes) {
    for (const auto& k : a.keys) {
      out[k] = uses[short_key(k)] > 1 ? k : short_key(k);
    }
  }
  return out;
}

// The value of a dotted key in a resolved config ("train.lr" -> 0.001); null when absent.
nlohmann::json value_at(const nlohmann::json& config, const std::string& dotted) {
  const nlohmann::json* node = &config;
  for (const auto& part : split(dotted, '.')) {
    if (!node->is_object() || !node->contains(part)) {
      return nullptr;
    }
    node = &(*node)[part];
  }
  return *node;
}

// Two override values mean the same setting: the same text, or the same number.
bool same_value(const YAML::Node& a, const YAML::Node& b) {
  const std::string x = scalar_text(a), y = scalar_text(b);
  if (x == y) {
    return true;
  }
  try {
    return a.IsScalar() && b.IsScalar() && a.as<double>() == b.as<double>();
  } catch (const YAML::Exception&) {
    return false;
  }
}

Diagnostic at(const Origin& o, const std::string& message) { return {o.file, o.line, o.col, message}; }

}  // namespace

bool is_safe_name(const std::string& name) {
  if (name.empty() || name.size() > 100 || !std::isalnum(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  for (char ch : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.' ||
                    ch == '+' || ch == '=' || ch == ',';
    if (!ok) {
      return false;
    }
  }
  return name.find("..") == std::string::npos;
}

namespace {

// references: {NAME: {model: FILE, config: RUN_CONFIG, n_head: N, ignore_extra: BOOL}}, files relative to the sweep file.
std::vector<ReferenceModel> read_references(const YAML::Node& node, const std::string& path, Diagnostics& diags) {
  std::vector<ReferenceModel> out;
  if (!node.IsDefined() || node.IsNull()) {
    return out;
  }
  if (!node.IsMap()) {
    diags.error(node.Mark(), "'references' must be a map of name: {model: FILE}, e.g. references: {\"GPT-2 124M\": "
                             "{model: gpt2-124M.pt}}");
    return out;
  }
  MapReader dup_check(node, "references", diags);
  const fs::path folder = fs::path(path).parent_path();
  for (const auto& kv : node) {
    ReferenceModel r;
    r.name = kv.first.Scalar();
    // A display name ("GPT-2 124M") that reaches terminals, Markdown and HTML: printable UTF-8
    // without markup (a table's |, <, >, `), 1 to 100 characters.
    if (r.name.empty() || r.name.size() > 100 || invalid_utf8_at(r.name) != std::string::npos ||
        printable(r.name, false) != r.name || r.name.find_first_of("<>|`\\") != std::string::npos) {
      diags.error(kv.first.Mark(), "reference name '" + printable(r.name, false) +
                                       "': 1 to 100 printable characters on one line, without < > | ` or \\");
    }
    MapReader ref(kv.second, "references." + r.name, diags);
    ref.require("model", "the state dict file to score, e.g. model: gpt2-124M.pt (see `sweep eval`)");
    ref.read("model", r.model);
    ref.read("config", r.config);
    ref.read("n_head", r.n_head, 1, 4096);
    ref.read("ignore_extra", r.ignore_extra);
    ref.finish();
    for (auto* file : {&r.model, &r.config}) {
      if (file->empty()) {
        continue;
      }
      const fs::path found = fs::path(*file).is_absolute() ? fs::path(*file) : folder / *file;
      if (!fs::is_regular_file(found)) {
        diags.error(kv.second[file == &r.model ? "model" : "config"].Mark(),
                    "references." + r.name + "." + (file == &r.model ? "model" : "config") + ": no file " +
                        found.string() + " (paths are relative to the sweep file)");
      }
      *file = found.string();
    }
    out.push_back(r);
  }
  return out;
}

// A ladder's rung `rung` as its baseline `c` (vocabulary filled in) has it: larger than the rung
// before (`previous`, the baseline one rung down), its tokens under `tokens_per_param`, and —
// at the smallest rung — below the target.
void check_rung(const YAML::Node& root, const std::string& path, const Ladder& ladder, size_t rung, const RunConfig& c,
                const RunConfig* previous, std::vector<int64_t>& rung_tokens, std::vector<Diagnostic>& problems) {
  const YAML::Node scale = root["scale"];
  const ModelSize size = model_size(c.model);
  const YAML::Node keys = scale["rungs"][ladder.rungs[rung]];
  if (previous) {
    const int64_t before = model_size(previous->model).total;
    if (size.total <= before) {
      problems.push_back(at(origin_of(path, keys), "rung '" + ladder.rungs[rung] + "' has " +
                                                       format_count(static_cast<double>(size.total)) +
                                                       " parameters, no more than rung '" + ladder.rungs[rung - 1] +
                                                       "''s " + format_count(static_cast<double>(before)) +
                                                       " — list the rungs smallest first, each larger than the one before"));
    }
  }
  const int64_t tokens = ladder.tokens_per_param > 0
                             ? std::llround(ladder.tokens_per_param * static_cast<double>(size.total))
                             : c.train.tokens;
  rung_tokens.push_back(tokens);
  if (rung == 0 && !ladder.target_unit.empty()) {
    const double smallest = ladder.target_unit == "params" ? static_cast<double>(size.total)
                                                           : size.flops_per_token * static_cast<double>(tokens);
    if (ladder.target <= smallest) {
      problems.push_back(at(origin_of(path, scale["target"]),
                            "scale.target (" + format_count(ladder.target) + " " + ladder.target_unit +
                                ") is not above the smallest rung's " + format_count(smallest) +
                                " — a target is where the trend is extrapolated to, beyond the ladder's start"));
    }
  }
}

}  // namespace

nlohmann::json Ladder::to_json() const {
  nlohmann::json j{{"rungs", rungs}, {"tokens_per_param", tokens_per_param}, {"beyond", beyond}};
  if (!target_unit.empty()) {
    j["target"] = {{target_unit, target}};
  }
  return j;
}

Ladder Ladder::from_json(const nlohmann::json& j) {
  Ladder l;
  l.rungs = j.at("rungs").get<std::vector<std::string>>();
  l.tokens_per_param = j.value("tokens_per_param", 0.0);
  l.beyond = j.value("beyond", 10.0);
  if (j.contains("target")) {
    l.target_unit = j["target"].begin().key();
    l.target = j["target"].begin().value().get<double>();
  }
  return l;
}

std::string run_id_of(const RunConfig& config, int64_t repeat) {
  nlohmann::json j = config.identity_json();
  if (repeat > 0) {
    j["repeat"] = repeat;
  }
  return sha256_hex(j.dump()).substr(0, 16);
}

SweepSpec load_sweep(const std::string& path, const VocabLookup& vocab_of, size_t max_variants,
                     const std::string& trainer_dir) {
  SweepSpec spec;
  spec.file = path;
  const YAML::Node root = load_yaml_file(path);
  spec.text = read_file(path);
  Diagnostics diags(path);

  // ---- the top level ----
  MapReader top(root, "", diags);
  top.require("sweep", "the sweep's name, e.g. sweep: interventions");
  top.read("sweep", spec.name);
  top.require("baseline", "the name of the intervention every other is compared with, e.g. baseline: baseline");
  top.read("baseline", spec.baseline);
  const SeedPlan seeds = read_seeds(top.section("seeds"), diags);
  spec.design.first = static_cast<int64_t>(seeds.pairs.size());
  spec.design.seed_list = seeds.repeat == 1 && std::all_of(seeds.pairs.begin(), seeds.pairs.end(),
                                                           [](const auto& p) { return p.first == p.second; });
  top.read("min_effect", spec.design.min_effect, 0, std::numeric_limits<double>::infinity(), true, true);
  top.require("base", "the baseline RunConfig (data, model, train, eval)");
  const YAML::Node base = top.section("base");
  if (base.IsDefined() && !base.IsMap()) {
    diags.error(base.Mark(), "'base' must be a map: the baseline RunConfig, e.g. base: {data: {dataset: DIR}, "
                             "train: {tokens: 5M}}");
  }
  if (base.IsDefined() && base.IsMap()) {
    for (const auto& kv : base) {
      refuse_seeds(kv.first.Scalar(), kv.first.Mark(), diags);
    }
  }
  spec.references = read_references(top.section("references"), path, diags);
  if (const YAML::Node trainer = top.section("trainer"); trainer.IsDefined() && !trainer.IsNull()) {
    spec.trainer = read_trainer(trainer, path, diags, trainer_dir);
    if (!spec.references.empty()) {
      diags.error(root["references"].Mark(), "'references' are scored by sweep's own model families: not with a "
                                             "trainer: of your own");
    }
  }
  top.require("interventions", "a map of name: {dotted.key: value}, with the baseline as {}");
  const YAML::Node interventions = top.section("interventions");
  const YAML::Node combine = top.section("combine");
  std::vector<Combo> combos =
      read_axes(top.section("grid"), top.section("zip"), path, spec.axes, max_variants, diags);
  if (const YAML::Node scale = top.section("scale"); scale.IsDefined() && !scale.IsNull()) {
    if (!spec.axes.empty()) {
      diags.error(scale.Mark(), "a sweep has a scale ladder or grid/zip axes, not both: crossing them would compare "
                                "every grid point at every rung — run the grid as its own sweep at one size, or one "
                                "ladder per grid value");
    } else {
      combos = read_scale(scale, path, spec.axes, spec.ladder, diags);
    }
  }
  top.finish();
  if (spec.trainer && spec.ladder && spec.ladder->tokens_per_param > 0) {
    diags.error(root["scale"]["tokens_per_param"].Mark(),
                "scale.tokens_per_param needs each rung's parameters before it runs, which sweep counts for its own "
                "models only: with a trainer of your own, set each rung's tokens key in the rungs");
  }
  if (!spec.name.empty()) {
    check_name(spec.name, root["sweep"], "sweep", diags);
  }

  // ---- interventions and combinations: the named variants ----
  std::vector<Variant> named;
  std::map<std::string, size_t> index;
  if (interventions.IsDefined() && interventions.IsMap()) {
    MapReader dup_check(interventions, "interventions", diags);
    for (const auto& kv : interventions) {
      const std::string name = kv.first.Scalar();
      check_name(name, kv.first, "intervention", diags);
      if (index.count(name)) {
        continue;  // reported as a duplicate key
      }
      index[name] = named.size();
      Variant v;
      v.name = v.intervention = name;
      v.overrides = read_overrides(kv.second, path, "intervention '" + name + "'", diags);
      named.push_back(v);
    }
  } else if (interventions.IsDefined()) {
    diags.error(interventions.Mark(), "'interventions' must be a map of name: {dotted.key: value}");
  }
  if (combine.IsDefined() && !combine.IsNull()) {
    if (!combine.IsMap()) {
      diags.error(combine.Mark(), "'combine' must be a map of name: [intervention, ...]");
    } else {
      MapReader dup_check(combine, "combine", diags);
      std::vector<std::string> intervention_names;
      for (const auto& v : named) {
        intervention_names.push_back(v.name);
      }
      for (const auto& kv : combine) {
        const std::string name = kv.first.Scalar();
        check_name(name, kv.first, "combination", diags);
        if (index.count(name)) {
          diags.error(kv.first.Mark(), "duplicate variant name '" + name + "': it is already an intervention");
          continue;
        }
        if (!kv.second.IsSequence() || kv.second.size() == 0) {
          diags.error(kv.second.Mark(), "combination '" + name + "' must list interventions, e.g. [a, b]");
          continue;
        }
        Variant combined;
        combined.name = combined.intervention = name;
        std::map<std::string, std::pair<std::string, const Override*>> set_by;  // key -> (part, its override)
        for (const auto& item : kv.second) {
          const std::string part = item.IsScalar() ? item.Scalar() : "";
          auto it = std::find(intervention_names.begin(), intervention_names.end(), part);
          if (it == intervention_names.end()) {
            std::string message = "unknown intervention '" + part + "' in combination '" + name + "'";
            const std::string near = closest_match(part, intervention_names);
            diags.error(item.Mark(), message + (near.empty() ? "" : " — did you mean '" + near + "'?"));
            continue;
          }
          if (part == spec.baseline || std::find(combined.parts.begin(), combined.parts.end(), part) != combined.parts.end()) {
            diags.error(item.Mark(), "combination '" + name + "': '" + part + "' " +
                                         (part == spec.baseline ? "is the baseline, which changes nothing"
                                                                : "is listed twice") +
                                         " — list each intervention it combines once");
            continue;
          }
          combined.parts.push_back(part);
          for (const auto& o : named[index[part]].overrides) {
            auto [prev, fresh] = set_by.emplace(o.path, std::make_pair(part, &o));
            if (!fresh && !same_value(prev->second.second->value, o.value)) {
              diags.error(item.Mark(), "combination '" + name + "': '" + part + "' sets '" + o.path + "' to " +
                                           scalar_text(o.value) + ", '" + prev->second.first + "' to " +
                                           scalar_text(prev->second.second->value) +
                                           " — a combination's parts must agree on every key they share");
            }
            combined.overrides.push_back(o);
          }
        }
        index[name] = named.size();
        named.push_back(combined);
      }
    }
  }
  for (const auto& v : named) {
    for (const auto& o : v.overrides) {
      const bool on_axis = std::any_of(spec.axes.begin(), spec.axes.end(), [&](const SweepAxis& a) {
        return std::find(a.keys.begin(), a.keys.end(), o.path) != a.keys.end();
      });
      if (on_axis && v.parts.empty() && spec.ladder) {
        diags.error(o.origin, "intervention '" + v.name + "' sets '" + o.path +
                                  "', which the scale ladder's rungs set: an intervention must be the same change at "
                                  "every rung — drop the key from the intervention, or from the rungs");
      } else if (on_axis && v.parts.empty()) {  // a combination repeats its parts' overrides: reported there
        diags.error(o.origin,
                    "intervention '" + v.name + "' sets '" + o.path +
                        "', which a grid/zip axis also varies: the axis would replace it at every point — "
                        "drop it from the intervention or from the axis");
      }
    }
  }
  if (!spec.baseline.empty() && interventions.IsDefined() && !index.count(spec.baseline)) {
    diags.error(root["baseline"].Mark(), "the baseline '" + spec.baseline +
                                             "' is not an intervention — add '" + spec.baseline +
                                             ": {}' under interventions");
  }
  if (named.size() * combos.size() > max_variants) {
    diags.error((root["grid"].IsDefined() ? root["grid"] : root["zip"].IsDefined() ? root["zip"] : interventions).Mark(),
                too_many(max_variants, std::to_string(named.size()) + " interventions and combinations × " +
                                           std::to_string(combos.size()) + " grid/zip points"));
  }
  diags.throw_if_any();

  // ---- resolve every variant × grid/zip point as a RunConfig; errors point at the overrides ----
  std::stable_partition(named.begin(), named.end(), [&](const Variant& v) { return v.name == spec.baseline; });
  std::vector<Diagnostic> problems;
  std::set<std::string> reported;
  auto report = [&](const std::vector<Diagnostic>& list) {
    for (const auto& d : list) {
      if (reported.insert(d.str()).second) {
        problems.push_back(d);
      }
    }
  };
  auto resolve = [&](const std::vector<Override>& overrides, std::vector<Diagnostic>& errors) -> std::optional<RunConfig> {
    // A fresh parse of `base` each time: overrides edit the tree, and YAML::Clone would lose the
    // line:col marks that errors in base are reported at.
    YAML::Node tree = YAML::LoadFile(path)["base"];
    std::map<std::string, Origin> origins;
    apply_overrides(tree, overrides, origins);
    try {
      return spec.trainer ? parse_trainer_run(tree, *spec.trainer, path, origins) : parse_run_config(tree, path, origins);
    } catch (const InputErrors& e) {
      errors = e.diagnostics();
      return std::nullopt;
    }
  };
  const std::map<std::string, std::string> labels = axis_labels(spec.axes);
  const bool has_axes = !spec.axes.empty();
  std::vector<RunConfig> configs;
  std::map<std::string, size_t> by_name;    // expanded name -> index in spec.variants
  std::map<std::string, size_t> by_config;  // run identity -> index: two variants are never one run
  std::vector<std::string> points;          // each variant's grid/zip point as written ("lr=1e-3")
  for (const auto& v : named) {
    // The intervention's own config: what its grid points are named against. (Left out when it
    // is invalid on its own but valid at every grid point; the baseline's must be valid.)
    std::vector<Diagnostic> own_errors;
    const std::optional<RunConfig> own = has_axes ? resolve(v.overrides, own_errors) : std::nullopt;
    if (has_axes && !own && v.name == spec.baseline) {
      report(own_errors);
    }
    const nlohmann::json own_json = own ? own->to_json() : nlohmann::json();
    bool at_own_config = false, all_resolved = true;
    for (const auto& c : combos) {
      Variant full = v;
      full.overrides.insert(full.overrides.end(), c.overrides.begin(), c.overrides.end());
      std::vector<Diagnostic> errors;
      const std::optional<RunConfig> config = resolve(full.overrides, errors);
      if (!config) {
        report(errors);
        all_resolved = false;
        continue;
      }
      const nlohmann::json mine = config->to_json();
      std::string suffix, point;
      if (!c.rung.empty()) {  // a ladder: every variant, the baseline's too, is named by its rung
        full.axes = {{"scale", c.rung}};
        point = c.rung;
        full.name = v.name + "+" + c.rung;
      } else {
        for (size_t k = 0; k < c.overrides.size(); ++k) {
          const std::string& key = c.overrides[k].path;
          const std::string written = labels.at(key) + "=" + scalar_text(c.overrides[k].value);
          full.axes[key] = value_at(mine, key);
          point += (point.empty() ? "" : "+") + written;
          if (!own || value_at(own_json, key) != value_at(mine, key)) {
            suffix += "+" + written;
          }
        }
        at_own_config = at_own_config || (own && suffix.empty());
        full.name = suffix.empty() ? v.name : v.name == spec.baseline ? suffix.substr(1) : v.name + suffix;
      }
      const Origin where = !c.values_at.empty()    ? c.values_at.front()
                           : !v.overrides.empty() ? v.overrides.front().origin
                                                  : Origin{path, 0, 0};
      if (!is_safe_name(full.name)) {
        report({at(where, "the grid/zip values make the variant name '" + full.name +
                              "', which is not a safe name — use plain values (numbers, words): names allow letters, "
                              "digits and _ - . + = , only, at most 100 characters")});
        continue;
      }
      const std::string identity = config->identity_json().dump();
      if (const auto same = by_config.find(identity); same != by_config.end()) {
        const Variant& other = spec.variants[same->second];
        report({at(where, other.intervention == v.name
                              ? "the grid/zip point " + point + " of '" + v.name + "' is the same run config as its point " +
                                    points[same->second] + " — each value must be a different setting (e.g. not both "
                                    "1e-3 and 0.001)"
                              : "variant '" + full.name + "' is the same run config as variant '" + other.name +
                                    "': one run would be counted as two variants — drop one of them")});
        continue;
      }
      if (const auto other = by_name.find(full.name); other != by_name.end()) {
        report({at(where, "two variants are named '" + full.name + "' (the grid/zip point of '" + v.name +
                              "' and '" + spec.variants[other->second].intervention + "') — rename the intervention")});
        continue;
      }
      by_config[identity] = by_name[full.name] = spec.variants.size();
      points.push_back(point);
      spec.variants.push_back(full);
      configs.push_back(*config);
    }
    if (has_axes && !spec.ladder && own && all_resolved && v.name == spec.baseline && !at_own_config) {
      std::string base_values;
      for (const auto& a : spec.axes) {
        for (const auto& key : a.keys) {
          base_values += (base_values.empty() ? "" : ", ") + key + ": " + value_at(own_json, key).dump();
        }
      }
      report({{path, root["baseline"].Mark().line + 1, root["baseline"].Mark().column + 1,
               "the baseline '" + spec.baseline + "' is on no grid/zip point: base has " + base_values +
                   " — add these values to the axes (as one zip position), or set base to one of the points"}});
    }
  }
  if (!problems.empty()) {
    throw InputErrors(problems);
  }
  // The bare baseline leads (its grid point need not be the first). A ladder's baseline rungs
  // lead already, smallest first.
  const auto bare = std::find_if(spec.variants.begin(), spec.variants.end(),
                                 [&](const Variant& v) { return v.name == spec.baseline; });
  if (bare != spec.variants.end()) {
    const auto lead = bare - spec.variants.begin();
    std::rotate(spec.variants.begin(), bare, bare + 1);
    std::rotate(configs.begin(), configs.begin() + lead, configs.begin() + lead + 1);
  }

  // ---- expand: variants × seeds × repeats ----
  std::map<std::string, int64_t> vocab_cache;  // dataset -> vocab size
  // Where variant i's `section.key` was set: its own override, else base's key, else the file.
  auto set_at = [&](size_t i, const std::string& section, const std::string& key) {
    const auto& o = spec.variants[i].overrides;
    const auto set = std::find_if(o.rbegin(), o.rend(), [&](const Override& x) { return x.path == section + "." + key; });
    if (set != o.rend()) {
      return set->origin;
    }
    const YAML::Node base = root["base"];
    if (base.IsMap() && base[section].IsMap() && base[section][key]) {
      const YAML::Mark mark = base[section][key].Mark();
      return Origin{path, mark.line + 1, mark.column + 1};
    }
    return Origin{path, 0, 0};
  };
  std::vector<int64_t> rung_tokens;  // a tokens_per_param ladder: each rung's, from its baseline
  for (size_t i = 0; i < spec.variants.size(); ++i) {
    RunConfig c = configs[i];
    c.data.dir = spec.trainer ? "" : find_dataset(c.data.dataset, path);
    if (vocab_of && !spec.trainer) {
      auto it = vocab_cache.find(c.data.dataset);
      if (it == vocab_cache.end()) {
        try {
          it = vocab_cache.emplace(c.data.dataset, vocab_of(c.data.dataset, c.data.dir)).first;
        } catch (const Error& e) {
          problems.push_back(at(set_at(i, "data", "dataset"), "data.dataset '" + c.data.dataset + "': " + e.what()));
          vocab_cache.emplace(c.data.dataset, 0);
          continue;
        }
      }
      if (c.model.vocab_size == 0) {
        c.model.vocab_size = it->second;
      } else if (c.model.vocab_size < it->second && it->second > 0) {  // every run of it would fail
        const auto problem = at(set_at(i, "model", "vocab_size"), "'model.vocab_size' (" + std::to_string(c.model.vocab_size) +
                                           ") is smaller than dataset '" + c.data.dataset + "''s " +
                                           std::to_string(it->second) + " — remove it to use the dataset's");
        if (std::none_of(problems.begin(), problems.end(), [&](const auto& p) { return p.str() == problem.str(); })) {
          problems.push_back(problem);  // base's key: once, not once per variant
        }
      }
    }
    if (spec.ladder) {
      const size_t rung = i % spec.ladder->rungs.size();  // variants come intervention by intervention, rung by rung
      if (i < spec.ladder->rungs.size() && !spec.trainer) {  // the baseline's rungs come first; a trainer's sizes are its own
        check_rung(root, path, *spec.ladder, rung, c, i == 0 ? nullptr : &configs[i - 1], rung_tokens, problems);
      }
      if (spec.ladder->tokens_per_param > 0 && rung < rung_tokens.size()) {
        c.train.tokens = rung_tokens[rung];
        if (c.total_steps() < 1) {
          problems.push_back(at(origin_of(path, root["scale"]["tokens_per_param"]),
                                "scale.tokens_per_param gives variant '" + spec.variants[i].name + "' " +
                                    std::to_string(c.train.tokens) + " tokens, less than one optimizer step of " +
                                    std::to_string(c.tokens_per_step()) + " — raise tokens_per_param"));
        }
      }
      configs[i].model.vocab_size = c.model.vocab_size;  // the next rung's check compares sizes with it
    }
    for (const auto& [init, data] : seeds.pairs) {
      for (int64_t r = 0; r < seeds.repeat; ++r) {
        PlannedRun run;
        run.variant = spec.variants[i].name;
        run.repeat = seeds.repeat > 1 ? r : 0;
        run.config = c;
        run.config.seeds.init = init;
        run.config.seeds.data = data;
        run.run_id = run_id_of(run.config, run.repeat);
        spec.runs.push_back(run);
      }
    }
  }
  if (!problems.empty()) {
    throw InputErrors(problems);
  }
  return spec;
}

std::vector<int64_t> SeedDesign::looks(int64_t n) const {
  std::vector<int64_t> out;
  for (int64_t k = first; first > 0 && k < n; k += first) {
    out.push_back(k);
  }
  out.push_back(n);
  return out;
}

std::vector<PlannedRun> added_seed_runs(const SweepSpec& spec, const std::string& variant, int64_t n) {
  std::vector<PlannedRun> out;
  int64_t declared = 0, last_seed = -1;
  const PlannedRun* like = nullptr;
  for (const auto& r : spec.runs) {
    if (r.variant == variant) {
      like = like ? like : &r;
      ++declared;
      last_seed = std::max(last_seed, r.config.seeds.init);
    }
  }
  for (int64_t k = declared; like && k < n; ++k) {
    PlannedRun run = *like;
    run.config.seeds.init = run.config.seeds.data = last_seed + 1 + (k - declared);
    run.run_id = run_id_of(run.config, run.repeat);
    out.push_back(run);
  }
  return out;
}

}  // namespace sweep
