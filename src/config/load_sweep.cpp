// load_sweep: a sweep file's YAML to its runs, in named steps — the top level, the named
// variants (interventions and combinations), their checks, each variant at each grid/zip point
// or rung resolved as a RunConfig, then every config × seeds × repeats as a run.
#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include "config/branch.h"
#include "config/sweep_sections.h"
#include "config/load_sweep.h"
#include "util/error.h"
#include "util/fs.h"
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

// What a sweep's dotted keys name in a resolved config: the built-in trainer's whole config, or
// a trainer of the user's own's values (to_json nests them under "config") and its resources.
nlohmann::json settings(const RunConfig& config) {
  nlohmann::json all = config.to_json();
  if (!config.trainer) {
    return all;
  }
  nlohmann::json own = config.values;
  own["resources"] = std::move(all["resources"]);
  return own;
}

// The value of a dotted key in resolved settings ("train.lr" -> 0.001); null when absent.
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

// The `base:` section of a sweep file's text alone, the lines before it left empty so that every
// line:col mark in it is the file's own (the whole text where it cannot be cut out: a root in
// flow style, an alias to an anchor elsewhere). Each variant's config is parsed from it rather
// than from the whole file, whose length grows with its rungs and grid: 600 rungs took 6 s to
// plan, re-reading a 600-line file 1,200 times, and 3,000 rungs did not finish in a minute.
std::string base_section(const std::string& text, const YAML::Node& root) {
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

// What the top level gives beside the spec's own fields: the seeds, the sections read next, and
// the grid/zip points or the ladder's rungs.
struct TopLevel {
  SeedPlan seeds;
  YAML::Node interventions, combine;
  std::vector<Combo> combos;
  double branch_at = 0;  // `branch: {at: f}`: every intervention's (config/branch.h); 0: none
  Origin branch_origin;
};

// `branch: {at: f}` (or an intervention's `branch.at: f`): f in (0, 1); `branch: none` (an
// intervention trained from scratch in a branched sweep) is 0. Null when it is not a branch point.
std::optional<double> read_branch_point(const YAML::Node& node, const std::string& where, Diagnostics& diags) {
  const std::string hint = " — e.g. `branch: {at: 0.8}`: the interventions start at 80% of training from the "
                           "baseline's checkpoint (`branch: none` on an intervention: from scratch)";
  if (node.IsScalar() && node.Scalar() == "none") {
    return 0.0;
  }
  YAML::Node at = node;
  if (node.IsMap()) {
    if (node.size() != 1 || !node["at"]) {
      diags.error(node.Mark(), where + " takes one key, at" + hint);
      return std::nullopt;
    }
    at = node["at"];
  }
  double f = 0;
  if (!at.IsScalar() || !YAML::convert<double>::decode(at, f) || !(f > 0 && f < 1)) {
    diags.error(at.Mark(), where + ": the branch point is a fraction of training strictly between 0 and 1, not '" +
                               (at.IsScalar() ? at.Scalar()
                                : at.IsNull() ? std::string("nothing (null)")
                                              : std::string("a ") + (at.IsMap() ? "map" : "list")) +
                               "'" + (f >= 1 ? " (at 1 or past the end nothing is left to train)" : "") + hint);
    return std::nullopt;
  }
  return f;
}

// sweep, baseline, seeds, min_effect, better_by(_alpha), base (its keys only: it is parsed per variant), references,
// trainer, grid/zip/tune or scale.
TopLevel read_top_level(const YAML::Node& root, SweepSpec& spec, size_t max_variants, const TrainerRecord* trainer_record,
                        Diagnostics& diags) {
  const std::string& path = spec.file;
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
  top.read("better_by", spec.design.better_by, 0, std::numeric_limits<double>::infinity(), true, true);
  top.read("better_by_alpha", spec.design.better_by_alpha, 0, 0.5, true, false);
  if (!root["trainer"].IsDefined() || root["trainer"].IsNull()) {  // a trainer's keys all have defaults, or say so
    top.require("base", "the baseline RunConfig (data, model, train, eval)");
  }
  const YAML::Node base = top.section("base");
  if (base.IsDefined() && !base.IsMap()) {
    diags.error(base.Mark(), "'base' must be a map: the baseline RunConfig, e.g. base: {data: {dataset: DIR}, "
                             "train: {tokens: 5M}}");
  }
  if (base.IsDefined() && base.IsMap()) {
    for (const auto& kv : base) {
      refuse_seeds(kv.first.Scalar(), kv.first.Mark(), diags);
      if (kv.first.Scalar() == "branch" || kv.first.Scalar().rfind("branch.", 0) == 0) {
        diags.error(kv.first.Mark(), "'branch' is not a key of base: a branch point is said at the top level "
                                     "(`branch: {at: 0.8}`, every intervention) or in an intervention");
      }
    }
  }
  spec.references = read_references(top.section("references"), path, diags);
  if (const YAML::Node trainer = top.section("trainer"); trainer.IsDefined() && !trainer.IsNull()) {
    spec.trainer = read_trainer(trainer, path, diags, trainer_record);
    if (!spec.references.empty()) {
      diags.error(root["references"].Mark(), "'references' are scored by sweep's own model families: not with a "
                                             "trainer: of your own");
    }
  }
  top.require("interventions", "a map of name: {dotted.key: value}, with the baseline as {}");
  // Nodes are constructed, never assigned: yaml-cpp throws on assigning a key that is absent.
  const YAML::Node interventions = top.section("interventions");
  const YAML::Node combine = top.section("combine");
  double branch_at = 0;
  Origin branch_origin;
  if (const YAML::Node branch = top.section("branch"); branch.IsDefined() && !branch.IsNull()) {
    branch_at = read_branch_point(branch, "branch", diags).value_or(0);
    branch_origin = origin_of(path, branch);
  }
  std::vector<Combo> combos =
      read_axes(top.section("grid"), top.section("zip"), top.section("tune"), path, spec.axes, max_variants, diags);
  if (const YAML::Node scale = top.section("scale"); scale.IsDefined() && !scale.IsNull()) {
    if (const YAML::Node tune = root["tune"]; tune.IsDefined() && !tune.IsNull() && !(tune.IsMap() && tune.size() == 0)) {
      diags.error(tune.Mark(), "a tuning axis with a scale ladder is not supported yet: each rung would need its own "
                               "best value — tune each rung as a sweep of its own at one size");
    } else if (!spec.axes.empty()) {
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
  if (root["sweep"] && root["sweep"].IsScalar()) {  // an empty name too: it would name hidden files (sweeps/.yaml)
    check_name(spec.name, root["sweep"], "sweep", diags);
  }
  return {seeds, interventions, combine, std::move(combos), branch_at, branch_origin};
}

// An intervention's own branch point (`branch: {at: f}`, `branch.at: f` or `branch: none`), taken
// out of its overrides; else the sweep's (the baseline's: none, it is the parent).
void take_branch_point(Variant& v, const TopLevel& top, const SweepSpec& spec, Diagnostics& diags) {
  std::optional<double> own;
  // The others copied into a new list, never shifted in place: assigning a YAML::Node writes into the
  // node it was bound to (the parsed file's data) instead of rebinding, and would change the values.
  std::vector<Override> others;
  for (const Override& o : v.overrides) {
    if (o.path != "branch" && o.path.rfind("branch.", 0) != 0) {
      others.push_back(o);
    } else if (o.path != "branch" && o.path != "branch.at") {
      diags.error(o.value.Mark(), "intervention '" + v.name + "': '" + o.path + "' — a branch takes one key, at "
                                  "(`branch: {at: 0.8}`)");
    } else if (v.name == spec.baseline) {
      diags.error(o.value.Mark(), "the baseline '" + v.name + "' is what the interventions branch from: it "
                                  "trains from step 0 — say `branch:` on the interventions, or at the top level");
    } else if ((own = read_branch_point(o.value, "intervention '" + v.name + "': " + o.path, diags))) {
      v.branch_origin = o.origin;
    }
  }
  v.overrides = std::move(others);  // the vector's buffer moved, its elements untouched
  if (own) {
    v.branch_at = *own;
  } else if (v.name != spec.baseline) {
    v.branch_at = top.branch_at;
    v.branch_origin = top.branch_origin;
  }
}

// The named variants: each intervention, then each combination of them (its parts' overrides
// together, which must agree on every key they share); `index`: name -> position.
std::vector<Variant> read_variants(const TopLevel& top, const SweepSpec& spec, std::map<std::string, size_t>& index,
                                   Diagnostics& diags) {
  std::vector<Variant> named;
  const YAML::Node& interventions = top.interventions;
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
      v.overrides = read_overrides(kv.second, spec.file, "intervention '" + name + "'", diags);
      take_branch_point(v, top, spec, diags);
      named.push_back(v);
    }
  } else if (interventions.IsDefined()) {
    diags.error(interventions.Mark(), "'interventions' must be a map of name: {dotted.key: value}");
  }
  const YAML::Node& combine = top.combine;
  if (!combine.IsDefined() || combine.IsNull()) {
    return named;
  }
  if (!combine.IsMap()) {
    diags.error(combine.Mark(), "'combine' must be a map of name: [intervention, ...]");
    return named;
  }
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
    std::optional<double> branch_at;  // its parts', which must agree
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
      const Variant& of = named[index[part]];
      if (branch_at && *branch_at != of.branch_at) {
        diags.error(item.Mark(), "combination '" + name + "': '" + part + "' " +
                                     (of.branch_at > 0 ? "branches at " + format_number("%g", of.branch_at)
                                                       : std::string("trains from scratch")) +
                                     ", its other parts " +
                                     (*branch_at > 0 ? "at " + format_number("%g", *branch_at) : "from scratch") +
                                     " — a combination's parts must start alike (their `branch:`)");
      }
      branch_at = of.branch_at;
      combined.branch_origin = of.branch_origin;
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
    combined.branch_at = branch_at.value_or(0);
    index[name] = named.size();
    named.push_back(combined);
  }
  return named;
}

