#include "config/sweep_sections.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep::sections {

namespace {

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

}  // namespace

Diagnostic at(const Origin& o, const std::string& message) { return {o.file, o.line, o.col, message}; }

Origin origin_of(const std::string& file, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  return {file, m.is_null() ? 0 : m.line + 1, m.is_null() ? 0 : m.column + 1};
}

std::string scalar_text(const YAML::Node& value) {
  if (value.IsScalar()) {
    return value.Scalar();
  }
  YAML::Emitter out;
  out << YAML::Flow << value;
  return out.c_str();
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


// "the sweep expands to more than N variants (...) — ...", for an expansion past --max-variants.
std::string too_many(size_t max_variants, const std::string& why) {
  return "the sweep expands to more than --max-variants " + std::to_string(max_variants) + " variants (" + why +
         ") — split it into smaller sweeps, or raise --max-variants";
}

namespace {

// A number above 0 as YAML writes it (3e-4, 0.02, 64): what a tuning axis's values must be (the
// report fits the loss against log(value)).
bool is_positive_number(const YAML::Node& value) {
  if (!value.IsScalar()) {
    return false;
  }
  try {
    size_t used = 0;
    const double v = std::stod(value.Scalar(), &used);
    return used == value.Scalar().size() && std::isfinite(v) && v > 0;
  } catch (const std::exception&) {
    return false;
  }
}

// An axis value's origin: its key, and where the value itself is written (an error in the value
// points there; an unknown key at the key).
Origin key_and_value(const std::string& file, const YAML::Node& key, const YAML::Node& value) {
  Origin o = origin_of(file, key);
  const Origin v = origin_of(file, value);
  o.value_line = v.line;
  o.value_col = v.col;
  return o;
}

// `zip` or `tune`: keys whose lists of one length vary together, one dimension of the points.
void read_together(const YAML::Node& node, AxisKind axis_kind, const std::string& file, std::vector<Combo>& combos,
                   std::vector<SweepAxis>& axes, size_t max_points, Diagnostics& diags) {
  if (!node.IsDefined() || node.IsNull() || (node.IsMap() && node.size() == 0)) {
    return;
  }
  const bool tune = axis_kind == AxisKind::tune;
  const std::string kind = to_string(axis_kind);
  if (!node.IsMap()) {
    diags.error(node.Mark(), "'" + kind + "' must be a map of dotted key: [values]" +
                                 (tune ? ", e.g. tune: {train.lr: [3e-4, 6e-4, 1.2e-3, 2.4e-3]}" : ", all lists of one length"));
    return;
  }
  MapReader dup_check(node, kind, diags);
  size_t length = 0;
  for (const auto& axis : node) {
    const std::string key = axis.first.Scalar();
    if (!axis.second.IsSequence() || axis.second.size() == 0) {
      diags.error(axis.second.Mark(), kind + " axis '" + key + "' must be a non-empty list");
      return;
    }
    if (length != 0 && axis.second.size() != length) {
      diags.error(axis.second.Mark(), kind + " axis '" + key + "' has " + std::to_string(axis.second.size()) +
                                          " values, the first axis has " + std::to_string(length) + " — " + kind +
                                          " axes vary together");
      return;
    }
    length = axis.second.size();
    refuse_seeds(key, axis.first.Mark(), diags);
    if (const auto other = std::find_if(axes.begin(), axes.end(),
                                        [&](const SweepAxis& a) {
                                          return std::find(a.keys.begin(), a.keys.end(), key) != a.keys.end();
                                        });
        other != axes.end()) {
      diags.error(axis.first.Mark(), "'" + key + "' is on both " + to_string(other->kind) + " and " + kind +
                                         " — an axis key belongs to one of them");
    }
    if (tune) {
      if (axis.second.size() < 3) {
        diags.error(axis.second.Mark(), "tune axis '" + key + "' has " + std::to_string(axis.second.size()) +
                                            " values: a best value needs at least 3 (a bowl), e.g. [3e-4, 6e-4, 1.2e-3, 2.4e-3]");
        return;
      }
      for (const auto& value : axis.second) {
        if (!is_positive_number(value)) {
          diags.error(value.Mark(), "tune axis '" + key + "': '" + scalar_text(value) +
                                        "' is not a number above 0 — a tuning axis varies a positive numeric key (a "
                                        "learning rate, a weight decay: its best is fitted against log(value)); "
                                        "compare choices with interventions or a grid");
          return;
        }
      }
    }
  }
  SweepAxis dimension{axis_kind, {}};
  for (const auto& axis : node) {
    dimension.keys.push_back(axis.first.Scalar());
  }
  axes.push_back(dimension);
  if (combos.size() * length > max_points) {
    diags.error(node.Mark(), too_many(max_points, std::to_string(combos.size()) + " grid points × " +
                                                      std::to_string(length) + " " + kind + " positions"));
    return;
  }
  std::vector<Combo> next;
  for (const auto& c : combos) {
    for (size_t i = 0; i < length; ++i) {
      Combo n = c;
      for (const auto& axis : node) {
        n.overrides.push_back({axis.first.Scalar(), axis.second[i], key_and_value(file, axis.first, axis.second[i])});
        n.values_at.push_back(origin_of(file, axis.second[i]));
      }
      next.push_back(n);
    }
  }
  combos = next;
}

}  // namespace

// Reads `grid` (each key its own dimension), `zip` (its keys one dimension) and `tune` (the
// same, numbers only, 3 values or more) into the points of their cartesian product, and the
// dimensions into `axes` — or stops, reporting it, before the points would pass `max_points`.
std::vector<Combo> read_axes(const YAML::Node& grid, const YAML::Node& zip, const YAML::Node& tune,
                             const std::string& file, std::vector<SweepAxis>& axes, size_t max_points, Diagnostics& diags) {
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
        axes.push_back({AxisKind::grid, {axis.first.Scalar()}});
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
            n.overrides.push_back({axis.first.Scalar(), value, key_and_value(file, axis.first, value)});
            n.values_at.push_back(origin_of(file, value));
            next.push_back(n);
          }
        }
        combos = next;
      }
    }
  }
  read_together(zip, AxisKind::zip, file, combos, axes, max_points, diags);
  read_together(tune, AxisKind::tune, file, combos, axes, max_points, diags);
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
  SweepAxis dimension{AxisKind::scale, {}};
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
    l.target_unit = params > 0 ? TargetUnit::params : TargetUnit::flops;
    l.target = params > 0 ? static_cast<double>(params) : flops;
  }
  axes.push_back(dimension);
  ladder = l;
  return combos;
}


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
  if (rung == 0 && ladder.target_unit) {
    const double smallest = ladder.target_unit == TargetUnit::params
                                ? static_cast<double>(size.total)
                                : size.flops_per_token * static_cast<double>(tokens);
    if (ladder.target <= smallest) {
      problems.push_back(at(origin_of(path, scale["target"]),
                            "scale.target (" + format_count(ladder.target) + " " + to_string(*ladder.target_unit) +
                                ") is not above the smallest rung's " + format_count(smallest) +
                                " — a target is where the trend is extrapolated to, beyond the ladder's start"));
    }
  }
}

}  // namespace sweep::sections
