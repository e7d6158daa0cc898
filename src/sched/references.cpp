#include "sched/references.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep {

namespace {

// A reference model scored by the training core (`sweep eval --json`, a process of its own: the
// front links no LibTorch) on the test split of `data`, as runs are.
ReferenceScore score_with_core(const std::string& core, const ReferenceModel& ref, const std::string& data,
                               int64_t batch) {
  // (eval's largest batch: a micro-batch beyond it scores the same windows, fewer at a time)
  std::vector<std::string> argv{core, "eval", ref.model, "--data", data, "--batch",
                                std::to_string(std::min<int64_t>(batch, 4096)), "--json"};
  if (!ref.config.empty()) {
    argv.insert(argv.end(), {"--config", ref.config});
  }
  if (ref.n_head > 0) {
    argv.insert(argv.end(), {"--n-head", std::to_string(ref.n_head)});
  }
  if (ref.ignore_extra) {
    argv.push_back("--ignore-extra");
  }
  const Captured out = run_capture(argv);
  std::string json, said;  // its score (the last JSON line); what else it said (its errors)
  for (const std::string& line : split(out.output, '\n')) {
    if (line.rfind('{', 0) == 0) {
      json = line;
    } else if (!trim(line).empty() && line.find("nothing was written") == std::string::npos) {
      said += (said.empty() ? "" : "; ") + (line.rfind("sweep: ", 0) == 0 ? line.substr(7) : line);
    }
  }
  if (out.code != 0 || json.empty()) {
    throw Error(said.empty() ? "sweep eval exited with " + std::to_string(out.code) : said,
                out.code == static_cast<int>(Exit::bad_input) ? Exit::bad_input : Exit::failed);
  }
  ReferenceScore score;
  try {
    const nlohmann::json j = nlohmann::json::parse(json);
    score.loss = j.at("loss").get<double>();
    if (!j.at("bpb").is_null()) {
      score.bpb = j.at("bpb").get<double>();
    }
    score.tokens = j.at("tokens").get<int64_t>();
    score.parameters = j.at("parameters").get<int64_t>();
    score.block_size = j.at("block_size").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error("sweep eval printed no score it could be read from (" + first_line(e.what()) + "): " +
                json.substr(0, 200));
  }
  return score;
}

}  // namespace

std::vector<ReferenceScore> score_references(const SweepSpec& spec, const std::string& db,
                                             const std::function<std::string()>& core) {
  std::vector<ReferenceScore> fresh;
  if (spec.references.empty()) {
    return fresh;
  }
  const RunConfig& base = spec.runs.front().config;  // the baseline's
  const std::string data = fs::absolute(base.data.location()).lexically_normal().string();
  const std::vector<ReferenceScore> scored =
      fs::exists(db) ? Store(db, Store::Access::read).references(spec.name) : std::vector<ReferenceScore>{};
  for (const auto& ref : spec.references) {
    std::string sha;
    try {
      sha = file_sha256(ref.model);
    } catch (const Error& e) {  // named where the sweep file names the reference
      throw Error(spec.file + ": references." + ref.name + ": " + e.what(), Exit::bad_input);
    }
    const auto was = std::find_if(scored.begin(), scored.end(), [&](const ReferenceScore& s) { return s.name == ref.name; });
    if (was != scored.end() && was->model_sha256 == sha && was->dataset == data) {
      continue;
    }
    std::printf("scoring reference '%s' (%s) on the test split of %s\n", ref.name.c_str(), ref.model.c_str(), data.c_str());
    std::fflush(stdout);
    ReferenceScore score;
    try {
      score = score_with_core(core(), ref, data, base.train.micro_batch);
    } catch (const Error& e) {  // named where the sweep file names the reference
      throw Error(spec.file + ": references." + ref.name + ": " + e.what() +
                      (ref.config.empty() ? " (in a sweep file: n_head: or config: beside model:)" : ""),
                  e.code());
    }
    score.name = ref.name;
    score.model = ref.model;
    score.model_sha256 = sha;
    score.dataset = data;
    fresh.push_back(score);
    const ReferenceScore& s = fresh.back();
    std::printf("  %s: test loss %.4f%s over %lld tokens\n", ref.name.c_str(), s.loss,
                s.bpb ? format_number(", %.4f bits/byte", *s.bpb).c_str() : "", static_cast<long long>(s.tokens));
  }
  return fresh;
}

}  // namespace sweep