// An intervention never sets a key an axis or the ladder's rungs vary; the baseline is one of the
// interventions; the expansion stays under --max-variants.
void check_variants(const YAML::Node& root, const SweepSpec& spec, const TopLevel& top, const std::vector<Variant>& named,
                    const std::map<std::string, size_t>& index, size_t max_variants, Diagnostics& diags) {
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
                        "', which a grid/zip/tune axis also varies: the axis would replace it at every point — "
                        "drop it from the intervention or from the axis");
      }
    }
  }
  if (!spec.baseline.empty() && top.interventions.IsDefined() && !index.count(spec.baseline)) {
    diags.error(root["baseline"].Mark(), "the baseline '" + spec.baseline +
                                             "' is not an intervention — add '" + spec.baseline +
                                             ": {}' under interventions");
  }
  if (named.size() * top.combos.size() > max_variants) {
    const YAML::Node where = root["grid"].IsDefined() ? root["grid"]
                             : root["zip"].IsDefined() ? root["zip"]
                             : root["tune"].IsDefined() ? root["tune"]
                                                        : top.interventions;
    diags.error(where.Mark(), too_many(max_variants, std::to_string(named.size()) + " interventions and combinations × " +
                                                         std::to_string(top.combos.size()) + " grid/zip/tune points"));
  }
}

