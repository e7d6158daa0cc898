// `sweep ingest DIR`: the database rebuilt from run directories and saved sweep files.
#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "cli/sweep_commands.h"
#include "sched/run_folder.h"
#include "sched/runner.h"
#include "store/results_folder.h"
#include "util/text.h"

namespace sweep::commands {

namespace {

// Whether none of `spec`'s runs is among the run directories.
bool none_here(const SweepSpec& spec, const std::vector<std::pair<fs::path, RunConfig>>& run_dirs) {
  return std::none_of(spec.runs.begin(), spec.runs.end(), [&](const PlannedRun& r) {
    return std::any_of(run_dirs.begin(), run_dirs.end(), [&](const auto& d) { return d.first.filename() == r.run_id; });
  });
}

}  // namespace

}  // namespace sweep::commands

namespace sweep {

using namespace commands;

CLI::App* setup_ingest(CLI::App& app, IngestOptions& o) {
  CLI::App* ingest = app.add_subcommand("ingest", "Rebuild the database from run directories");
  ingest->add_option("dir", o.dir, "A run directory, or a results folder")->required()->check(CLI::ExistingDirectory);
  ingest->add_option("--results", o.results, "Output root whose sweep.db is updated (default: DIR for a "
                                                    "results folder, else results)");
  return ingest;
}

// A run directory, or a results folder: its saved sweep files and every run directory. A saved
// sweep's datasets need not be where they were: their vocabulary sizes are its runs' own.
Exit run_ingest(const IngestOptions& o) {
  const bool results_folder = fs::exists(runs_folder(o.dir));
  const std::string results = !o.results.empty() ? o.results : results_folder ? o.dir : "results";
  std::vector<fs::path> found;
  std::vector<std::string> problems;
  if (results_folder) {
    for (const auto& d : fs::directory_iterator(runs_folder(o.dir))) {
      if (fs::exists(d.path() / "config.yaml") || fs::is_symlink(d.path() / "config.yaml")) {
        found.push_back(d.path());
      } else if (fs::exists(d.path() / "events.jsonl")) {
        problems.push_back("run folder " + d.path().string() + " skipped: it has events but no config.yaml — restore it, or "
                           "move the folder away");
      }
    }
  } else if (fs::exists(fs::path(o.dir) / "config.yaml")) {
    fs::path dir = fs::absolute(o.dir).lexically_normal();  // its name is its id: "runs/ID/" too
    found.push_back(dir.filename().empty() ? dir.parent_path() : dir);
  } else {
    throw Error(o.dir + " is neither a run folder (no config.yaml) nor a results folder (no runs/)", Exit::bad_input);
  }
  fs::create_directories(results);
  const ResultsLock lock(results);  // the database has one writer: not beside a `sweep run`
  Store store(database_path(results));
  std::map<std::string, int64_t> vocab_of_dataset;  // as the runs were trained
  // A folder is trusted only as the run its name says (sched/run_folder.h): one that is not is said, and skipped.
  std::vector<std::pair<fs::path, RunConfig>> run_dirs;
  for (const auto& d : found) {
    RunConfig c;
    if (const std::string problem = run_folder_problem(d, &c); !problem.empty()) {
      problems.push_back("run folder " + d.string() + " skipped: " + problem);
      continue;
    }
    vocab_of_dataset[c.data.dataset] = c.model.vocab_size;
    run_dirs.emplace_back(d, std::move(c));
  }
  const fs::path sweeps = sweeps_folder(o.dir);
  if (results_folder && fs::exists(sweeps)) {
    for (const auto& f : fs::directory_iterator(sweeps)) {
      if (f.path().extension() != ".yaml") {
        continue;  // a sweep's .trainer, .device, .rounds, .eliminated or .file, beside its file
      }
      try {
        const auto vocab = [&](const std::string& dataset, const std::string& dir) {
          const auto known = vocab_of_dataset.find(dataset);
          return known != vocab_of_dataset.end() ? known->second : usable_dataset_vocab(dataset, dir);
        };
        // A saved sweep ran once: however many variants it has, they were asked for; its runs' kind
        // of device and the seeds its rounds added are the folder's record (sched/planning.h).
        const std::string name = f.path().stem().string();
        PlanRequest request;
        request.file = f.path().string();
        request.vocab = vocab;
        request.max_variants = SIZE_MAX;
        request.trainer = read_saved_trainer(o.dir, name);
        request.devices.recorded = read_saved_device(o.dir, name);
        request.devices.check_here = false;
        request.saved_rounds = read_saved_rounds(o.dir, name);
        request.results = o.dir;  // the runs --eliminate stopped: a damaged record said, the sweep recorded without it
        request.lenient_records = true;
        SweepPlan plan = plan_sweep(request);
        for (const std::string& problem : plan.problems) {
          problems.push_back("sweep " + f.path().string() + ": " + problem);
        }
        SweepSpec spec = std::move(plan.spec);
        if (request.devices.recorded.empty() && !spec.device && none_here(spec, run_dirs)) {
          // no record of the kind (a folder saved before it was kept, or its file lost): the runs say it
          request.devices.recorded = "cuda";
          if (SweepSpec on_gpus = plan_sweep(request).spec; !none_here(on_gpus, run_dirs)) {
            spec = std::move(on_gpus);
          }
        }
        if (const std::string as_run = read_saved_file_name(o.dir, name); !as_run.empty()) {
          spec.file = as_run;  // the name the report shows, as the sweep was run
        }
        store.record_sweep(spec);
      } catch (const Error& e) {
        problems.push_back("sweep " + f.path().string() + " not recorded: " + first_line(e.what()));
      }
    }
  }
  for (const auto& [d, config] : run_dirs) {
    const std::string id = d.filename().string();
    store.ensure_run(id, read_file(d / "config.yaml"), d.string(), config.seeds.init, config.seeds.data);
    // The run's folder is the one ingested (a saved sweep recorded its runs under this results
    // folder, where they are not): `sweep run` resumes it there, from its checkpoint. A folder of
    // the run already here keeps it.
    if (!fs::exists(fs::path(store.run(id)->run_dir) / "config.yaml")) {
      store.set_run_dir(id, fs::absolute(d).string());
    }
    // the folder's events are the run's whole record: none of another copy's trained elsewhere stays
    store.forget_events(id);
    store.note_attempts(id, reingest_run_dir(store, id, d.string()));
  }
  std::printf("ingested %zu run director%s into %s\n", run_dirs.size(), run_dirs.size() == 1 ? "y" : "ies",
              database_path(results).c_str());
  for (const auto& p : problems) {
    std::fprintf(stderr, "sweep ingest: %s\n", p.c_str());
  }
  return problems.empty() ? Exit::ok : Exit::failed;
}

}  // namespace sweep
