// `sweep run --eliminate`: its options checked against the sweep before anything is written, the
// results folder's record of it (sweeps/NAME.eliminated) read and kept, and the runner's looks
// (sched/runner.h: Looks) wired to the report's rule (report/eliminate/live.h). Internal to src/cli.
#pragma once

#include <memory>

#include "cli/commands.h"
#include "sched/runner.h"
#include "store/store.h"

namespace sweep::commands {

// The sweep's --eliminate record into its design: the folder's (a sweep run --eliminate before: kept
// by every `sweep run`, so that one without the flag finishes the stopped arms and the report still
// says how they were stopped), or with --eliminate and none yet a new one of the options' settings.
// Throws Error (bad input, the fix named) when --eliminate cannot run on this sweep: with
// --until-decided, no min_effect, fewer than 2 seeds an arm, axes (grid, zip, tune, a ladder), a
// trainer of your own, looks that do not fit the runs' validation points, or settings other than
// the record's. Writes nothing.
void prepare_elimination(const RunOptions& o, SweepSpec& spec);

// The runner's looks of a sweep run --eliminate (null without the flag), its record written to the
// results folder now and after each look (the runner records it in the database).
std::shared_ptr<Looks> elimination_looks(const RunOptions& o, const SweepSpec& spec, Store& store);

}  // namespace sweep::commands
