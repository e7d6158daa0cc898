// Learning-rate schedules, a pure function of the step: constant (after warmup), cosine
// (linear warmup, cosine from lr to min_lr), linear (warmup, then linear to min_lr) and wsd
// (warmup, stable at lr, then a linear decay to min_lr over the last `decay` fraction).
#pragma once

#include <cstdint>

#include "config/run_config.h"

namespace sweep {

// The LR for optimizer step `step` (0-based) of a run of `total` steps.
double learning_rate(const TrainConfig& t, int64_t step, int64_t total, int64_t warmup);

inline double learning_rate(const RunConfig& c, int64_t step) {
  return learning_rate(c.train, step, c.total_steps(), c.warmup_steps());
}

}  // namespace sweep
