#!/usr/bin/env bash
# Quick start, the tests: install and build, run the whole CTest suite (unit + integration),
# type-check every source against LibTorch 2.6's headers (GPU paths included), and fail when the
# build printed a warning (the project builds warning-free with -Wall -Wextra).
set -euo pipefail
cd "$(dirname "$0")/.."
build_log=$(mktemp)
trap 'rm -f "$build_log"' EXIT
scripts/setup.sh --test -DSWEEP_TEST_HOOKS=ON 2>&1 | tee "$build_log"
(cd build && ctest --output-on-failure --timeout 600 -j2)
scripts/check-libtorch2.sh
# What this build compiled (all of it on a clean clone, as CI builds) printed no warning.
if grep -n "warning:" "$build_log"; then
  echo "test: the build printed the warnings above; fix them (third-party headers: silence them at their include)" >&2
  exit 1
fi
