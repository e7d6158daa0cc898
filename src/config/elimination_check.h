// What --eliminate admits (docs/verdicts.md#eliminate), checked before anything is written: the
// runs whose validation points can carry its looks, the sweeps it can run on, and the options and
// the sweep file beside the results folder's record of it. The record is config/elimination.h, the
// rule report/eliminate/rule.h; `sweep run`'s adapter is cli/run_eliminate.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/elimination.h"
#include "config/sweep_spec.h"

namespace sweep {

// The step at which a run of config `c` pauses for a look at `fraction` of its tokens: its first
// validation point at or after that share of its steps; nullopt when that point is its end (the
// look comes too late to save anything) or it has no validation point but the end (eval.every 0).
std::optional<int64_t> look_step(const RunConfig& c, double fraction);

// Why the looks cannot be read on a run of config `c` ("" when they can): its paired Δ curve needs
// a validation point after step 0 at or before each look's span (its first is at eval.every) and one
// after the look before its end (look_step).
std::string look_problem(const RunConfig& c, const EliminationSettings& settings);

// The run ids of `spec` — of its variant `variant`; "": of every one — sorted, each once.
std::vector<std::string> run_ids_of(const SweepSpec& spec, const std::string& variant = "");

// What `sweep run` asks of --eliminate.
struct EliminationRequest {
  bool eliminate = false;                    // --eliminate
  bool until_decided = false;                // --until-decided
  std::optional<EliminationSettings> asked;  // --looks and --kept (nullopt: neither given)
  std::string record_file;                   // the folder's record of it (sweeps/NAME.eliminated), for refusals
};

// The sweep's --eliminate design as `sweep run` goes on with it, into spec.design.eliminate: the
// record the planning step read (a sweep run --eliminate before: kept by every `sweep run`, so that
// one without the flag finishes the stopped runs and the report still says how they stopped), or
// with --eliminate and none yet a new one of the asked settings. Throws Error (bad input, the fix
// named) when --eliminate cannot run on this sweep: with --until-decided (either way round), no
// min_effect, fewer than 2 seeds an arm, axes (grid, zip, tune, a ladder), branches, a trainer of
// your own, looks that do not fit the runs' validation points, settings other than the record's, or
// a δ or runs other than those its looks judged (the file changed since). Writes nothing.
void admit_elimination(SweepSpec& spec, const EliminationRequest& request);

}  // namespace sweep
