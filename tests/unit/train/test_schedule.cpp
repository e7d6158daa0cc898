#include <doctest/doctest.h>

#include "train/schedule.h"

using namespace sweep;

namespace {

TrainConfig schedule(Schedule name) {
  TrainConfig t;
  t.lr = 1e-3;
  t.min_lr = 1e-4;
  t.schedule = name;
  t.decay = 0.2;
  return t;
}

// total 111 steps, warmup 10: the decay runs over steps 10..110, so step 60 is its middle.
double lr(Schedule name, int64_t step) { return learning_rate(schedule(name), step, 111, 10); }

}  // namespace

TEST_CASE("warmup is linear from lr/warmup to lr, for every schedule") {
  for (const Schedule name : {Schedule::constant, Schedule::cosine, Schedule::linear, Schedule::wsd}) {
    CAPTURE(name);
    CHECK(lr(name, 0) == doctest::Approx(1e-4));
    CHECK(lr(name, 4) == doctest::Approx(5e-4));
    CHECK(lr(name, 9) == doctest::Approx(1e-3));
    CHECK(lr(name, 10) == doctest::Approx(1e-3));
  }
}

TEST_CASE("constant stays at lr") {
  CHECK(lr(Schedule::constant, 60) == doctest::Approx(1e-3));
  CHECK(lr(Schedule::constant, 110) == doctest::Approx(1e-3));
}

TEST_CASE("cosine: halfway at mid-decay, min_lr at the last step") {
  CHECK(lr(Schedule::cosine, 60) == doctest::Approx(5.5e-4));
  CHECK(lr(Schedule::cosine, 35) == doctest::Approx(1e-4 + 0.5 * (1 + std::cos(M_PI * 0.25)) * 9e-4));
  CHECK(lr(Schedule::cosine, 110) == doctest::Approx(1e-4));
}

TEST_CASE("linear: halfway at mid-decay, min_lr at the last step") {
  CHECK(lr(Schedule::linear, 60) == doctest::Approx(5.5e-4));
  CHECK(lr(Schedule::linear, 110) == doctest::Approx(1e-4));
}

TEST_CASE("wsd: stable until the last 20% of steps, then linear to min_lr") {
  // decay steps = round(0.2 · 111) = 22, starting at step 89
  CHECK(lr(Schedule::wsd, 60) == doctest::Approx(1e-3));
  CHECK(lr(Schedule::wsd, 89) == doctest::Approx(1e-3));
  CHECK(lr(Schedule::wsd, 99) == doctest::Approx(1e-3 + (10.0 / 21.0) * (1e-4 - 1e-3)));
  CHECK(lr(Schedule::wsd, 110) == doctest::Approx(1e-4));
}

TEST_CASE("warmup as a fraction of the steps or as a step count") {
  RunConfig c;
  c.train.tokens = 1000 * c.tokens_per_step();
  c.train.warmup = 0.05;
  CHECK(c.warmup_steps() == 50);
  c.train.warmup = 30;
  CHECK(c.warmup_steps() == 30);
  c.train.warmup = 0;
  CHECK(learning_rate(c, 0) == doctest::Approx(c.train.lr));
}
