// `sweep run --eliminate`'s adapter: its options into config/elimination_check.h's admission, and the
// runner's looks (sched/runner.h: Looks) wired to the report's rule (report/eliminate/live.h), the
// record written to the results folder as it goes. The record itself comes with the plan
// (sched/planning.h reads sweeps/NAME.eliminated). Internal to src/cli.
#pragma once

#include <memory>
#include <utility>

#include "cli/commands.h"
#include "sched/runner.h"
#include "store/store.h"

namespace sweep::commands {

// --looks and --kept declared on `cmd`, each described once with its default (config/elimination.h);
// both returned (to be wired further: needs, a mode's options).
std::pair<CLI::Option*, CLI::Option*> add_elimination_options(CLI::App* cmd, EliminationOptions& o);

// The settings they give, the defaults where one is not given. Throws Error (bad input) naming the
// option where one is no list of numbers; whether the settings can be used is rule_problem's.
EliminationSettings elimination_settings(const EliminationOptions& o);

// The sweep's --eliminate design checked and set for this run (config/elimination_check.h:
// admit_elimination; Error, bad input, when it cannot run); without --eliminate, the stopped runs
// this run trains to the end said. Writes nothing.
void prepare_elimination(const RunOptions& o, SweepSpec& spec);

// The runner's looks of a sweep run --eliminate (null without the flag), its record written to the
// results folder now and after each look (the runner records it in the database).
std::shared_ptr<Looks> elimination_looks(const RunOptions& o, const SweepSpec& spec, Store& store);

}  // namespace sweep::commands
