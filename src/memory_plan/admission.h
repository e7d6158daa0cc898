// Memory admission, for `sweep plan` and `sweep run`: every run's memory plan (memory.h) under its
// layout, set against resources.device_memory.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "config/sweep_spec.h"
#include "memory_plan/memory.h"

namespace sweep {

// The memory plan of a run of sweep's core under its layout (resources.ranks, replicated).
MemoryPlan run_memory(const RunConfig& c);

// What the plan says of the run that needs the most memory per device (with
// resources.device_memory: the one most over it), whether it fits, and which layouts would —
// leaving 10% of the device to what the plan does not count. `done`: runs already finished,
// which need no memory any more.
struct MemoryCheck {
  std::vector<std::string> lines;    // the breakdown, the verdict, the layouts that fit
  std::vector<std::string> too_big;  // "variant seed 1/1: 253.1 GiB" for each run to train that does not fit
};

MemoryCheck check_memory(const SweepSpec& spec, bool items, const std::set<std::string>& done = {});

// `sweep run`: refused (bad input, naming the runs, the plan and the keys that fix it) when a run
// still to train — not among `done`, the runs the results folder holds finished — needs more
// memory per device than its resources.device_memory.
void refuse_over_memory(const SweepSpec& spec, const std::set<std::string>& done);

}  // namespace sweep
