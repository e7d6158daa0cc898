// A user's own training program (`trainer:` in a sweep file): the command that trains one run,
// the files whose contents are part of every run's identity, and the keys of its config, each
// with a type and a default — so that a typo in an intervention is a file:line:col error before
// anything runs, exactly as for the built-in keys. A run of such a trainer is a RunConfig whose
// `trainer` is set: its `values` (the trainer's resolved keys) stand for model/data/train/eval.
// Nothing here runs anything (src/trainer_host hosts the program).
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/trainer_output.h"
#include "config/yaml_reader.h"

namespace sweep {

// One declared key of a trainer's config.
struct TrainerKey {
  std::string name;               // dotted: model.dropout
  KeyType type = KeyType::string;
  nlohmann::json fallback;        // its default, resolved (null: required — base or an intervention sets it)
  std::vector<std::string> choices;  // choice
  std::optional<double> min, max;    // int, float, size
  Origin at;                         // where it is declared
};

// A trainer of your own (a program the sweep file names instead of sweep's core): what a run's
// config says about it (and config.yaml's `trainer:` section).
struct OwnTrainer {
  std::string name;                  // shown in reports and `sweep status` ("own-trainer")
  std::vector<std::string> command;  // argv with {placeholders}, as written
  std::string dir;                   // where it runs and its files are found: the sweep file's folder (not identity)
  std::map<std::string, std::string> files;  // declared file (as written, relative to dir) -> SHA-256 of its contents
  std::optional<OutputRules> output;         // trainer.output: its own lines are read (it prints no events)
  std::vector<std::string> resume_args;      // trainer.resume_args: added to the command when a run resumes
  double stop_grace = 30;  // trainer.stop_grace: seconds from a stop signal to SIGKILL (not identity)
  // trainer.env: each probe (its command, as written) -> what it printed when the sweep was planned
  // (the interpreter's and PyTorch's versions, say): part of every run id
  std::map<std::string, std::string> env;
  // The version of the trainer that trains a run: the first 12 hex digits of SHA-256 over the
  // command and the files' hashes. Shown where the built-in core shows its commit.
  std::string version() const;
  nlohmann::json to_json(bool identity) const;  // identity: without name and dir
};

// The placeholders a trainer's command may hold; each is replaced by the run's value. A declared
// key is a placeholder too: {train.lr} is the run's value of train.lr.
inline const std::vector<std::string> k_trainer_placeholders{"config", "config_json", "run_dir", "checkpoint_dir",
                                                             "init_seed", "data_seed"};

// A saved sweep's trainer as `sweep run` planned it (sweeps/NAME.trainer in a results folder): the
// folder its command and files are relative to, and each declared file's SHA-256 then. Read with
// it, a saved sweep plans the run ids it trained under, whatever its files hold now and wherever
// they are (an archive restored on another machine): nothing of the trainer is read from disk.
// Without hashes (a folder saved before they were kept) its files are hashed in `dir`.
struct TrainerRecord {
  std::string name;  // as it was named (by default the original sweep file's stem); "": as the file names it
  std::string dir;
  std::map<std::string, std::string> files;  // declared file -> SHA-256, as OwnTrainer::files
  std::map<std::string, std::string> env;    // each trainer.env probe -> its output then (none: probed again)
};

struct TrainerSpec {
  OwnTrainer trainer;
  std::vector<TrainerKey> keys;  // in declaration order
  double stall_timeout = -1;     // trainer.stall_timeout (seconds; -1: resources.stall_timeout)
};

// Reads a sweep file's `trainer:` (file: the sweep file, whose folder the command and files are
// relative to). Checks the command exists and is executable, every placeholder is known, every
// file exists (and hashes it), and every key is well declared; problems go to `diags`.
// `record`: a saved copy of the sweep file's trainer, as it was planned (its folder and files' hashes).
TrainerSpec read_trainer(const YAML::Node& node, const std::string& file, Diagnostics& diags,
                         const TrainerRecord* record = nullptr);

// The trainer's config from a tree of dotted keys (base with overrides applied): each key
// checked against its declaration (unknown keys with "did you mean", wrong types, out of range,
// a required key missing), defaults filled in. `origins` locates overrides. Throws InputErrors.
nlohmann::json resolve_trainer_values(const YAML::Node& tree, const TrainerSpec& spec, const std::string& file,
                                      const std::map<std::string, Origin>& origins);

// `text` with its {placeholders} replaced by `values` ({{ and }} are literal braces); a name
// `values` lacks, or an unclosed {, is kept as written and, with `unknown`, listed there.
std::string fill_placeholders(const std::string& text, const std::map<std::string, std::string>& values,
                              std::vector<std::string>* unknown = nullptr);

// A trainer's program: by its path from `dir` (an executable file), or a name found on PATH.
std::optional<std::string> find_trainer_program(const std::string& program, const std::string& dir);

}  // namespace sweep
