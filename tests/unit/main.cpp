// doctest runner for the unit tests; LibTorch runs on one thread so results are reproducible.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <torch/torch.h>

int main(int argc, char** argv) {
  at::set_num_threads(1);
  doctest::Context context(argc, argv);
  return context.run();
}
