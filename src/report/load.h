// Reads what a report needs from the results database: a sweep's variants, their runs, the
// chosen metric and the validation curves.
#pragma once

#include <string>
#include <vector>

#include "report/input.h"
#include "store/store.h"

namespace sweep {

// The sweep's runs with `metric` as each finished run's value. noise_from: "" or a sweep whose
// baseline's runs give σ. An unknown sweep is bad input. previous: an earlier load of
// the same sweep and metric (sweep serve's, as runs finish) whose finished runs, where their
// record is unchanged, are moved into this one instead of read again — a done run's curves never
// change.
ReportInput load_report_input(Store& store, const std::string& sweep, const Metric& metric,
                              const std::string& noise_from, ReportInput* previous = nullptr);

// --until-decided, between rounds: the runs that give the interventions still undecided on
// test_loss (and the baseline) their next seeds, as the report's own analysis of the sweep's runs
// so far decides (next_round); `why` says what it decided. None when every one is decided or capped.
std::vector<PlannedRun> next_seed_round(Store& store, const SweepSpec& current, std::string& why);

// --eliminate, once every run left is at the look to come (report/eliminate/live.h): the look taken
// on the sweep's runs so far, on the validation loss — `current`'s design one look further, the
// arms it stopped added —; the line that says what it decided.
std::string take_elimination_look(Store& store, SweepSpec& current);

}  // namespace sweep
