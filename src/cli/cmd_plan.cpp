// `sweep plan FILE`: a sweep's runs, their state, tokens, epochs, memory and size, without running anything.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "memory_plan/admission.h"
#include "cli/sweep_commands.h"
#include "data/dataset.h"
#include "sched/branches.h"
#include "sched/lifecycle.h"
#include "util/text.h"

namespace sweep::commands {

namespace {

// The state `sweep plan` shows a run in: as `status` says it ("stopped": by --eliminate), but
// "orphaned" for a branch its parent cannot give a start (`why` then says why, as `sweep run` would).
std::string plan_label(const PlannedRun& r, PlanState state, const SweepSpec& spec, Store* store, Branches* branches,
                       std::string& why) {
  const bool startable = finished(state) || failed(state) || branches == nullptr || !r.config.branch.on() ||
                         !store->run(r.config.branch.from) || branches->has_start(r);
  why = startable ? "" : branches->orphaned(r);
  return why.empty() ? state_label(state, spec.design.eliminate, r.run_id) : "orphaned";
}

// `missing`: datasets not prepared yet. Their runs are planned without what needs the data — a
// run's id (its vocabulary is part of it), its epochs, its memory and the vocabulary's weights.
Exit print_plan(const PlanOptions& o, const SweepPlan& plan, const std::set<std::string>& missing) {
  const SweepSpec& spec = plan.spec;
  for (const auto& dataset : missing) {
    std::printf("dataset '%s' is not prepared yet (not found from %s's folder or above) — prepare it with `sweep data "
                "prepare --out DIR ...` (scripts/main.sh prepares the Brown corpus); until then its runs' ids, epochs, "
                "memory and vocabulary weights are unknown: '-' below\n",
                dataset.c_str(), spec.file.c_str());
  }
  std::unique_ptr<Store> store;
  // plan writes nothing: no database (or an empty file), every run pending
  if (fs::exists(database_path(o.results)) && !empty_database(database_path(o.results))) {
    store = std::make_unique<Store>(database_path(o.results), Store::Access::read);
  }
  std::printf("sweep %s (%s): %zu variants, %zu runs, baseline %s, on %s%s\n", spec.name.c_str(), spec.file.c_str(),
              spec.variants.size(), spec.runs.size(), spec.baseline.c_str(), plan.placement.kind.c_str(),
              spec.design.sequential() ? (" (run --until-decided: the seeds its rounds added included, up to " +
                                          std::to_string(spec.design.max_seeds) + " per variant)").c_str()
                                       : "");
  if (!plan.placement.note.empty()) {
    std::printf("%s\n", plan.placement.note.c_str());
  }
  std::printf("%-32s %-14s %-16s %-10s %10s %7s %13s  %s\n", "variant", "seed", "run", "state", "tokens", "epochs",
              "memory/device", "parameters (active per token)");
  std::vector<const PlannedRun*> runs;
  for (const auto& r : spec.runs) {
    runs.push_back(&r);
  }
  const std::unique_ptr<Branches> branches = store ? std::make_unique<Branches>(runs, *store) : nullptr;
  std::vector<std::string> orphans;  // branches their parent cannot start, and why
  double tokens_left = 0, tokens_stopped = 0, rate_sum = 0;
  int rates = 0;
  std::map<std::string, int> counts;
  std::map<std::string, int64_t> train_tokens;  // per dataset folder
  int repeating = 0;
  double most_epochs = 0;
  for (const auto& r : spec.runs) {
    const bool own = r.config.trainer.has_value();  // a trainer of the user's: its tokens and size are its own
    const std::string data = r.config.data.location();
    const std::string seeds = seeds_in_column(r.config.seeds.init, r.config.seeds.data, r.repeat);
    if (!own && missing.count(r.config.data.dataset)) {
      ModelConfig m = r.config.model;
      m.vocab_size = 0;  // what is known without the data: the weights that do not depend on the vocabulary
      std::printf("%-32s %-14s %-16s %-10s %10s %7s %13s  %s\n", r.variant.c_str(), seeds.c_str(), "-", "-",
                  format_count(static_cast<double>(r.config.train.tokens)).c_str(), "-", "-",
                  (format_count(static_cast<double>(model_size(m).total)) + " + the vocabulary's").c_str());
      continue;
    }
    if (!own && !train_tokens.count(data)) {
      train_tokens[data] = read_dataset(data).splits.at("train").tokens;
    }
    const double epochs = own ? 0 : static_cast<double>(r.config.train.tokens) / static_cast<double>(std::max<int64_t>(1, train_tokens[data]));
    repeating += epochs > 1.0;
    most_epochs = std::max(most_epochs, epochs);
    const std::optional<RunRow> row = store ? store->run(r.run_id) : std::nullopt;
    const PlanState state = row ? plan_state(*row) : PlanState::pending;
    std::string why;
    const std::string label = plan_label(r, state, spec, store.get(), branches.get(), why);
    counts[label]++;
    if (!why.empty()) {
      orphans.push_back(r.variant + " " + seeds_in_words(r.config.seeds.init, r.config.seeds.data, r.repeat) + " (" +
                        r.run_id + "): " + why);
    }
    if (row && row->tokens_per_s) {
      rate_sum += *row->tokens_per_s;
      ++rates;
    }
    if (!finished(state) && !failed(state) && !own) {
      (label == "stopped" ? tokens_stopped : tokens_left) +=
          static_cast<double>(r.config.train.tokens - (row ? row->tokens : 0));
    }
    if (own) {
      std::printf("%-32s %-14s %-16s %-10s %10s %7s %13s  %s\n", r.variant.c_str(), seeds.c_str(), r.run_id.c_str(),
                  label.c_str(), "-", "-", "-",
                  ("trainer " + r.config.trainer->name + "@" + r.config.trainer->version()).c_str());
      continue;
    }
    const ModelSize size = model_size(r.config.model);
    const std::string params = format_count(static_cast<double>(size.total)) +
                               (size.active != size.total ? " (" + format_count(static_cast<double>(size.active)) + ")" : "");
    std::printf("%-32s %-14s %-16s %-10s %10s %7.2f %13s  %s\n", r.variant.c_str(), seeds.c_str(), r.run_id.c_str(),
                label.c_str(), format_count(static_cast<double>(r.config.train.tokens)).c_str(), epochs,
                format_bytes(run_memory(r.config).total()).c_str(), params.c_str());
  }
  if (repeating > 0) {
    std::printf("warning: %d of %zu runs train more tokens than their train split holds (up to %.2f epochs): they "
                "see data again, and interventions that fight overfitting (dropout, weight decay) help more than in "
                "the single-epoch studies of web-scale data\n",
                repeating, spec.runs.size(), most_epochs);
  }
  for (const auto& line : orphans) {
    std::printf("orphaned %s\n", line.c_str());
  }
  for (const auto& ref : spec.references) {
    std::optional<ReferenceScore> scored;
    for (const auto& s : store ? store->references(spec.name) : std::vector<ReferenceScore>{}) {
      if (s.name == ref.name) {
        scored = s;
      }
    }
    std::printf("reference %s (%s): %s\n", ref.name.c_str(), ref.model.c_str(),
                scored ? ("test loss " + format_number("%.4f", scored->loss) + " when last scored").c_str()
                       : "to be scored on the test split by sweep run, before the runs");
  }
  if (!missing.empty()) {
    std::printf("%zu runs planned; none can run until %s prepared\n", spec.runs.size(),
                missing.size() == 1 ? "its dataset is" : "their datasets are");
    return Exit::ok;
  }
  for (const auto& line : check_memory(spec, o.memory).lines) {
    std::printf("%s\n", line.c_str());
  }
  if (spec.trainer) {
    std::printf("%s; trained by %s's own command (sweep knows its tokens from its events only)\n",
                join_counts(counts).c_str(), spec.trainer->trainer.name.c_str());
    return Exit::ok;
  }
  std::printf("%s; %s tokens left to train", join_counts(counts).c_str(), format_count(tokens_left).c_str());
  if (tokens_stopped > 0) {
    std::printf(" (and %s of the runs --eliminate stopped, if `sweep run` without it finishes them)",
                format_count(tokens_stopped).c_str());
  }
  if (rates > 0) {
    std::printf(", about %.0f min at the %.0f tokens/s measured so far on one slot\n",
                tokens_left / (rate_sum / rates) / 60.0, rate_sum / rates);
  } else {
    std::printf(" (no throughput measured yet: `sweep bench --config` measures a config)\n");
  }
  return Exit::ok;
}

}  // namespace

}  // namespace sweep::commands

namespace sweep {

CLI::App* setup_plan(CLI::App& app, PlanOptions& o) {
  CLI::App* plan = app.add_subcommand("plan", "Show a sweep's runs and their state without running anything");
  plan->add_option("file", o.file, "Sweep file (YAML)")->required()->check(CLI::ExistingFile);
  plan->add_option("--devices", o.devices, "As for run: the kind of device is part of each run's id");
  plan->add_option("--results", o.results, "Output root")->capture_default_str();
  plan->add_option("--max-variants", o.max_variants, "As for run")->check(CLI::Range(1, 100000000))->capture_default_str();
  plan->add_flag("--memory", o.memory, "Also list what the activations of the run needing the most memory are made of");
  return plan;
}

Exit run_plan(const PlanOptions& o) {
  // a plan needs the model's shapes, not the data
  std::set<std::string> missing;
  const SweepPlan plan = commands::plan_from_file(o, commands::PlanFor::plan, nullptr, &missing);
  return commands::print_plan(o, plan, missing);
}

}  // namespace sweep
