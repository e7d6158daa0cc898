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

inc=(-Isrc -I. -Itests/unit -Ibuild/generated -I"$headers/shim" -I"$headers/usr/include" -I"$headers/usr/include/torch/csrc/api/include")
# The CPU kernels built once per instruction set (CMakeLists.txt's sweep_kernels_<ISA>).
per_isa=(kernels/cpu/ops.cpp kernels/cpu/attention.cpp)
# Every other source of the libraries, the binary and the GPU tests (new files too, before they are committed).
mapfile -t sources < <(git ls-files --cached --others --exclude-standard 'src/*.cpp' 'kernels/*.cpp' 'tests/gpu/*.cpp' \
    "${per_isa[@]/#/:!}" 2>/dev/null || find src kernels tests/gpu -name '*.cpp' ! -path kernels/cpu/ops.cpp ! -path kernels/cpu/attention.cpp)
check() {  # $1 = label, rest = extra flags
  local label=$1; shift
  printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} sh -c \
    'g++ -std=c++17 -fsyntax-only -w "$@" {} || { echo "libtorch 2.6 ('"$label"'): {} fails" >&2; exit 255; }' _ "${inc[@]}" "$@"
}
check cpu
# The CPU kernels are built once per instruction set, as CMakeLists.txt does.
for isa in "AVX2 -mavx2 -mfma -mf16c" "AVX512 -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c"; do
  set -- $isa
  for src in "${per_isa[@]}"; do
    g++ -std=c++17 -fsyntax-only -w -fopenmp "${inc[@]}" -I. -DCPU_CAPABILITY="$1" -DCPU_CAPABILITY_"$1" "${@:2}" \
      "$src" || { echo "libtorch 2.6 (cpu, $1): $src fails" >&2; exit 1; }
  done
done
cuda=/usr/local/cuda
if [ -d "$cuda/include" ]; then
  # as CMake configures a build against a CUDA LibTorch (build_options.h: SWEEP_WITH_CUDA, SWEEP_WITH_NCCL)
  check cuda -DUSE_CUDA -DUSE_C10D_NCCL -DSWEEP_WITH_CUDA -DSWEEP_WITH_NCCL -I"$cuda/include"
  for cu in $(git ls-files --cached --others --exclude-standard 'kernels/*.cu' 'src/*.cu' 2>/dev/null); do
    "$cuda/bin/nvcc" -std=c++17 -arch=sm_90 -c "$cu" -o /dev/null
  done
else
  echo "check-libtorch2: no CUDA toolkit at $cuda — GPU type-check skipped"
fi
echo "check-libtorch2: $(( ${#sources[@]} + ${#per_isa[@]} )) sources type-check against LibTorch 2.6 (cpu$([ -d "$cuda/include" ] && echo ', cuda'))"
