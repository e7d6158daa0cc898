#include "config/branch.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace sweep {

const std::vector<std::string>& branch_keys() {
  static const std::vector<std::string> keys{
      "model.dropout", "train.lr",     "train.min_lr", "train.schedule",  "train.warmup",    "train.decay",
      "train.weight_decay", "train.beta1", "train.beta2", "train.eps", "train.grad_clip", "train.precision"};
  return keys;
}

std::optional<int64_t> validation_step_at(const RunConfig& c, double fraction) {
  const int64_t total = planned_steps(c), every = c.eval.every;
  if (every <= 0 || total <= 0) {
    return std::nullopt;
  }
  const auto at = static_cast<int64_t>(std::ceil(fraction * static_cast<double>(total) - 1e-9));
  const int64_t step = std::max<int64_t>(every, (at + every - 1) / every * every);  // the first point at or after it
  return step < total ? std::optional<int64_t>(step) : std::nullopt;
}

nlohmann::json across_branch(nlohmann::json identity) {
  identity.erase("branch");
  for (const std::string& key : branch_keys()) {
    const size_t dot = key.find('.');
    const std::string section = key.substr(0, dot);
    if (identity.contains(section) && identity[section].is_object()) {
      identity[section].erase(key.substr(dot + 1));
    }
  }
  return identity;
}

std::vector<std::string> keys_a_branch_cannot_change(const RunConfig& parent, const RunConfig& child) {
  nlohmann::json a = across_branch(parent.identity_json()), b = across_branch(child.identity_json());
  std::vector<std::string> out;
  for (auto it = b.begin(); it != b.end(); ++it) {
    const nlohmann::json& was = a.contains(it.key()) ? a[it.key()] : nlohmann::json();
    if (it.value().is_object() && was.is_object()) {
      for (auto k = it.value().begin(); k != it.value().end(); ++k) {
        if (!was.contains(k.key()) || was[k.key()] != k.value()) {
          out.push_back(it.key() + "." + k.key());
        }
      }
      for (auto k = was.begin(); k != was.end(); ++k) {
        if (!it.value().contains(k.key())) {
          out.push_back(it.key() + "." + k.key());
        }
      }
    } else if (was != it.value()) {
      out.push_back(it.key());
    }
  }
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (!b.contains(it.key())) {
      out.push_back(it.key());
    }
  }
  return out;
}

std::string branch_problem(const RunConfig& c) {
  if (c.trainer) {
    return "a trainer of your own keeps its own checkpoints, which sweep cannot start a branch from";
  }
  if (c.train.optimizer != Optimizer::adamw) {
    return "train.optimizer " + to_string(c.train.optimizer) + ": a branch resumes AdamW's state only";
  }
  if (c.parallel.zero > 0 || c.parallel.expert > 1) {
    return "a sharded checkpoint (parallel.zero, parallel.expert) is a file per rank: a branch starts from one file";
  }
  return "";
}

bool any_branched(const SweepSpec& spec) {
  return std::any_of(spec.variants.begin(), spec.variants.end(), [](const Variant& v) { return v.branch_at > 0; });
}

void link_branches(SweepSpec& spec) {
  std::map<std::string, double> branch_at;  // variant -> its branch point
  std::map<std::string, std::string> baseline_at;  // a grid point or rung (its axes) -> the baseline's variant there
  for (const Variant& v : spec.variants) {
    if (v.branch_at > 0) {
      branch_at[v.name] = v.branch_at;
    }
    if (v.intervention == spec.baseline) {
      baseline_at[v.axes.dump()] = v.name;
    }
  }
  if (branch_at.empty()) {
    return;
  }
  std::map<std::string, std::string> point_of;  // variant -> its axes
  for (const Variant& v : spec.variants) {
    point_of[v.name] = v.axes.dump();
  }
  using Seeds = std::tuple<std::string, int64_t, int64_t, int64_t>;  // variant, init, data, repeat
  std::map<Seeds, const PlannedRun*> parents;
  for (const PlannedRun& run : spec.runs) {
    parents[{run.variant, run.config.seeds.init, run.config.seeds.data, run.repeat}] = &run;
  }
  for (PlannedRun& run : spec.runs) {
    const auto at = branch_at.find(run.variant);
    if (at == branch_at.end()) {
      continue;
    }
    const auto base = baseline_at.find(point_of[run.variant]);
    const auto parent = base == baseline_at.end()
                            ? parents.end()
                            : parents.find({base->second, run.config.seeds.init, run.config.seeds.data, run.repeat});
    const std::optional<int64_t> step =
        parent == parents.end() ? std::nullopt : validation_step_at(parent->second->config, at->second);
    if (!step) {  // the loader refuses such a file first (load_sweep.cpp): from scratch, as a run of its own
      run.config.branch = {};
    } else {
      run.config.branch = {parent->second->run_id, *step};
    }
    run.run_id = run_id_of(run.config, run.repeat);
  }
}

}  // namespace sweep
