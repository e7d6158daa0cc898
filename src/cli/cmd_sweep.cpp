// `sweep run`, `sweep plan`, `sweep status`, `sweep ls`, `sweep ingest`: the sweep engine's
// commands, thin wrappers over config (load_sweep), store and sched.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "cli/memory_check.h"
#include "config/sweep_spec.h"
#include "data/dataset.h"
#include "report/load.h"
#include "sched/lifecycle.h"
#include "sched/local.h"
#include "sched/runner.h"
#include "sched/slots.h"
#include "sched/slurm.h"
#include "store/store.h"
#include "train/device.h"
#include "train/score.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep {

namespace {

std::string db_path(const std::string& results) { return (fs::path(results) / "sweep.db").string(); }

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// A dataset a runnable sweep names: found, its dataset.yaml read and its shards whole.
int64_t usable_dataset_vocab(const std::string& /*dataset*/, const std::string& dir) {
  if (dir.empty()) {
    throw Error("not found in the sweep file's folder or any folder above it — prepare it with `sweep data "
                "prepare --out DIR ...`, or name it relative to the sweep file",
                Exit::bad_input);
  }
  const DatasetInfo info = read_dataset(dir);
  check_shards(info);
  return info.vocab_size;
}

// The kind of device a sweep's runs train on, which is part of each run's id: its slots' kind
// (--devices: a worker trains where its slot is, whatever the file says); with Slurm, cuda when
// --gpus-per-rank gives each rank GPUs, else the file's own.
std::optional<std::string> slot_device(const SweepOptions& o) {
  if (o.executor == "slurm") {
    return o.gpus_per_rank > 0 ? std::optional<std::string>("cuda") : std::nullopt;
  }
  return o.devices.rfind("cuda", 0) == 0 ? "cuda" : "cpu";
}

// The file beside a saved sweep that says what kind of device its runs trained on, for `sweep
// ingest` (a sweep saved before it: its file's own).
fs::path saved_device_file(const std::string& results, const std::string& sweep) {
  return fs::path(results) / "sweeps" / (sweep + ".device");
}

// A sweep as it will run: every dataset checked, vocabulary sizes from their dataset.yaml, every
// run on the kind of device it will train on. With `missing` (sweep plan), a dataset not prepared
// yet is no error: it is listed there, and its runs get a stand-in vocabulary (their sizes
// relative to each other, a ladder's order, still hold; their ids and memory do not).
SweepSpec load_runnable_sweep(const SweepOptions& o, std::set<std::string>* missing = nullptr) {
  const VocabLookup lookup = [missing](const std::string& dataset, const std::string& dir) -> int64_t {
    if (missing != nullptr && dir.empty()) {
      missing->insert(dataset);
      return 64;
    }
    return usable_dataset_vocab(dataset, dir);
  };
  SweepSpec spec = load_sweep(o.file, lookup, static_cast<size_t>(o.max_variants));
  if (const auto device = slot_device(o)) {
    train_on(spec, *device);
  }
  return spec;
}

}  // namespace

