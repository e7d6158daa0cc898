#include "config/sweep_spec.h"

#include <algorithm>
#include <set>

#include "config/branch.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/text.h"

namespace sweep {

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
  if (target_unit) {
    j["target"] = {{to_string(*target_unit), target}};
  }
  return j;
}

Ladder Ladder::from_json(const nlohmann::json& j) {
  Ladder l;
  l.rungs = j.at("rungs").get<std::vector<std::string>>();
  l.tokens_per_param = j.value("tokens_per_param", 0.0);
  l.beyond = j.value("beyond", 10.0);
  if (j.contains("target")) {
    l.target_unit = parse_choice<TargetUnit>(j["target"].begin().key());  // a unit of a newer sweep: no target
    l.target = j["target"].begin().value().get<double>();
  }
  return l;
}

std::string run_id_of(const RunConfig& config, int64_t repeat, std::optional<int64_t> numerics) {
  return run_id_of_identity(identity_at(config, numerics), repeat);
}

nlohmann::json identity_at(const RunConfig& config, std::optional<int64_t> numerics) {
  nlohmann::json j = config.identity_json();
  if (numerics && j.contains("numerics")) {  // a trainer of your own's has none
    j["numerics"] = *numerics;
  }
  return j;
}

std::string run_id_of_identity(nlohmann::json identity, int64_t repeat) {
  if (repeat > 0) {
    identity["repeat"] = repeat;
  }
  return sha256_hex(identity.dump()).substr(0, 16);
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
  link_branches(spec);  // the parents' ids changed
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

std::string short_key(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

}  // namespace sweep