// Problems found while resolving and expanding, each reported once (base's own key would
// otherwise be reported once per variant).
struct Problems {
  std::vector<Diagnostic> list;
  std::set<std::string> reported;
  void add(const std::vector<Diagnostic>& found) {
    for (const auto& d : found) {
      if (reported.insert(d.str()).second) {
        list.push_back(d);
      }
    }
  }
  void throw_if_any() const {
    if (!list.empty()) {
      throw InputErrors(list);
    }
  }
};

// Every named variant at every grid/zip point (or rung), resolved as a RunConfig and named by the
// point where it differs from the variant's own config; errors point at the overrides. Fills
// spec.variants (the bare baseline first) and returns their configs in the same order.
class Resolution {
 public:
  Resolution(const YAML::Node& root, SweepSpec& spec)
      : m_root(root), m_spec(spec), m_base_text(base_section(spec.text, root)), m_labels(axis_labels(spec.axes)) {}

  std::vector<RunConfig> run(const std::vector<Variant>& named, const std::vector<Combo>& combos) {
    for (const auto& v : named) {
      variant(v, combos);
    }
    m_problems.throw_if_any();
    // The bare baseline leads (its grid point need not be the first). A ladder's baseline rungs
    // lead already, smallest first.
    std::vector<Variant>& variants = m_spec.variants;
    const auto bare = std::find_if(variants.begin(), variants.end(), [&](const Variant& v) { return v.name == m_spec.baseline; });
    if (bare != variants.end()) {
      const auto lead = bare - variants.begin();
      std::rotate(variants.begin(), bare, bare + 1);
      std::rotate(m_configs.begin(), m_configs.begin() + lead, m_configs.begin() + lead + 1);
    }
    return std::move(m_configs);
  }

