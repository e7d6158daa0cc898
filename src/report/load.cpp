#include "report/load.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>

#include "data/dataset.h"
#include "protocol/events.h"
#include "protocol/json_line.h"
#include "report/analyze.h"
#include "report/eliminate/live.h"
#include "report/signal.h"
#include "report/until_decided.h"
#include "util/error.h"
#include "util/fs.h"
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

// A finished run as an earlier load read it, to be taken from there when its record is the same:
// done then and now, with the same tokens, scores and time (a rerun adds a segment's time). Null
// if not.
ReportRun* done_before(std::map<std::string, ReportRun*>& before, const RunRow& r) {
  const auto it = before.find(r.run_id);
  if (it == before.end() || r.status != RunState::done) {
    return nullptr;
  }
  ReportRun* old = it->second;
  before.erase(it);  // taken once (a run two variants share is read again for the second)
  const bool same = old->status == RunState::done && old->tokens == r.tokens && old->test_loss == r.test_loss &&
                    old->test_bpb == r.test_bpb && old->wall_seconds == r.wall_seconds;
  return same ? old : nullptr;
}

ReportRun report_run(Store& store, const RunRow& r, const Metric& metric) {
  ReportRun rr;
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
  const std::vector<Segment> segments = store.segments(r.run_id);
  rr.starts = static_cast<int64_t>(segments.size());
  for (const auto& s : segments) {
    const int64_t numerics = s.numerics_version();
    const std::string code = s.code_label();
    if (std::find(rr.codes.begin(), rr.codes.end(), code) == rr.codes.end()) {
      rr.codes.push_back(code);
    }
    rr.numerics = rr.numerics ? std::min(*rr.numerics, numerics) : numerics;
  }
  for (const auto& p : store.metrics(r.run_id, "val")) {
    if (p.loss && std::isfinite(*p.loss)) {
      rr.val_curve.emplace_back(p.tokens, *p.loss);
    }
  }
  if (r.status == RunState::done) {
    rr.test_blocks = store.test_blocks(r.run_id);
  }
  double seconds = 0;  // training time so far: each step's tokens over its own speed (evaluations left out)
  int64_t before = 0;
  rr.train_curve.reserve(static_cast<size_t>(std::max<int64_t>(0, r.steps)));  // a point per step, usually
  store.metrics(r.run_id, "train", [&](const MetricPoint& p) {
    seconds += p.tokens_per_s && *p.tokens_per_s > 0 ? static_cast<double>(p.tokens - before) / *p.tokens_per_s
                                                     : std::nan("");
    before = p.tokens;
    const double moe_load = p.moe_load_max.empty()  // the mean over the MoE layers
                                ? std::nan("")
                                : std::accumulate(p.moe_load_max.begin(), p.moe_load_max.end(), 0.0) /
                                      static_cast<double>(p.moe_load_max.size());
    rr.train_curve.push_back({p.tokens, p.loss.value_or(std::nan("")), p.grad_norm.value_or(std::nan("")), seconds, moe_load,
                              p.lr.value_or(std::nan("")), p.tokens_per_s.value_or(std::nan(""))});
  });
  if (r.status == RunState::done) {
    if (!rr.val_curve.empty()) {
      rr.val_loss = rr.val_curve.back().second;
    }
    rr.value = metric_value(rr, metric);
  }
  return rr;
}

// A val_lastK needs K evaluations after step 0 in every finished run: a run with fewer has no value,
// which the report would take for a run without a result. Refused, with the K the runs allow.
void refuse_short_runs(const ReportInput& in) {
  if (in.metric != Metric::Kind::val_last) {
    return;
  }
  const int64_t k = in.metric.k;
  int64_t short_runs = 0, fewest = std::numeric_limits<int64_t>::max();
  for (const auto& v : in.variants) {
    for (const auto& r : v.runs) {
      if (r.status == RunState::done && !r.value) {
        ++short_runs;
        fewest = std::min(fewest, trained_evaluations(r));
      }
    }
  }
  if (short_runs > 0) {
    throw Error("--metric " + in.metric.name() + ": " + plural(short_runs, "finished run") + " of sweep " + in.sweep +
                    " evaluated fewer than " + std::to_string(k) + " times after step 0 (the fewest: " +
                    std::to_string(fewest) + ") — " +
                    (fewest >= 2 ? "choose K from 2 to " + std::to_string(fewest) : std::string("use val_loss or test_loss")),
                Exit::bad_input);
  }
}

// The parameters a trainer of the user's said it has: its last start event's `params` in the run
// folder's events.jsonl (0: not said).
double params_said(const std::string& run_dir) {
  std::ifstream in(fs::path(run_dir) / "events.jsonl");
  double params = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json ev = events::parse_json_line(line);
    if (ev.is_object() && ev.value(events::field::event, "") == events::start && ev.contains(events::field::params) &&
        ev[events::field::params].is_number_integer()) {
      params = static_cast<double>(ev[events::field::params].get<int64_t>());
    }
  }
  return params;
}