CLI::App* setup_sweep_commands(CLI::App& app, SweepOptions& o) {
  CLI::App* run = app.add_subcommand("run", "Run a sweep: every variant × seed not already finished");
  run->add_option("file", o.file, "Sweep file (YAML)")->required()->check(CLI::ExistingFile);
  run->add_option("--results", o.results, "Output root: sweep.db and run directories")->capture_default_str();
  run->add_option("--devices", o.devices, "Slots: cpu | cpu:NxT | cuda:0,1,...")->capture_default_str();
  run->add_option("--retries", o.retries, "Retries of a crashed run (from its checkpoint)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  run->add_option("--max-preemptions", o.max_preemptions,
                  "Requeues of a run stopped by SIGTERM before it is marked failed (from its checkpoint)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  run->add_option("--max-variants", o.max_variants,
                  "Refuse a sweep that expands to more variants (interventions × grid/zip points)")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  run->add_flag("--retry-failed", o.retry_failed, "Run again the runs that ended failed or out of memory");
  run->add_option("--stall-timeout", o.stall_timeout,
                  "Seconds without an event after which a worker is killed as stuck and retried from its checkpoint "
                  "(0 = never; default: each run's resources.stall_timeout, 600)")
      ->check(at_least(0));
  run->add_flag("--until-decided", o.until_decided,
                "After the declared seeds, add seeds to the interventions still undecided (and the baseline) until "
                "each is better, worse or equivalent within the file's min_effect, or --max-seeds is reached");
  run->add_option("--max-seeds", o.max_seeds, "--until-decided: the most seeds per variant (default: 4 × the declared)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  run->add_option("--executor", o.executor, "local (device slots here) or slurm (sbatch array tasks)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  run->add_option("--partition", o.partition, "Slurm: the partition of the tasks");
  run->add_option("--time", o.time, "Slurm: each task's time limit (sbatch --time)");
  run->add_option("--gpus-per-rank", o.gpus_per_rank, "Slurm: GPUs per rank (runs then use CUDA)")
      ->check(CLI::Range(0, 64));
  run->add_option("--max-parallel", o.max_parallel, "Slurm: at most this many tasks at once (0: no limit)")
      ->check(CLI::Range(0, 100000));
  o.run = run;

  CLI::App* plan = app.add_subcommand("plan", "Show a sweep's runs and their state without running anything");
  plan->add_option("file", o.file, "Sweep file (YAML)")->required()->check(CLI::ExistingFile);
  plan->add_option("--devices", o.devices, "As for run: the kind of device is part of each run's id")->capture_default_str();
  plan->add_option("--results", o.results, "Output root")->capture_default_str();
  plan->add_option("--max-variants", o.max_variants, "As for run")->check(CLI::Range(1, 100000000))->capture_default_str();
  plan->add_flag("--memory", o.memory, "Also list what the activations of the run needing the most memory are made of");
  o.plan = plan;

  CLI::App* status = app.add_subcommand("status", "Runs of a sweep and their state (default: the latest sweep)");
  status->add_option("sweep", o.sweep, "Sweep name");
  status->add_option("--results", o.results, "Output root")->capture_default_str();
  o.status = status;

  CLI::App* ls = app.add_subcommand("ls", "Sweeps in the database with their runs per state");
  ls->add_option("--results", o.results, "Output root")->capture_default_str();
  o.ls = ls;

  CLI::App* ingest = app.add_subcommand("ingest", "Rebuild the database from run directories");
  ingest->add_option("dir", o.dir, "A run directory, or a results folder")->required()->check(CLI::ExistingDirectory);
  ingest->add_option("--results", o.ingest_results, "Output root whose sweep.db is updated (default: DIR for a "
                                                    "results folder, else results)");
  o.ingest = ingest;

  CLI::App* check = app.add_subcommand(
      "check", "An A/A check of a sweep's trainer: its baseline twice with each of a few seeds — is it deterministic "
               "given its seeds, and how does its run-to-run noise compare with its seed noise?");
  check->add_option("file", o.file, "Sweep file (YAML): its baseline is trained")->required()->check(CLI::ExistingFile);
  check->add_option("--results", o.results, "Output root")->capture_default_str();
  check->add_option("--devices", o.devices, "Slots: cpu | cpu:NxT | cuda:0,1,...")->capture_default_str();
  check->add_option("--seeds", o.check_seeds, "Seeds, each trained twice")->check(CLI::Range(2, 100))->capture_default_str();
  check->add_option("--stall-timeout", o.stall_timeout, "As for run")->check(at_least(0));
  o.check = check;
  return run;
}

namespace {

// "3 done, 1 failed"
template <typename Map>
std::string join_counts(const Map& counts) {
  std::string out;
  for (const auto& [state, n] : counts) {
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + state;
  }
  return out;
}

// `missing`: datasets not prepared yet. Their runs are planned without what needs the data — a
// run's id (its vocabulary is part of it), its epochs, its memory and the vocabulary's weights.
Exit run_plan(const SweepOptions& o, const SweepSpec& spec, const std::set<std::string>& missing) {
  for (const auto& dataset : missing) {
    std::printf("dataset '%s' is not prepared yet (not found from %s's folder or above) — prepare it with `sweep data "
                "prepare --out DIR ...` (scripts/main.sh prepares the Brown corpus); until then its runs' ids, epochs, "
                "memory and vocabulary weights are unknown: '-' below\n",
                dataset.c_str(), spec.file.c_str());
  }
  std::unique_ptr<Store> store;
  if (fs::exists(db_path(o.results))) {  // plan writes nothing: no database, every run pending
    store = std::make_unique<Store>(db_path(o.results), Store::Access::read);
  }
  std::printf("sweep %s (%s): %zu variants, %zu runs, baseline %s\n", spec.name.c_str(), spec.file.c_str(),
              spec.variants.size(), spec.runs.size(), spec.baseline.c_str());
  std::printf("%-32s %-14s %-16s %-10s %10s %7s %13s  %s\n", "variant", "seed", "run", "state", "tokens", "epochs",
              "memory/device", "parameters (active per token)");
  double tokens_left = 0, rate_sum = 0;
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
    counts[to_string(state)]++;
    if (row && row->tokens_per_s) {
      rate_sum += *row->tokens_per_s;
      ++rates;
    }
    if (!finished(state) && !failed(state) && !own) {
      tokens_left += static_cast<double>(r.config.train.tokens - (row ? row->tokens : 0));
    }
    if (own) {
      std::printf("%-32s %-14s %-16s %-10s %10s %7s %13s  %s\n", r.variant.c_str(), seeds.c_str(), r.run_id.c_str(),
                  to_string(state), "-", "-", "-",
                  ("trainer " + r.config.trainer->name + "@" + r.config.trainer->version()).c_str());
      continue;
    }
    const ModelSize size = model_size(r.config.model);
    const std::string params = format_count(static_cast<double>(size.total)) +
                               (size.active != size.total ? " (" + format_count(static_cast<double>(size.active)) + ")" : "");
    std::printf("%-32s %-14s %-16s %-10s %10s %7.2f %13s  %s\n", r.variant.c_str(), seeds.c_str(), r.run_id.c_str(),
                to_string(state), format_count(static_cast<double>(r.config.train.tokens)).c_str(), epochs,
                format_bytes(run_memory(r.config).total()).c_str(), params.c_str());
  }
  if (repeating > 0) {
    std::printf("warning: %d of %zu runs train more tokens than their train split holds (up to %.2f epochs): they "
                "see data again, and interventions that fight overfitting (dropout, weight decay) help more than in "
                "the single-epoch studies of web-scale data\n",
                repeating, spec.runs.size(), most_epochs);
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
  if (rates > 0) {
    std::printf(", about %.0f min at the %.0f tokens/s measured so far on one slot\n",
                tokens_left / (rate_sum / rates) / 60.0, rate_sum / rates);
  } else {
    std::printf(" (no throughput measured yet: `sweep bench --config` measures a config)\n");
  }
  return Exit::ok;
}

// The values written into the sbatch script as they are: refused unless plainly one value each;
// and the folders written one per line (tab-separated) into its runs file.
std::string slurm_option_problem(const SweepOptions& o, const SweepSpec& spec) {
  std::vector<std::string> folders{fs::absolute(o.results).string()};
  for (const auto& run : spec.runs) {
    folders.push_back(run.config.data.dir);
  }
  for (const auto& f : folders) {
    if (f.find_first_of("\t\n") != std::string::npos) {
      return "'" + f + "' has a tab or a line break, which the Slurm executor's run list cannot hold — rename it";
    }
  }
  const auto plain = [](const std::string& v, const std::string& allowed) {
    return std::all_of(v.begin(), v.end(), [&](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || allowed.find(c) != std::string::npos;
    });
  };
  if (!plain(o.partition, "_-.,")) {
    return "--partition '" + o.partition + "': a partition name (or a comma-separated list) has letters, digits and "
           "_ - . only";
  }
  // minutes, minutes:seconds, hours:minutes:seconds, days-hours[:minutes[:seconds]] (sbatch), or unlimited
  const size_t dash = o.time.find('-');
  const std::string clock = dash == std::string::npos ? o.time : o.time.substr(dash + 1);
  const std::vector<std::string> fields = split(clock, ':');
  const bool digits = std::all_of(fields.begin(), fields.end(), [](const std::string& f) {
    return !f.empty() && f.find_first_not_of("0123456789") == std::string::npos;
  });
  const bool days_ok = dash == std::string::npos ||
                       (dash > 0 && o.time.find_first_not_of("0123456789") == dash && fields.size() <= 3);
  if (!o.time.empty() && o.time != "unlimited" && o.time != "infinite" &&
      (!digits || fields.size() > 3 || !days_ok)) {
    return "--time '" + o.time + "': a Slurm time limit is minutes or [days-]hours:minutes:seconds, e.g. 2:00:00";
  }
  return "";
}

// --until-decided: what the sweep file must declare for seeds to be added (before anything is written).
void check_until_decided(const SweepOptions& o, const SweepSpec& spec) {
  if (!o.until_decided) {
    if (o.max_seeds > 0) {
      throw Error("--max-seeds " + std::to_string(o.max_seeds) + " needs --until-decided (it caps the seeds that adds)",
                  Exit::bad_input);
    }
    return;
  }
  const SeedDesign& d = spec.design;
  if (!d.seed_list) {
    throw Error("--until-decided: " + spec.file + " declares seeds as {init, data} or with repeat; seeds are added "
                "to a list — write seeds: [1, 2, 3] (init = data) to use it", Exit::bad_input);
  }
  if (d.first < 2) {
    throw Error("--until-decided: " + spec.file + " declares 1 seed; the first look needs at least 2 per variant to "
                "measure the seed noise — declare seeds: [1, 2] or more", Exit::bad_input);
  }
  if (d.min_effect <= 0) {
    throw Error("--until-decided: " + spec.file + " declares no min_effect — without the smallest improvement that "
                "matters no intervention can be decided equivalent, and every one without an effect would run to the "
                "cap; add e.g. `min_effect: 0.01` (in test_loss's units) to it", Exit::bad_input);
  }
  if (o.max_seeds > 0 && o.max_seeds < d.first) {
    throw Error("--max-seeds " + std::to_string(o.max_seeds) + " is below the " + std::to_string(d.first) +
                " seeds " + spec.file + " declares: pass at least " + std::to_string(d.first), Exit::bad_input);
  }
  if (const int64_t cap = o.max_seeds > 0 ? o.max_seeds : 4 * d.first;
      (cap + d.first - 1) / d.first > SeedDesign::k_max_looks) {
    throw Error("--max-seeds " + std::to_string(cap) + " gives more than " + std::to_string(SeedDesign::k_max_looks) +
                    " looks of " + std::to_string(d.first) + " seeds: declare more seeds in " + spec.file +
                    " or pass a lower --max-seeds",
                Exit::bad_input);
  }
}

// The seed design of this `sweep run`: the file's, with the cap of --until-decided — or, without
// it, of the sweep's last --until-decided run, which goes on (its added seeds stay its own).
SeedDesign seed_design(const SweepOptions& o, const SweepSpec& spec, Store& store) {
  SeedDesign d = spec.design;
  const std::optional<SweepInfo> recorded = store.sweep_info(spec.name);
  if (!recorded || !recorded->design.sequential()) {
    d.max_seeds = !o.until_decided ? 0 : o.max_seeds > 0 ? o.max_seeds : 4 * d.first;
    return d;
  }
  const SeedDesign& was = recorded->design;
  d.max_seeds = o.until_decided && o.max_seeds > 0 ? o.max_seeds : was.max_seeds;
  d.spending = was.spending;  // its looks were judged so
  const auto interventions = static_cast<int64_t>(spec.variants.size()) - 1;
  if (d.max_seeds != was.max_seeds || d.min_effect != was.min_effect || d.first != was.first ||
      (was.interventions > 0 && was.interventions != interventions)) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%lld seeds, min_effect %g and --max-seeds %lld, alpha split among %lld interventions",
                  static_cast<long long>(was.first), was.min_effect, static_cast<long long>(was.max_seeds),
                  static_cast<long long>(was.interventions));
    throw Error("sweep " + spec.name + " was run --until-decided with " + buf +
                    ": its looks were judged by those, so they stay — run it with them, or rename the sweep (sweep:) "
                    "for a new design",
                Exit::bad_input);
  }
  for (const auto& [variant, run_id] : was.variant_runs) {  // a variant is what its runs train
    const auto same = std::find_if(spec.runs.begin(), spec.runs.end(),
                                   [&](const PlannedRun& r) { return r.variant == variant && r.run_id == run_id; });
    if (same == spec.runs.end()) {
      throw Error("sweep " + spec.name + " was run --until-decided, and " + spec.file + " changes (or drops) '" +
                      variant + "' since its looks were judged — run it unchanged, or rename the sweep (sweep:) for "
                      "a new design",
                  Exit::bad_input);
    }
  }
  if (!o.until_decided) {
    std::printf("sweep %s was run --until-decided (--max-seeds %lld): it goes on so\n", spec.name.c_str(),
                static_cast<long long>(d.max_seeds));
  }
  return d;
}

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Sha256 sha;
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    sha.update(block.data(), static_cast<size_t>(in.gcount()));
  }
  return sha.hex();
}

