// One planning step: a sweep file, the devices it will run on and what its results folder already
// records (its seed design, the seeds its rounds added, the kind of device it trained on, the runs
// --eliminate stopped) turned into the final list of runs with their ids. `sweep run`, `plan`,
// `check` and `ingest` all call plan_sweep (and `status` reads what it recorded); nothing after it
// changes a run's id, and no name in the file moves a recorded decision to other runs.
//
// The device rule (docs/guide.md#on-gpus): a file that states `resources.device` trains on that
// kind — without --devices on every GPU visible here (cuda: one slot each; cuda:N: that one) or
// on the CPU; --devices (or Slurm's --gpus-per-rank) of the other kind is refused, never followed.
// A file that states none trains where its slots are (--devices, default cpu — refused where the
// folder recorded the sweep's runs on cuda: --devices says which). `sweep ingest` takes the kind
// the folder recorded (sweeps/NAME.device).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/load_sweep.h"
#include "store/results_folder.h"
#include "store/store.h"

namespace sweep {

struct DeviceRequest {
  std::string devices;     // --devices as given; "" = not given
  bool slurm = false;      // --executor slurm
  int gpus_per_rank = 0;   // Slurm: --gpus-per-rank
  std::string recorded;    // ingest: the kind the results folder recorded for the sweep ("" = none)
  // run, plan: the kind the results folder recorded for the named sweep's runs so far ("" = none).
  // Its runs are never left behind unsaid: a file that states another kind is refused, and so is
  // a file that states none run without --devices (or --gpus-per-rank) of the other kind.
  std::function<std::string(const std::string& sweep)> trained_on;
  // The GPUs visible here for `spec`'s runs, asked only where the rule needs them (default: the
  // driver's count within CUDA_VISIBLE_DEVICES, sched/slots.h).
  std::function<int(const SweepSpec& spec)> count_gpus;
  bool check_here = true;  // the GPUs must be here (run, check); `sweep plan` only names the kind
};

struct Placement {
  std::string kind;        // "cpu" or "cuda": every run's, part of its id
  std::string devices;     // local: the slots (--devices, or from the file's device)
  int gpus_per_rank = 0;   // Slurm
  std::string note;        // how the slots followed from the file, when they did ("" otherwise)
};

// Where a sweep's runs train, by the rule above. Throws Error (bad input, naming the file's line
// and the fix) when the request contradicts the file or the GPUs it asks for are not here.
Placement place_runs(const SweepSpec& spec, const DeviceRequest& request);


struct PlanRequest {
  std::string file;                          // the sweep file
  VocabLookup vocab;                         // its datasets' vocabularies (config/load_sweep.h)
  size_t max_variants = k_default_max_variants;
  std::optional<TrainerRecord> trainer;      // a saved copy's trainer as it ran (ingest: read_saved_trainer)
  DeviceRequest devices;
  // What the folder records: its database (run, plan, check: the design --until-decided judged by
  // and the seeds its rounds added), or — rebuilding that database — the saved rounds (ingest).
  Store* store = nullptr;
  std::optional<RecordedRounds> saved_rounds;
  bool until_decided = false;
  int64_t max_seeds = 0;                     // --max-seeds (0: not given)
  // The results folder whose --eliminate record of the sweep (sweeps/NAME.eliminated, its stops by
  // run id) the plan carries in spec.design.eliminate; "": none read (an A/A check is a sweep of its own).
  std::string results;
  // ingest: a record that cannot be read is said in SweepPlan::problems and the sweep planned without
  // it; otherwise it is an Error naming the file.
  bool lenient_records = false;
};

struct SweepPlan {
  SweepSpec spec;  // its runs final, ids and all; its design with the folder's --eliminate record
  Placement placement;
  std::vector<std::string> problems{};  // lenient_records: the records not read, and why
};

SweepPlan plan_sweep(const PlanRequest& request);

}  // namespace sweep
