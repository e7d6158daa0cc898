#include "report/load.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"
#include "util/text.h"

namespace sweep {

namespace {

std::string unknown_sweep(Store& store, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& s : store.sweeps()) {
    names.push_back(s.name);
  }
  const std::string near = closest_match(name, names);
  return "no sweep named '" + name + "' in the database" + (near.empty() ? "" : " — did you mean '" + near + "'?") +
         " (`sweep ls` lists them)";
}

std::vector<RunResult> runs_of(Store& store, const std::string& sweep, const std::string& variant,
                               const std::string& metric) {
  std::vector<RunResult> out;
  for (const auto& row : store.sweep_runs(sweep)) {
    if (row.variant != variant) {
      continue;
    }
    const RunRow& r = row.run;
    RunResult rr;
    rr.run_id = r.run_id;
    rr.status = r.status;
    rr.init_seed = r.init_seed;
    rr.data_seed = r.data_seed;
    rr.repeat = r.repeat;
    rr.test_loss = r.test_loss;
    rr.test_bpb = r.test_bpb;
    rr.tokens = r.tokens;
    rr.tokens_per_s = r.tokens_per_s;
    rr.wall_seconds = r.wall_seconds;
    for (const auto& p : store.metrics(r.run_id, "val")) {
      if (p.loss && std::isfinite(*p.loss)) {
        rr.val_curve.emplace_back(p.tokens, *p.loss);
      }
    }
    if (r.status == "done") {
      if (!rr.val_curve.empty()) {
        rr.val_loss = rr.val_curve.back().second;
      }
      rr.value = metric == "test_loss" ? rr.test_loss : metric == "test_bpb" ? rr.test_bpb : rr.val_loss;
    }
    out.push_back(std::move(rr));
  }
  return out;
}

}  // namespace

ReportInput load_report_input(Store& store, const std::string& sweep, const std::string& metric,
                              const std::string& noise_from) {
  if (std::find(k_report_metrics.begin(), k_report_metrics.end(), metric) == k_report_metrics.end()) {
    throw Error("--metric " + metric + ": expected test_loss, val_loss or test_bpb", Exit::bad_input);
  }
  const std::optional<SweepInfo> info = store.sweep_info(sweep);
  if (!info) {
    throw Error(unknown_sweep(store, sweep), Exit::bad_input);
  }
  ReportInput in;
  in.sweep = info->name;
  in.baseline = info->baseline;
  in.metric = metric;
  in.file = info->file;
  in.spec = info->spec;
  for (const auto& v : info->variants) {
    in.variants.push_back({v, runs_of(store, sweep, v, metric)});
  }
  if (!noise_from.empty()) {
    const std::optional<SweepInfo> noise = store.sweep_info(noise_from);
    if (!noise) {
      throw Error("--noise-from: " + unknown_sweep(store, noise_from), Exit::bad_input);
    }
    in.noise_from = NoiseSource{noise->name, runs_of(store, noise->name, noise->baseline, metric)};
  }
  return in;
}

}  // namespace sweep