// The sweep's reference models that need a score, each scored on the baseline's test split the way
// runs are (`sweep eval`), before anything is written: a state dict that does not fit fails the
// command before hours of training, with nothing written. A score is kept while the file's content
// and the dataset stay the same. Returns the new scores, for the caller to record.
std::vector<ReferenceScore> score_references(const SweepSpec& spec, const std::string& db) {
  std::vector<ReferenceScore> fresh;
  if (spec.references.empty()) {
    return fresh;
  }
  const RunConfig& base = spec.runs.front().config;  // the baseline's
  const std::string data = fs::absolute(base.data.location()).lexically_normal().string();
  const std::vector<ReferenceScore> scored =
      fs::exists(db) ? Store(db, Store::Access::read).references(spec.name) : std::vector<ReferenceScore>{};
  for (const auto& ref : spec.references) {
    const std::string sha = file_sha256(ref.model);
    const auto was = std::find_if(scored.begin(), scored.end(), [&](const ReferenceScore& s) { return s.name == ref.name; });
    if (was != scored.end() && was->model_sha256 == sha && was->dataset == data) {
      continue;
    }
    std::printf("scoring reference '%s' (%s) on the test split of %s\n", ref.name.c_str(), ref.model.c_str(), data.c_str());
    std::fflush(stdout);
    ScoreOptions so;
    so.model = ref.model;
    so.data = data;
    so.config = ref.config;
    so.n_head = ref.n_head;
    so.ignore_extra = ref.ignore_extra;
    so.batch = base.train.micro_batch;
    Score s;
    try {
      s = score_model(so);
    } catch (const Error& e) {  // named where the sweep file names the reference
      throw Error(spec.file + ": references." + ref.name + ": " + e.what() +
                      (ref.config.empty() ? " (in a sweep file: n_head: or config: beside model:)" : ""),
                  e.code());
    }
    fresh.push_back({ref.name, ref.model, sha, data, s.loss, s.bpb >= 0 ? std::optional<double>(s.bpb) : std::nullopt,
                     s.tokens, s.parameters, s.model.block_size});
    std::printf("  %s: test loss %.4f%s over %lld tokens\n", ref.name.c_str(), s.loss,
                s.bpb >= 0 ? format_number(", %.4f bits/byte", s.bpb).c_str() : "", static_cast<long long>(s.tokens));
  }
  return fresh;
}

