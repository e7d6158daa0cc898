#!/usr/bin/env bash
# Keeps the LibTorch 2.x and CUDA code paths from rotting on machines that only have Debian's
# LibTorch 1.13 (CPU): fetches LibTorch 2.6's headers (Debian trixie, headers only, nothing
# installed system-wide) and type-checks every C++ source against them, once for a CPU build and
# once as a CUDA build (-DUSE_CUDA -DUSE_C10D_NCCL); compiles any CUDA source with nvcc. Run
# after a build (scripts/setup.sh): it reads the generated build/generated/build_options.h.
set -euo pipefail
cd "$(dirname "$0")/.."
headers=build/libtorch2
tools/libtorch2-headers.sh "$headers"

inc=(-Isrc -Ibuild/generated -I"$headers/shim" -I"$headers/usr/include" -I"$headers/usr/include/torch/csrc/api/include")
mapfile -t sources < <(git ls-files 'src/*.cpp' 'kernels/*.cpp' 2>/dev/null || find src -name '*.cpp')
check() {  # $1 = label, rest = extra flags
  local label=$1; shift
  printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} sh -c \
    'g++ -std=c++17 -fsyntax-only -w "$@" {} || { echo "libtorch 2.6 ('"$label"'): {} fails" >&2; exit 255; }' _ "${inc[@]}" "$@"
}
check cpu
cuda=/usr/local/cuda
if [ -d "$cuda/include" ]; then
  check cuda -DUSE_CUDA -DUSE_C10D_NCCL -I"$cuda/include"
  for cu in $(git ls-files 'kernels/*.cu' 'src/*.cu' 2>/dev/null); do
    "$cuda/bin/nvcc" -std=c++17 -arch=sm_90 -c "$cu" -o /dev/null
  done
else
  echo "check-libtorch2: no CUDA toolkit at $cuda — GPU type-check skipped"
fi
echo "check-libtorch2: ${#sources[@]} sources type-check against LibTorch 2.6 (cpu$([ -d "$cuda/include" ] && echo ', cuda'))"
