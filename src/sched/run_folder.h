// A run folder checked against its name before it is trusted: a folder's name (runs/ID) is its run
// id, and what it holds must be that run's — `sweep ingest` skips a folder that is not, and `sweep
// run` starts no worker in one. Never a result taken for another run's (two folders' events.jsonl
// swapped, a config.yaml edited after the run).
#pragma once

#include <filesystem>
#include <string>

#include "config/run_config.h"

namespace sweep {

// "" when the folder `dir` is the run its name says; else why not, in words:
//   - its config.yaml loads and hashes to its name (RunConfig::identity_json, at one of the repeats
//     a sweep file allows, under the numerics version of the core that trained it, as its start
//     events say);
//   - each start event of its events.jsonl is of that config: the identity the worker stamps on
//     it (a worker of this version or later), and for sweep's own core its total_steps and
//     tokens_per_step.
// `loaded`: the config it read, when the folder is the run's.
std::string run_folder_problem(const std::filesystem::path& dir, RunConfig* loaded = nullptr);

// The run folder holds a checkpoint of its own to resume from (checkpoint/ckpt.pt, or the one it
// replaced: a save cut between its renames); for a trainer of your own (`own`), any file in
// checkpoint/ — what the host resumes from.
bool holds_checkpoint(const std::filesystem::path& dir, bool own = false);

}  // namespace sweep