Exit run_run(const SweepOptions& o, SweepSpec spec) {
  const bool slurm = o.executor == "slurm";
  if (o.stall_timeout > 999999 || (o.stall_timeout > 0 && o.stall_timeout < 1)) {  // resources.stall_timeout's rules
    throw Error("--stall-timeout " + format_number("%g", o.stall_timeout) +
                    ": from 1 to 999999 seconds (0 turns the watchdog off)",
                Exit::bad_input);
  }
  check_until_decided(o, spec);
  refuse_over_memory(spec, db_path(o.results));  // before anything is written
  if (!slurm) {
    check_fits(spec, o.devices);  // before anything is written
    for (const Slot& slot : parse_devices(o.devices, 1)) {
      check_device(slot.label, "--devices " + o.devices);  // a GPU this machine has, with a CUDA build
    }
  } else if (const std::string bad = slurm_option_problem(o, spec); !bad.empty()) {
    throw Error(bad, Exit::bad_input);
  } else if (!find_program("sbatch")) {
    throw Error("--executor slurm: sbatch not found — run on a Slurm login node (Debian: slurm-client)",
                Exit::bad_input);
  }
  const std::vector<ReferenceScore> references = score_references(spec, db_path(o.results));
  fs::create_directories(fs::path(o.results) / "sweeps");
  // The folder's lock before anything is written in it: a second `sweep run` changes nothing.
  auto lock = std::make_unique<ResultsLock>(o.results);
  Store store(db_path(o.results));
  spec.design = seed_design(o, spec, store);
  if (spec.design.sequential()) {
    // The seeds earlier rounds added stay in the sweep from the start (its report, recovery).
    std::map<std::string, int64_t> recorded;
    for (const auto& row : store.sweep_runs(spec.name)) {
      recorded[row.variant]++;
    }
    const SweepSpec declared = spec;
    for (const auto& v : declared.variants) {
      for (auto& run : added_seed_runs(declared, v.name, recorded[v.name])) {
        spec.runs.push_back(std::move(run));
      }
    }
  }
  for (const auto& r : references) {
    store.record_reference(spec.name, r);
  }
  write_file_atomic(fs::path(o.results) / "sweeps" / (spec.name + ".yaml"), spec.text);
  if (const auto device = slot_device(o)) {
    write_file_atomic(saved_device_file(o.results, spec.name), *device + "\n");
  } else {
    fs::remove(saved_device_file(o.results, spec.name));
  }
  if (spec.trainer) {  // the saved copy's trainer paths are relative to the original's folder: `sweep ingest` needs it
    write_file_atomic(fs::path(o.results) / "sweeps" / (spec.name + ".trainer-dir"), spec.trainer->trainer.dir + "\n");
  }
  const std::string worker = executable_path().string();
  std::unique_ptr<Executor> executor;
  if (slurm) {
    SlurmOptions so;
    so.worker_binary = worker;
    so.partition = o.partition;
    so.time = o.time;
    so.gpus_per_rank = o.gpus_per_rank;
    so.max_parallel = o.max_parallel;
    so.max_preemptions = o.max_preemptions;
    so.stall_timeout = o.stall_timeout;
    executor = std::make_unique<SlurmExecutor>(so, fs::absolute(fs::path(o.results) / spec.name / "slurm").string(),
                                               "sweep-" + spec.name);
  } else {
    executor = std::make_unique<LocalExecutor>(o.devices, worker, o.stall_timeout);
  }
  RunnerOptions ro;
  ro.retries = o.retries;
  ro.max_preemptions = o.max_preemptions;
  ro.retry_failed = o.retry_failed;
  ro.stall_timeout = o.stall_timeout;
  if (spec.design.sequential()) {
    ro.next_round = [&store](const SweepSpec& current, std::string& why) {
      return next_seed_round(store, current, why);
    };
  }
  return SweepRunner(spec, store, std::move(lock), std::move(executor), ro).run();
}

