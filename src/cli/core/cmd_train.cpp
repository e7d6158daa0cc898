// `sweep train` / `sweep worker` in the core: the run's config read with its overrides, then the
// built-in worker (train/worker.h), or the host of a trainer of the user's when the config names one.
#include "cli/core/commands.h"
#include "train/worker.h"

namespace sweep {

Exit run_train(const TrainOptions& o) {
  RunConfig cfg = load_train_config(o);
  if (cfg.trainer) {  // a user's own program trains this run: hosted, not trained here
    return host_own_trainer(o, cfg);
  }
  return run_worker(std::move(cfg), {.config = o.config,
                                     .sets = sets_of(o),
                                     .run_dir = o.run_dir,
                                     .data_dir = o.data_dir,
                                     .resume = o.resume,
                                     .events = o.events,
                                     .pause_at = o.pause_at});
}

}  // namespace sweep