 private:
  // `base` with the overrides applied, parsed. A fresh parse of `base` each time: overrides edit
  // the tree, and YAML::Clone would lose the line:col marks that errors in base are reported at.
  std::optional<RunConfig> resolve(const std::vector<Override>& overrides, std::vector<Diagnostic>& errors) const {
    YAML::Node tree = YAML::Load(m_base_text)["base"];
    std::map<std::string, Origin> origins;
    apply_overrides(tree, overrides, origins);
    try {
      return m_spec.trainer ? parse_trainer_run(tree, *m_spec.trainer, m_spec.file, origins)
                            : parse_run_config(tree, m_spec.file, origins);
    } catch (const InputErrors& e) {
      errors = e.diagnostics();
      return std::nullopt;
    }
  }

  void variant(const Variant& v, const std::vector<Combo>& combos) {
    const bool has_axes = !m_spec.axes.empty();
    // The intervention's own config: what its grid points are named against. (Left out when it
    // is invalid on its own but valid at every grid point; the baseline's must be valid.)
    std::vector<Diagnostic> own_errors;
    const std::optional<RunConfig> own = has_axes ? resolve(v.overrides, own_errors) : std::nullopt;
    if (has_axes && !own && v.name == m_spec.baseline) {
      m_problems.add(own_errors);
    }
    const nlohmann::json own_json = own ? settings(*own) : nlohmann::json();
    bool at_own_config = false, all_resolved = true;
    for (const auto& c : combos) {
      Variant full = v;
      full.overrides.insert(full.overrides.end(), c.overrides.begin(), c.overrides.end());
      std::vector<Diagnostic> errors;
      const std::optional<RunConfig> config = resolve(full.overrides, errors);
      if (!config) {
        m_problems.add(errors);
        all_resolved = false;
        continue;
      }
      const Point point = name_at(v, c, own ? &own_json : nullptr, settings(*config), full);
      at_own_config = at_own_config || point.at_own_config;
      add(v, c, full, point.written, *config);
    }
    if (has_axes && !m_spec.ladder && own && all_resolved && v.name == m_spec.baseline && !at_own_config) {
      std::string base_values;
      for (const auto& a : m_spec.axes) {
        for (const auto& key : a.keys) {
          base_values += (base_values.empty() ? "" : ", ") + key + ": " + value_at(own_json, key).dump();
        }
      }
      const YAML::Mark mark = m_root["baseline"].Mark();
      m_problems.add({{m_spec.file, mark.line + 1, mark.column + 1,
                       "the baseline '" + m_spec.baseline + "' is on no grid/zip/tune point: base has " + base_values +
                           " — add these values to the axes (as one zip position), or set base to one of the points"}});
    }
  }

  struct Point {
    std::string written;         // the point as written ("lr=1e-3+grad_accum=2", or the rung)
    bool at_own_config = false;  // every axis value is the variant's own config's
  };

  // Names `full`, variant `v` at point `c`: by its rung on a ladder; else by the axis values that
  // differ from its own config (`own`; none: every value), the baseline by the values alone.
  // Sets its axes' resolved values.
  Point name_at(const Variant& v, const Combo& c, const nlohmann::json* own, const nlohmann::json& mine,
                Variant& full) const {
    if (!c.rung.empty()) {  // a ladder: every variant, the baseline's too, is named by its rung
      full.axes = {{"scale", c.rung}};
      full.name = v.name + "+" + c.rung;
      return {c.rung, false};
    }
    std::string suffix, point;
    for (size_t k = 0; k < c.overrides.size(); ++k) {
      const std::string& key = c.overrides[k].path;
      const std::string written = m_labels.at(key) + "=" + scalar_text(c.overrides[k].value);
      full.axes[key] = value_at(mine, key);
      point += (point.empty() ? "" : "+") + written;
      if (!own || value_at(*own, key) != value_at(mine, key)) {
        suffix += "+" + written;
      }
    }
    full.name = suffix.empty() ? v.name : v.name == m_spec.baseline ? suffix.substr(1) : v.name + suffix;
    return {point, own != nullptr && suffix.empty()};
  }