Exit run_ls(Store& store) {
  std::printf("%-24s %-40s %s\n", "sweep", "file", "runs");
  for (const auto& s : store.sweeps()) {
    std::map<std::string, int> counts;  // by plan state: a run left 'running' by a dead scheduler is resumable
    for (const auto& r : store.sweep_runs(s.name)) {
      counts[to_string(plan_state(r.run))]++;
    }
    std::printf("%-24s %-40s %s\n", s.name.c_str(), s.file.c_str(), join_counts(counts).c_str());
  }
  return Exit::ok;
}

Exit run_status(Store& store, std::string name) {
  if (name.empty()) {
    const auto all = store.sweeps();
    if (all.empty()) {
      throw Error("the database holds no sweep yet", Exit::bad_input);
    }
    name = all.front().name;
  }
  const auto rows = store.sweep_runs(name);
  if (rows.empty()) {
    throw Error("no sweep named '" + name + "' — `sweep ls` lists them", Exit::bad_input);
  }
  const bool jobs = std::any_of(rows.begin(), rows.end(), [](const SweepRunRow& r) { return !r.run.job.empty(); });
  std::printf("sweep %s\n%-32s %-14s %-16s %-10s %-8s %11s %9s %9s %8s %11s  %-30s %s%s\n", name.c_str(), "variant",
              "seed", "run", "state", "device", "step", "loss", "test", "attempts", "last event", "code (latest start)",
              jobs ? "slurm task         " : "", "error");
  const double unix_now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (const auto& r : rows) {
    const std::string seeds = seeds_in_column(r.run.init_seed, r.run.data_seed, r.run.repeat);
    const std::string step = std::to_string(r.run.steps) + "/" + std::to_string(r.run.total_steps);
    char loss[32], test[32];
    std::snprintf(loss, sizeof loss, r.run.last_loss ? "%.4f" : "-", r.run.last_loss.value_or(0));
    std::snprintf(test, sizeof test, r.run.test_loss ? "%.4f" : "-", r.run.test_loss.value_or(0));
    const std::string job = jobs ? r.run.job + " " + r.run.job_state : "";
    // Which code trained it: the commit and numerics version of its latest start.
    const std::vector<Segment> segments = store.segments(r.run.run_id);
    const std::string code = segments.empty() ? "-" : segments.back().code_label();
    // How long ago a running run's worker last sent an event (the watchdog's measure).
    const PlanState state = plan_state(r.run);
    const std::string heard = state == PlanState::running && !segments.empty()
                                  ? format_duration(std::max(0.0, unix_now - segments.back().last_event)) + " ago"
                                  : "-";
    // where its latest start trained (a run from before the device was recorded: the kind its config names)
    const std::string device = r.run.device.empty() ? "-" : r.run.device;
    std::printf("%-32s %-14s %-16s %-10s %-8s %11s %9s %9s %8lld %11s  %-30s %s%s\n", r.variant.c_str(), seeds.c_str(),
                r.run.run_id.c_str(), to_string(state), device.c_str(), step.c_str(), loss, test,
                static_cast<long long>(r.run.attempts), heard.c_str(), code.c_str(),
                jobs ? (job + std::string(19 - std::min<size_t>(19, job.size()), ' ')).c_str() : "",
                first_line(r.run.error).c_str());
  }
  return Exit::ok;
}

