#include "bench/ranks.h"

#include <algorithm>
#include <cstdio>

#include "bench/bench.h"
#include "bench/tensor_memory.h"
#include "parallel/parallel.h"
#include "memory_plan/memory.h"
#include "train/trainer.h"

namespace sweep {

void bench_rank(const RunConfig& config, int64_t steps, int64_t warmup, std::ostream& out) {
  const DistEnv env = dist_env();
  const auto data = bench_data(config);
  RunConfig c = config;
  c.model.vocab_size = data->vocab_size;
  c.resources.ranks = env.world;
  const std::unique_ptr<Communicator> comm = connect(env, torch::kCPU, Backend::gloo, std::chrono::minutes(5));
  auto counting = std::make_unique<CountingAllocator>();
  Trainer trainer(c, data, comm.get());
  for (int64_t i = 0; i < std::max<int64_t>(warmup, 1); ++i) {
    trainer.train_step();  // one at least: the gradients and AdamW's moments exist after it
  }
  const double held = counting->live_mib();
  counting->restart();
  std::vector<double> times;
  for (int64_t i = 0; i < steps; ++i) {
    times.push_back(trainer.train_step().seconds);
  }
  const double step = counting->peak_mib();
  counting.reset();
  std::sort(times.begin(), times.end());
  const MemoryPlan plan =
      plan_memory(c, Layout{env.world, c.parallel.zero, c.parallel.expert, 0}, step_path_here(c));
  const double mib = 1 << 20;
  char line[300];
  std::snprintf(line, sizeof line,
                "ZeRO-%lld%s rank %lld/%lld: held %8.1f MiB (plan %8.1f), a step adds %8.1f MiB (plan %8.1f), peak %8.1f MiB "
                "(plan %8.1f, %+.0f%%), step %7.1f ms\n",
                static_cast<long long>(c.parallel.zero), c.parallel.expert > 1 ? " + experts" : "",
                static_cast<long long>(env.rank),
                static_cast<long long>(env.world), held, plan.persistent() / mib, step, plan.step() / mib, held + step,
                plan.total() / mib, 100.0 * (plan.total() / mib / (held + step) - 1), 1e3 * times[times.size() / 2]);
  out << line << std::flush;
}

}  // namespace sweep
