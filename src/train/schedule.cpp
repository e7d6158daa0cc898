#include "train/schedule.h"

#include <algorithm>
#include <cmath>

namespace sweep {

double learning_rate(const TrainConfig& t, int64_t step, int64_t total, int64_t warmup) {
  // Linear warmup from lr/warmup to lr over the first `warmup` steps (step 0 already trains).
  if (step < warmup) {
    return t.lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  }
  if (t.schedule == Schedule::constant) {
    return t.lr;
  }
  const int64_t last = std::max<int64_t>(total - 1, 1);
  if (t.schedule == Schedule::wsd) {
    const int64_t decay_steps = static_cast<int64_t>(std::llround(t.decay * static_cast<double>(total)));
    const int64_t decay_start = std::max(warmup, total - decay_steps);
    if (step < decay_start || decay_steps == 0) {
      return t.lr;
    }
    double frac = static_cast<double>(step - decay_start) / static_cast<double>(std::max<int64_t>(last - decay_start, 1));
    return t.lr + std::min(frac, 1.0) * (t.min_lr - t.lr);
  }
  // cosine and linear: progress 0 at the end of warmup, 1 at the last step.
  double progress = static_cast<double>(step - warmup) / static_cast<double>(std::max<int64_t>(last - warmup, 1));
  progress = std::clamp(progress, 0.0, 1.0);
  if (t.schedule == Schedule::cosine) {
    return t.min_lr + 0.5 * (1.0 + std::cos(M_PI * progress)) * (t.lr - t.min_lr);
  }
  return t.lr + progress * (t.min_lr - t.lr);  // linear
}

}  // namespace sweep