// A run directory, or a results folder: its saved sweep files and every run directory. A saved
// sweep's datasets need not be where they were: their vocabulary sizes are its runs' own.
Exit run_ingest(const SweepOptions& o) {
  const bool results_folder = fs::exists(fs::path(o.dir) / "runs");
  const std::string results = !o.ingest_results.empty() ? o.ingest_results : results_folder ? o.dir : "results";
  std::vector<fs::path> run_dirs;
  if (results_folder) {
    for (const auto& d : fs::directory_iterator(fs::path(o.dir) / "runs")) {
      if (fs::exists(d.path() / "config.yaml")) {
        run_dirs.push_back(d.path());
      }
    }
  } else if (fs::exists(fs::path(o.dir) / "config.yaml")) {
    run_dirs.push_back(o.dir);
  } else {
    throw Error(o.dir + " is neither a run folder (no config.yaml) nor a results folder (no runs/)", Exit::bad_input);
  }
  fs::create_directories(results);
  const ResultsLock lock(results);  // the database has one writer: not beside a `sweep run`
  Store store(db_path(results));
  std::map<std::string, int64_t> vocab_of_dataset;  // as the runs were trained
  std::vector<std::string> problems;
  for (const auto& d : run_dirs) {
    const std::string config = (d / "config.yaml").string();
    try {
      const RunConfig c = load_run_config(config);
      vocab_of_dataset[c.data.dataset] = c.model.vocab_size;
    } catch (const Error& e) {
      problems.push_back(first_line(e.what()));
    }
  }
  const fs::path sweeps = fs::path(o.dir) / "sweeps";
  if (results_folder && fs::exists(sweeps)) {
    for (const auto& f : fs::directory_iterator(sweeps)) {
      if (f.path().extension() != ".yaml") {
        continue;  // a sweep's .trainer-dir or .device, beside its file
      }
      try {
        const auto vocab = [&](const std::string& dataset, const std::string& dir) {
          const auto known = vocab_of_dataset.find(dataset);
          return known != vocab_of_dataset.end() ? known->second : usable_dataset_vocab(dataset, dir);
        };
        // A saved sweep ran once: however many variants it has, they were asked for.
        const fs::path trainer_dir = fs::path(f.path()).replace_extension(".trainer-dir");
        const fs::path device = fs::path(f.path()).replace_extension(".device");
        SweepSpec spec = load_sweep(f.path().string(), vocab, SIZE_MAX,
                                    fs::exists(trainer_dir) ? trim(read_file(trainer_dir)) : "");
        if (fs::exists(device)) {  // the kind of device its runs trained on, part of their ids
          const std::string kind = trim(read_file(device));
          if (kind != "cpu" && kind != "cuda") {
            throw Error(device.string() + " says '" + kind.substr(0, 40) + "', not cpu or cuda");
          }
          train_on(spec, kind);
        }
        store.record_sweep(spec);
      } catch (const Error& e) {
        problems.push_back("sweep " + f.path().string() + " not recorded: " + first_line(e.what()));
      }
    }
  }
  for (const auto& d : run_dirs) {
    const std::string id = d.filename().string();
    store.ensure_run(id, read_file(d / "config.yaml"), d.string());
    // The run's folder is the one ingested (a saved sweep recorded its runs under this results
    // folder, where they are not): `sweep run` resumes it there, from its checkpoint. A folder of
    // the run already here keeps it.
    if (!fs::exists(fs::path(store.run(id)->run_dir) / "config.yaml")) {
      store.set_run_dir(id, fs::absolute(d).string());
    }
    reingest_run_dir(store, id, d.string());
  }
  std::printf("ingested %zu run director%s into %s\n", run_dirs.size(), run_dirs.size() == 1 ? "y" : "ies",
              db_path(results).c_str());
  for (const auto& p : problems) {
    std::fprintf(stderr, "sweep ingest: %s\n", p.c_str());
  }
  return problems.empty() ? Exit::ok : Exit::failed;
}

}  // namespace

