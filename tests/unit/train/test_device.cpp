// Devices: what this build reports, and a device nobody can use refused with the fix named.
#include <doctest/doctest.h>

#include "helpers.h"
#include "train/device.h"

using namespace sweep;

TEST_CASE("check_device: cpu always, cuda without a CUDA build or beyond the visible GPUs a bad-input error") {
  CHECK_NOTHROW(check_device("cpu", "run.yaml: resources.device"));
  const BuildDevices b = build_devices();
  CHECK(b.libtorch.rfind(std::to_string(TORCH_VERSION_MAJOR) + ".", 0) == 0);
  CHECK(static_cast<int64_t>(b.cuda.size()) == cuda_device_count());
  if (!b.cuda_built) {
    CHECK(cuda_device_count() == 0);
    const std::string m = test::bad_input_message([] { check_device("cuda:0", "run.yaml: resources.device cuda:0"); });
    CHECK(m.find("run.yaml: resources.device cuda:0: this sweep was built against a LibTorch without CUDA") == 0);
    CHECK(m.find("scripts/setup.sh --torch python") != std::string::npos);
    CHECK(test::bad_input_message([] { check_device("cuda", "x"); }) ==
          test::bad_input_message([] { check_device("cuda:0", "x"); }));
  } else {
    const std::string m = test::bad_input_message([] { check_device("cuda:99", "--devices cuda:99"); });
    CHECK(m.find("--devices cuda:99: ") == 0);
    CHECK(m.find(b.cuda.empty() ? "no CUDA device is visible" : "name one of them") != std::string::npos);
  }
}
