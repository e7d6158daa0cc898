#!/usr/bin/env bash
# Quick start, the tests: install and build, run the whole CTest suite (unit + integration),
# then type-check every source against LibTorch 2.6's headers (GPU paths included).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test -DSWEEP_TEST_HOOKS=ON
(cd build && ctest --output-on-failure --timeout 600 -j2)
scripts/check-libtorch2.sh