namespace {

// `sweep check FILE`: the sweep's baseline (its first rung on a ladder) with seeds 1..N, each
// trained twice (repeats 0 and 1: repeat 0 is the sweep's own run of that seed), recorded as the
// sweep "<name>-check"; then whether the repeats agree to the last digit, and σ_repeat against σ_seed.
Exit run_check(const SweepOptions& o, const SweepSpec& spec) {
  SweepSpec check = spec;
  check.name = spec.name + "-check";
  check.variants = {spec.variants.front()};
  check.baseline = check.variants.front().name;
  check.axes.clear();
  check.ladder.reset();
  check.references.clear();
  check.design = SeedDesign{};
  check.design.first = o.check_seeds;
  check.runs.clear();
  const PlannedRun& like = spec.runs.front();  // the baseline's first run
  for (int64_t s = 1; s <= o.check_seeds; ++s) {
    for (int64_t repeat = 0; repeat < 2; ++repeat) {
      PlannedRun run = like;
      run.repeat = repeat;
      run.config.seeds.init = run.config.seeds.data = s;
      run.run_id = run_id_of(run.config, repeat);
      check.runs.push_back(run);
    }
  }
  SweepOptions ro = o;
  ro.until_decided = false;
  ro.max_seeds = 0;
  const Exit ran = run_run(ro, check);
  if (ran != Exit::ok) {
    return ran;
  }
  // ---- the verdict: identical twins, and the two noises ----
  Store store(db_path(o.results), Store::Access::read);
  std::map<int64_t, std::vector<double>> by_seed;
  for (const auto& row : store.sweep_runs(check.name)) {
    if (row.run.status == RunState::done && row.run.test_loss) {
      by_seed[row.run.init_seed].push_back(*row.run.test_loss);
    }
  }
  std::printf("\nA/A check of %s's baseline '%s' (%s): %lld seeds, each trained twice\n", spec.name.c_str(),
              check.baseline.c_str(), like.config.trainer ? ("trainer " + like.config.trainer->name).c_str() : "sweep's core",
              static_cast<long long>(o.check_seeds));
  double within = 0, largest = 0;
  int pairs = 0;
  std::vector<double> means;
  for (const auto& [seed, values] : by_seed) {
    std::printf("  seed %lld: %s\n", static_cast<long long>(seed),
                values.size() == 2 ? (format_number("%.6f", values[0]) + "  " + format_number("%.6f", values[1]) +
                                      (values[0] == values[1] ? "  identical" : "  differ by " + format_number("%.2g", std::abs(values[0] - values[1]))))
                                         .c_str()
                                   : "a run has no result");
    if (values.size() == 2) {
      within += (values[0] - values[1]) * (values[0] - values[1]) / 2;
      largest = std::max(largest, std::abs(values[0] - values[1]));
      means.push_back((values[0] + values[1]) / 2);
      ++pairs;
    }
  }
  if (pairs < 2) {
    std::printf("  too few seeds with both runs finished to say more\n");
    return Exit::failed;
  }
  const double sigma_repeat = std::sqrt(within / pairs);
  double m = 0, ss = 0;
  for (double v : means) {
    m += v / static_cast<double>(means.size());
  }
  for (double v : means) {
    ss += (v - m) * (v - m);
  }
  // the seed means' variance holds σ_seed² + σ_repeat²/2
  const double sigma_seed = std::sqrt(std::max(0.0, ss / static_cast<double>(means.size() - 1) - sigma_repeat * sigma_repeat / 2));
  if (largest == 0) {
    std::printf("  deterministic given its seeds: every repeat equals its twin to the last digit (σ_repeat = 0)\n"
                "  seed noise: σ_seed = %.4g over %d seeds — a fixed-seed \"noise\" study of this trainer would "
                "measure nothing; vary the seeds\n",
                sigma_seed, pairs);
  } else {
    std::printf("  not deterministic given its seeds: twins differ by up to %.3g; σ_repeat = %.3g against σ_seed = "
                "%.3g (%d seeds) — run-to-run noise is %.0f%% of seed noise%s\n",
                largest, sigma_repeat, sigma_seed, pairs, sigma_seed > 0 ? 100 * sigma_repeat / sigma_seed : 100.0,
                sigma_repeat > sigma_seed / 2
                    ? ": a large share — seeds alone do not reproduce its runs (GPU atomics, unseeded data order or "
                      "dropout?); paired verdicts still hold, at lower power"
                    : ": seeds account for most of its noise");
  }
  return Exit::ok;
}

}  // namespace

Exit run_sweep_command(const SweepOptions& o, const CLI::App* which) {
  if (which == o.run || which == o.plan || which == o.check) {
    // the whole sweep is validated before anything; a plan needs the model's shapes, not the data
    std::set<std::string> missing;
    const SweepSpec spec = load_runnable_sweep(o, which == o.plan ? &missing : nullptr);
    return which == o.plan ? run_plan(o, spec, missing) : which == o.check ? run_check(o, spec) : run_run(o, spec);
  }
  if (which == o.ingest) {
    return run_ingest(o);
  }
  if (!fs::exists(db_path(o.results))) {
    throw Error("no database at " + db_path(o.results) + " — run a sweep first (`sweep run FILE`)", Exit::bad_input);
  }
  Store store(db_path(o.results), Store::Access::read);
  return which == o.ls ? run_ls(store) : run_status(store, o.sweep);
}

}  // namespace sweep