// A variant's runs, and what its config says about it: the global batch and the model section.
VariantRuns variant_runs(Store& store, const std::vector<SweepRunRow>& rows, const Variant& v,
                         const Metric& metric, std::map<std::string, ReportRun*>& before) {
  VariantRuns out;
  out.name = v.name;
  out.intervention = v.intervention;
  out.parts = v.parts;
  for (const auto& [key, value] : v.axes.items()) {
    out.axes[key] = value.dump();
  }
  bool parsed = false;  // its config read (from its first run)
  for (const auto& row : rows) {
    if (row.variant != v.name) {
      continue;
    }
    if (!parsed) {
      parsed = true;
      try {
        const RunConfig c = parse_run_config(YAML::Load(row.run.config_yaml), row.run.run_dir + "/config.yaml");
        if (c.trainer) {  // its model, batch and data are the trainer's own; its size as it says
          out.trainer = c.trainer->name + "@" + c.trainer->version();
        } else {
          out.batch_sequences = static_cast<double>(c.train.micro_batch * c.train.grad_accum * c.resources.ranks);
          const ModelSize size = model_size(c.model);
          out.params = static_cast<double>(size.total);
          out.flops_per_token = size.flops_per_token;
          out.model = c.to_json()["model"].dump();
          out.dataset = c.data.dataset;
          out.train_tokens = c.train.tokens;
          out.end_tokens = planned_steps(c) * planned_tokens_per_step(c);
          out.branch_step = c.branch.step;
          out.branch_tokens = c.branch.step * planned_tokens_per_step(c);
        }
      } catch (const std::exception&) {
        // an unreadable config leaves the batch and the parameter set unknown
      }
    }
    ReportRun* same = done_before(before, row.run);
    out.runs.push_back(same ? std::move(*same) : report_run(store, row.run, metric));
    if (!out.trainer.empty()) {  // a trainer of the user's: its size as its runs say, its tokens as they trained them
      out.train_tokens = std::max(out.train_tokens, row.run.tokens);
      if (out.params <= 0) {  // the first run that says it (a pending one has no start event yet)
        out.params = params_said(row.run.run_dir);
        out.flops_per_token = 6 * out.params;  // training FLOPs ≈ 6 × parameters per token
      }
    }
  }
  return out;
}

// How many times the runs go through their train split (when the dataset is found from the sweep
// file's folder): data seen again changes which interventions help.
void epoch_note(ReportInput& in) {
  double least = std::numeric_limits<double>::infinity(), most = 0;
  int repeating = 0, counted = 0;
  std::string datasets;
  for (const auto& v : in.variants) {
    const std::string dir = v.dataset.empty() ? "" : find_dataset(v.dataset, in.file);
    if (dir.empty() || v.train_tokens <= 0) {
      continue;
    }
    int64_t split = 0;
    try {
      split = read_dataset(dir).splits.at("train").tokens;
    } catch (const std::exception&) {
      continue;  // a dataset that cannot be read says nothing about epochs
    }
    const double epochs = static_cast<double>(v.train_tokens) / static_cast<double>(std::max<int64_t>(1, split));
    repeating += epochs > 1.0;
    ++counted;
    least = std::min(least, epochs);
    most = std::max(most, epochs);
    const std::string name = v.dataset + " (" + format_count(static_cast<double>(split)) + " train tokens)";
    if (datasets.find(name) == std::string::npos) {
      datasets += (datasets.empty() ? "" : ", ") + name;
    }
  }
  if (most <= 0) {
    return;
  }
  const std::string span = least == most ? format_number("%.2f", most) : format_number("%.2f", least) + " to " +
                                                                           format_number("%.2f", most);
  in.notes.push_back("epochs: each run trains " + span + " epochs of its train split, " + datasets +
                     (most > 1.0 ? " — " + (repeating == counted ? std::string("every variant") : std::to_string(repeating) + " of " + std::to_string(counted) + " variants") +
                                       " sees data again, so interventions against overfitting (dropout, weight decay) "
                                       "help more there than in single-epoch studies of web-scale data"
                                 : " — single-epoch: no training token is seen twice"));
}

}  // namespace

