// doctest runner for the unit tests; LibTorch runs on one thread so results are reproducible.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <torch/torch.h>

#include "doctest_runner.h"

REGISTER_LISTENER("counting", 1, sweep::test::CountingListener);

int main(int argc, char** argv) {
  sweep::test::flight_recorder_off();
  at::set_num_threads(1);
  doctest::Context context(argc, argv);
  return sweep::test::run_test_cases(context, "unit_tests");
}
