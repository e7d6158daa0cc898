// `sweep bench --nproc N`: the memory and speed of each ZeRO stage, one process a rank (the
// tensor memory counted per process, so per rank), ranks meeting over Gloo on loopback.
#pragma once

#include <ostream>

#include "config/run_config.h"

namespace sweep {

// One rank: joins the ranks of this process's environment (RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT), trains `config` (its parallel.zero, precision and path as given) for `warmup`
// then `steps` steps on synthetic tokens, and writes one line: the tensor memory held between
// steps and the peak a step adds, measured and planned, and the median step time.
void bench_rank(const RunConfig& config, int64_t steps, int64_t warmup, std::ostream& out);

}  // namespace sweep
