#!/usr/bin/env bash
# The GPU kit, in steps that each fit a short GPU window (a lent GPU may be ours for 15 minutes
# in all, 10 a command; docs/guide.md#on-gpus gives each step's expected time on one H100):
#
#   scripts/test-gpu.sh [--deps DIR] [--nanogpt PATH/model.py] [--log DIR] [STEP]...
#
#   build       what the machine has (GPU, driver, nvcc, torch, its CUDA, cuDNN, C++ ABI), then
#               sweep and the GPU tests built against the Python's PyTorch (scripts/setup.sh
#               --torch cuda) into build-gpu/, configure output shown
#   test        the CTest label `gpu` (tests/gpu/), each test stopped after 4 minutes
#   bench       sweep bench --device cuda on the reference config (bf16, tf32), a row per lever of
#               the step (AdamW's path, reads, train.cuda_kernels)
#   bench-full  the reference config and GPT-2 small, beside nanoGPT (torch.compile off and on) with
#               --nanogpt, every lever's row; each row written to the log as it is measured
# Default: build test bench. Each step's output goes to the terminal and to DIR/<step>.log
# (default build-gpu/logs/), so that a step cut off by its window leaves what it printed. With
# --deps DIR, or a .gpu-kit/ folder here, the other dependencies come from the .deb files there
# (scripts/offline-deps.sh), unpacked, not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
deps="" nanogpt="" log="" steps=()
[ -d .gpu-kit ] && compgen -G ".gpu-kit/*.deb" >/dev/null && deps=.gpu-kit
while [ $# -gt 0 ]; do
  case $1 in
    --deps) deps=${2:?--deps needs a folder of .deb files}; shift ;;
    --nanogpt) nanogpt=${2:?--nanogpt needs nanoGPT\'s model.py}; shift ;;
    --log) log=${2:?--log needs a folder}; shift ;;
    build | test | bench | bench-full) steps+=("$1") ;;
    *) echo "test-gpu: unknown argument $1 (--deps DIR, --nanogpt PATH, --log DIR, steps: build test bench bench-full)" >&2
       exit 2 ;;
  esac
  shift
done
[ ${#steps[@]} -gt 0 ] || steps=(build test bench)
py=${PYTHON:-python3}
build=build-gpu
log=${log:-$build/logs}
mkdir -p "$log"
start=$(date +%s)
say() { echo "== [$(( $(date +%s) - start ))s] $*"; }

machine() {
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || echo "nvidia-smi: not found"
  command -v nvcc >/dev/null && nvcc --version | tail -2 || echo "nvcc: not on PATH"
  cmake --version | sed -n 1p; ninja --version | sed 's/^/ninja /'; g++ --version | sed -n 1p
  ldd --version | sed -n 1p; nproc | sed 's/$/ cores/'
  "$py" - <<'PY' || { echo "test-gpu: $py cannot import torch — activate the environment that has PyTorch (or set PYTHON)" >&2; return 2; }
import torch, torch.utils
print("torch", torch.__version__, "| CUDA", torch.version.cuda, "| cuDNN", torch.backends.cudnn.version(),
      "| C++11 ABI", torch._C._GLIBCXX_USE_CXX11_ABI, "| GPUs", torch.cuda.device_count(),
      [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
print("cmake prefix", torch.utils.cmake_prefix_path)
PY
}

step_build() {
  say "the machine"
  machine
  say "build against the Python's LibTorch (scripts/setup.sh --torch cuda${deps:+ --deps $deps})"
  scripts/setup.sh --torch cuda ${deps:+--deps "$deps"} --build-dir "$build" --target sweep --target gpu_tests \
    -DSWEEP_TEST_HOOKS=OFF
  say "what the training core loads (ldd: torch, CUDA, NCCL, cuDNN; the front sweep links none)"
  ldd "$build/sweep-core" | grep -E 'torch|c10|cuda|cublas|nccl|cudnn|dnnl|gomp' || true
  local devices
  devices=$("$build/sweep" devices) && echo "$devices"
  grep -q '^cuda:0:' <<< "$devices" ||
    { echo "test-gpu: sweep sees no CUDA device (above): the GPU tests would only be skipped" >&2; return 1; }
}

step_test() {
  say "the GPU tests (ctest -L gpu, 4 minutes a test at most)"
  (cd "$build" && ctest -L gpu --output-on-failure --timeout 240)
}

step_bench() {
  say "the GPU bench: the reference config (sweep bench --device cuda --model reference)"
  "$build/sweep" bench --device cuda --model reference
}

step_bench_full() {
  say "the GPU bench: the reference config and GPT-2 small${nanogpt:+, beside nanoGPT ($nanogpt; torch.compile off and on)}"
  "$build/sweep" bench --device cuda --model reference --model gpt2-small ${nanogpt:+--nanogpt "$nanogpt" --python "$py"}
}

rc=0
for s in "${steps[@]}"; do
  # each step's output to its log too; a failed build ends the kit, a failed test or bench does not
  set +e
  ( set -eo pipefail; "step_${s//-/_}" ) 2>&1 | tee "$log/$s.log"
  step_rc=${PIPESTATUS[0]}
  set -e
  say "$s: exit $step_rc"
  [ "$step_rc" -eq 0 ] || rc=$step_rc
  [ "$s" = build ] && [ "$step_rc" -ne 0 ] && exit "$step_rc"
done
exit "$rc"