ReportInput load_report_input(Store& store, const std::string& sweep, const Metric& metric,
                              const std::string& noise_from, ReportInput* previous) {
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
  in.axes = info->axes;
  in.ladder = info->ladder;
  in.design = info->design;
  in.min_effect_source = in.design.min_effect > 0 ? MinEffectSource::sweep_file : MinEffectSource::none;
  if (metric == Metric::Kind::test_bpb && in.design.min_effect > 0) {  // the file's margin is in nats per token
    in.notes.push_back("the sweep file's min_effect (" + format_number("%g", in.design.min_effect) + ") is in nats per token, not in test_bpb's bits per byte: no equivalence is tested — pass "
                       "--min-effect in bits per byte for one");
    in.design.min_effect = 0;
    in.min_effect_source = MinEffectSource::none_for_bpb;  // said above: no suggestion of another
  }
  if (metric == Metric::Kind::test_bpb && in.design.better_by > 0) {
    in.notes.push_back("the sweep file's better_by (" + format_number("%g", in.design.better_by) + ") is in nats per token, not in test_bpb's bits per byte: no margin is tested — pass "
                       "--better-by in bits per byte for one");
    in.design.better_by = 0;
  }
  std::map<std::string, ReportRun*> before;  // the earlier load's runs by id
  if (previous && previous->sweep == in.sweep && previous->metric == metric) {
    for (auto& v : previous->variants) {
      for (auto& r : v.runs) {
        before.emplace(r.run_id, &r);
      }
    }
  }
  const std::vector<SweepRunRow> rows = store.sweep_runs(sweep);
  for (const auto& v : info->variants) {
    in.variants.push_back(variant_runs(store, rows, v, metric, before));
  }
  refuse_short_runs(in);
  in.references = store.references(sweep);
  epoch_note(in);
  if (!noise_from.empty()) {
    const std::optional<SweepInfo> noise = store.sweep_info(noise_from);
    if (!noise) {
      throw Error("--noise-from: " + unknown_sweep(store, noise_from), Exit::bad_input);
    }
    const std::vector<SweepRunRow> noise_rows = store.sweep_runs(noise->name);
    const auto base = std::find_if(noise->variants.begin(), noise->variants.end(),
                                   [&](const Variant& v) { return v.name == noise->baseline; });
    if (base == noise->variants.end()) {
      throw Error("--noise-from: sweep " + noise->name + " has no variant named '" + noise->baseline + "' (its baseline)",
                  Exit::bad_input);
    }
    std::map<std::string, ReportRun*> none;
    in.noise_from = NoiseSource{noise->name, variant_runs(store, noise_rows, *base, metric, none).runs};
  }
  return in;
}

std::vector<PlannedRun> next_seed_round(Store& store, const SweepSpec& current, std::string& why) {
  ReportInput in = load_report_input(store, current.name, Metric{Metric::Kind::test_loss}, "");
  in.design = current.design;
  const Analysis a = analyze(in);
  const std::map<std::string, int64_t> want = next_round(a);
  std::vector<PlannedRun> runs;
  std::vector<std::string> undecided, capped;
  int64_t margins = 0;  // of the undecided: better, its margin open
  for (const auto& v : a.tuned ? a.tuned->at_best : a.variants) {  // a tune axis: the verdicts at each arm's best
    if (!v.is_baseline && (v.verdict == Verdict::undecided || v.margin_open)) {
      (want.count(v.name) ? undecided : capped).push_back(v.name + (v.margin_open ? "'s margin" : ""));
      margins += v.margin_open && want.count(v.name);
    }
  }
  int64_t most = 0;  // the seeds they are brought to (a ladder's rungs or a tuned arm's values may differ)
  for (const auto& [variant, n] : want) {
    most = std::max(most, n);
    for (auto& run : added_seed_runs(current, variant, n)) {
      runs.push_back(std::move(run));
    }
  }
  const std::string cap = std::to_string(a.design.max_seeds);
  if (!undecided.empty()) {
    const int64_t open = static_cast<int64_t>(undecided.size()) - margins;
    why = "until decided: " +
          (open > 0 ? std::to_string(open) + " undecided" + (margins > 0 ? ", " : "") : std::string()) +
          (margins > 0 ? plural(margins, "margin") + " open" : std::string()) + " (" + join(undecided, ", ") +
          ") — up to " + std::to_string(most) + " seeds each, and the baseline, of at most " + cap + ": " +
          std::to_string(runs.size()) + " runs more";
  } else if (!capped.empty()) {
    why = "until decided: stopped at the cap of " + cap + " seeds, " + std::to_string(capped.size()) +
          " still undecided (" + join(capped, ", ") + ") — `sweep report` says why";
  } else {
    why = "until decided: every intervention is decided — `sweep report` has the verdicts";
  }
  return runs;
}

}  // namespace sweep

namespace sweep {

std::string take_elimination_look(Store& store, SweepSpec& current) {
  EliminationDesign& design = *current.design.eliminate;
  const size_t look = design.looks_taken;
  ReportInput in = load_report_input(store, current.name, Metric{Metric::Kind::test_loss}, "");
  in.design = current.design;
  const EliminationRule rule = rule_of(current.design);
  const LookJudgement judged = judge_look(in, rule, look);
  std::vector<std::string> stopped;
  for (const Elimination& how : judged.stopped) {
    design.stopped.push_back(how);
    stopped.push_back(how.arm + " (Δ " + format_number("%+.4f", how.mean) + ", bound " +
                      format_number("%+.4f", how.upper) + " < " + format_number("%+.4f", how.threshold) + ")");
  }
  design.looks_taken = look + 1;
  const std::string next = design.looks_taken < rule.looks.size()
                               ? "the rest train to the look at " + percent_of_training(rule.looks[design.looks_taken])
                               : "the rest train to their end";
  return "--eliminate, the look at " + percent_of_training(rule.looks[look]) + " of training: " +
         (stopped.empty() ? std::string("no arm shown worse than −δ/kept") : "stopped " + join(stopped, ", ")) +
         (judged.unjudged.empty() ? "" : "; not judged: " + join(judged.unjudged, ", ")) + "; " + next;
}

}  // namespace sweep
