#!/usr/bin/env bash
# Quick start, the tests: install and build against PyTorch from the Python package index (its
# CUDA build, with CUDA and NCCL on: the GPU code must compile and link, and the CPU suite runs on
# that binary), run the whole CTest suite (unit + integration; the GPU tests skip without a GPU);
# then build the front alone without PyTorch (build-front: scripts/setup.sh --torch none, which
# proves that no library of the front includes LibTorch) and run its own suite on it; fail when a
# build printed a warning (the project builds warning-free with -Wall -Wextra).
set -euo pipefail
cd "$(dirname "$0")/.."
build_log=$(mktemp)
trap 'rm -f "$build_log"' EXIT
scripts/setup.sh --test -DSWEEP_TEST_HOOKS=ON 2>&1 | tee "$build_log"
grep -q '^-- sweep: .*CUDA: ON.*NCCL: ON' build/configure.log ||
  { echo "test: the build has no CUDA or no NCCL ($(grep '^-- sweep:' build/configure.log)): the GPU code was not compiled" >&2; exit 1; }
(cd build && ctest --output-on-failure --timeout 600 -j2)
scripts/setup.sh --torch none --build-dir build-front --test -DSWEEP_TEST_HOOKS=ON 2>&1 | tee -a "$build_log"
(cd build-front && ctest --output-on-failure --timeout 600 -j2)
# What this build compiled (all of it on a clean clone, as CI builds) printed no warning.
if grep -n "warning:" "$build_log"; then
  echo "test: the build printed the warnings above; fix them (third-party headers: silence them at their include)" >&2
  exit 1
fi