  // Adds the variant unless its name is unsafe, its run config is another variant's, or its name is taken.
  void add(const Variant& v, const Combo& c, const Variant& full, const std::string& point, const RunConfig& config) {
    const Origin where = !c.values_at.empty()    ? c.values_at.front()
                         : !v.overrides.empty() ? v.overrides.front().origin
                                                : Origin{m_spec.file, 0, 0};
    if (!is_safe_name(full.name)) {
      m_problems.add({at(where, "the grid/zip/tune values make the variant name '" + full.name +
                                    "', which is not a safe name — use plain values (numbers, words): names allow "
                                    "letters, digits and _ - . + = , only, at most 100 characters")});
      return;
    }
    const std::string identity = config.identity_json().dump();
    if (const auto same = m_by_config.find(identity); same != m_by_config.end()) {
      const Variant& other = m_spec.variants[same->second];
      m_problems.add({at(where, other.intervention == v.name && !c.rung.empty()
                                    ? "rung '" + point + "' of the scale ladder is the same run config as rung '" +
                                          m_points[same->second] + "' — each rung must be another size (scale.rungs)"
                                : other.intervention == v.name && std::all_of(c.overrides.begin(), c.overrides.end(),
                                                                              [](const Override& o) {
                                                                                return o.path.rfind("resources.", 0) == 0;
                                                                              })
                                    ? "the grid/zip/tune point " + point + " of '" + v.name + "' is the same run as its point " +
                                          m_points[same->second] + ": resources.* say where a run runs, not what it "
                                          "computes, and are no part of its id — an axis cannot vary them (set one in base)"
                                : other.intervention == v.name
                                    ? "the grid/zip/tune point " + point + " of '" + v.name +
                                          "' is the same run config as its point " + m_points[same->second] +
                                          " — each value must be a different setting (e.g. not both 1e-3 and 0.001)"
                                    : "variant '" + full.name + "' is the same run config as variant '" + other.name +
                                          "': one run would be counted as two variants — drop one of them")});
      return;
    }
    if (const auto other = m_by_name.find(full.name); other != m_by_name.end()) {
      m_problems.add({at(where, "two variants are named '" + full.name + "' (the grid/zip/tune point of '" + v.name +
                                    "' and '" + m_spec.variants[other->second].intervention + "') — rename the intervention")});
      return;
    }
    m_by_config[identity] = m_by_name[full.name] = m_spec.variants.size();
    m_points.push_back(point);
    m_spec.variants.push_back(full);
    m_configs.push_back(config);
  }

  const YAML::Node& m_root;
  SweepSpec& m_spec;
  const std::string m_base_text;
  const std::map<std::string, std::string> m_labels;
  Problems m_problems;
  std::vector<RunConfig> m_configs;
  std::map<std::string, size_t> m_by_name;    // expanded name -> index in spec.variants
  std::map<std::string, size_t> m_by_config;  // run identity -> index: two variants are never one run
  std::vector<std::string> m_points;          // each variant's grid/zip point as written ("lr=1e-3")
};

// Each variant's config completed — its dataset's folder and vocabulary, a ladder's rung checked
// and its tokens derived — then run at every seed pair, `repeat` times.
// Each branched variant against the baseline at its grid point or rung, its parent: it may change
// only branch_keys(), of a config that can be branched, at a point with a validation before the end.
void check_branches(const SweepSpec& spec, const std::vector<RunConfig>& configs, std::vector<Diagnostic>& problems) {
  for (size_t i = 0; i < spec.variants.size(); ++i) {
    const Variant& v = spec.variants[i];
    if (!(v.branch_at > 0)) {
      continue;
    }
    const std::string head = "'" + v.name + "' branches from the baseline at " +
                             format_number("%g", 100 * v.branch_at) + "% of training";
    size_t parent = 0;
    while (parent < spec.variants.size() &&
           !(spec.variants[parent].intervention == spec.baseline && spec.variants[parent].axes == v.axes)) {
      ++parent;
    }
    if (parent == spec.variants.size()) {
      problems.push_back(at(v.branch_origin, head + ", and the baseline has no run at its grid point — branch only "
                                                    "where the baseline trains"));
      continue;
    }
    const RunConfig& base = configs[parent];
    if (const std::string why = branch_problem(base); !why.empty()) {
      problems.push_back(at(v.branch_origin, head + ": " + why + " — train it from scratch (`branch: none`)"));
      continue;
    }
    if (const std::vector<std::string> keys = keys_a_branch_cannot_change(base, configs[i]); !keys.empty()) {
      problems.push_back(at(v.branch_origin,
                            head + ", and sets " + join(keys, ", ") +
                                ": a branch starts from the baseline's checkpoint (its weights, optimizer state and "
                                "data order), so it may change only " + join(branch_keys(), ", ") +
                                " — train it from scratch (`branch: none` on it), or drop the key"));
      continue;
    }
    if (!validation_step_at(base, v.branch_at)) {
      problems.push_back(at(v.branch_origin, head + ", where the baseline has no validation point before its end "
                                                    "(eval.every " + std::to_string(base.eval.every) + " of its " +
                                                    std::to_string(planned_steps(base)) +
                                                    " steps): a branch starts at one — an earlier branch.at, or a "
                                                    "smaller eval.every"));
    }
  }
}

