#include "config/sweep_spec.h"

#include "config/sweep_sections.h"

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

using namespace sections;

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

// The `base:` section of a sweep file's text alone, the lines before it left empty so that every
// line:col mark in it is the file's own (the whole text where it cannot be cut out: a root in
// flow style, an alias to an anchor elsewhere). Each variant's config is parsed from it rather
// than from the whole file, whose length grows with its rungs and grid: 600 rungs took 6 s to
// plan, re-reading a 600-line file 1,200 times, and 3,000 rungs did not finish in a minute.
static std::string base_section(const std::string& text, const YAML::Node& root) {
  int base_line = -1, end_line = std::numeric_limits<int>::max();
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == "base") {
      base_line = it->first.Mark().line;
    }
  }
  if (base_line < 0) {
    return text;
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it->first.Mark().line > base_line) {
      end_line = std::min(end_line, it->first.Mark().line);
    }
  }
  std::string section;
  size_t pos = 0;
  for (int line = 0; pos < text.size() && line < end_line; ++line) {
    const size_t nl = std::min(text.find('\n', pos), text.size());
    if (line >= base_line) {
      section.append(text, pos, nl - pos);
    }
    section += '\n';
    pos = nl + 1;
  }
  try {
    const YAML::Node alone = YAML::Load(section);
    if (alone.IsMap() && alone["base"] && YAML::Dump(alone["base"]) == YAML::Dump(root["base"])) {
      return section;
    }
  } catch (const YAML::Exception&) {
  }
  return text;
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
  const std::string base_text = base_section(spec.text, root);
  auto resolve = [&](const std::vector<Override>& overrides, std::vector<Diagnostic>& errors) -> std::optional<RunConfig> {
    // A fresh parse of `base` each time: overrides edit the tree, and YAML::Clone would lose the
    // line:col marks that errors in base are reported at.
    YAML::Node tree = YAML::Load(base_text)["base"];
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
        report({at(where, other.intervention == v.name && !c.rung.empty()
                              ? "rung '" + point + "' of the scale ladder is the same run config as rung '" +
                                    points[same->second] + "' — each rung must be another size (scale.rungs)"
                          : other.intervention == v.name
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

void train_on(SweepSpec& spec, const std::string& device) {
  for (PlannedRun& run : spec.runs) {
    run.config.resources.device = device;
    run.run_id = run_id_of(run.config, run.repeat);
  }
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