void expand_runs(const YAML::Node& root, const SeedPlan& seeds, const VocabLookup& vocab_of, std::vector<RunConfig>& configs,
                 SweepSpec& spec) {
  const std::string& path = spec.file;
  std::vector<Diagnostic> problems;
  std::map<std::string, int64_t> vocab_cache;  // dataset -> vocab size
  // Where variant i's `section.key` was set: its own override, else base's key, else the file.
  auto set_at = [&](size_t i, const std::string& section, const std::string& key) {
    const auto& o = spec.variants[i].overrides;
    const auto set = std::find_if(o.rbegin(), o.rend(), [&](const Override& x) { return x.path == section + "." + key; });
    if (set != o.rend()) {
      return set->origin;
    }
    const YAML::Node base = root["base"];
    const YAML::Node in_base = base.IsDefined() && base.IsMap() ? base[section] : YAML::Node();
    if (in_base && in_base.IsMap() && in_base[key]) {  // (a section base does not have is no node)
      const YAML::Mark mark = in_base[key].Mark();
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
        if (planned_steps(c) < 1) {
          problems.push_back(at(origin_of(path, root["scale"]["tokens_per_param"]),
                                "scale.tokens_per_param gives variant '" + spec.variants[i].name + "' " +
                                    std::to_string(c.train.tokens) + " tokens, less than one optimizer step of " +
                                    std::to_string(planned_tokens_per_step(c)) + " — raise tokens_per_param"));
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
  // The kind of device the file states (sched/planning.h honours it): every variant alike, or none
  for (size_t i = 0; i < spec.variants.size(); ++i) {
    const Origin origin = set_at(i, "resources", "device");
    const std::string& device = configs[i].resources.device;
    if (i == 0 && origin.line > 0) {
      spec.device = device;
      spec.device_origin = origin;
    } else if ((origin.line > 0) != spec.device.has_value() || (spec.device && device != *spec.device)) {
      problems.push_back(at(origin.line > 0 ? origin : Origin{path, 1, 1},
                            "variant '" + spec.variants[i].name + "' trains on " +
                                (origin.line > 0 ? "resources.device " + device : std::string("the slots' device")) +
                                ", the baseline on " +
                                (spec.device ? "resources.device " + *spec.device : std::string("the slots' device")) +
                                " — a sweep trains on one device: say resources.device once, in base"));
    }
  }
  check_branches(spec, configs, problems);
  if (!problems.empty()) {
    throw InputErrors(problems);
  }
  link_branches(spec);
}

}  // namespace

SweepSpec load_sweep(const std::string& path, const VocabLookup& vocab_of, size_t max_variants,
                     const TrainerRecord* trainer) {
  SweepSpec spec;
  spec.file = path;
  const YAML::Node root = load_yaml_file(path);
  spec.text = read_file(path);
  Diagnostics diags(path);
  const TopLevel top = read_top_level(root, spec, max_variants, trainer, diags);
  std::map<std::string, size_t> index;  // variant name -> position in `named`
  std::vector<Variant> named = read_variants(top, spec, index, diags);
  check_variants(root, spec, top, named, index, max_variants, diags);
  diags.throw_if_any();
  std::stable_partition(named.begin(), named.end(), [&](const Variant& v) { return v.name == spec.baseline; });
  std::vector<RunConfig> configs = Resolution(root, spec).run(named, top.combos);
  expand_runs(root, top.seeds, vocab_of, configs, spec);
  return spec;
}

}  // namespace sweep
