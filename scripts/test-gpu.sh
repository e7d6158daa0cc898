#!/usr/bin/env bash
# The GPU tests in one command, on a machine with a CUDA GPU and a Python PyTorch with CUDA:
# prints what the machine has, builds sweep against that PyTorch's LibTorch into build-gpu/
# (scripts/setup.sh --torch cuda; with --deps DIR, or a .gpu-kit/ folder here, the other
# dependencies come from the .deb files there, unpacked, not installed), runs the CTest label
# `gpu` (tests/gpu/), then the GPU bench (sweep bench --device cuda; beside nanoGPT with
# --nanogpt PATH/model.py). Its output is what a closing note pastes.
#
#   scripts/test-gpu.sh [--deps DIR] [--nanogpt PATH/model.py] [--no-bench]
set -euo pipefail
cd "$(dirname "$0")/.."
deps="" nanogpt="" bench=true
[ -d .gpu-kit ] && deps=.gpu-kit
while [ $# -gt 0 ]; do
  case $1 in
    --deps) deps=${2:?--deps needs a folder of .deb files}; shift ;;
    --nanogpt) nanogpt=${2:?--nanogpt needs nanoGPT\'s model.py}; shift ;;
    --no-bench) bench=false ;;
    *) echo "test-gpu: unknown argument $1 (--deps DIR, --nanogpt PATH, --no-bench)" >&2; exit 2 ;;
  esac
  shift
done
py=${PYTHON:-python3}
build=build-gpu
start=$(date +%s)
step() { echo "== [$(( $(date +%s) - start ))s] $*"; }

step "the machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || echo "nvidia-smi: not found"
command -v nvcc >/dev/null && nvcc --version | tail -2 || echo "nvcc: not on PATH"
cmake --version | sed -n 1p; ninja --version | sed 's/^/ninja /'; g++ --version | sed -n 1p
ldd --version | sed -n 1p
"$py" - <<'PY' || { echo "test-gpu: $py cannot import torch — activate the environment that has PyTorch (or set PYTHON)" >&2; exit 2; }
import os, torch, torch.utils
print("torch", torch.__version__, "| CUDA", torch.version.cuda, "| cuDNN", torch.backends.cudnn.version(),
      "| C++11 ABI", torch._C._GLIBCXX_USE_CXX11_ABI, "| GPUs", torch.cuda.device_count(),
      [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
prefix = torch.utils.cmake_prefix_path
print("cmake prefix", prefix)
inc = os.path.join(os.path.dirname(os.path.dirname(prefix)), "include")
print("headers shipped with torch:", {d: os.path.isdir(os.path.join(inc, d)) for d in ("gloo", "fmt", "nlohmann")})
PY

step "build against the Python's LibTorch (scripts/setup.sh --torch cuda${deps:+ --deps $deps})"
scripts/setup.sh --torch cuda ${deps:+--deps "$deps"} --build-dir "$build" --target sweep --target gpu_tests \
  -DSWEEP_TEST_HOOKS=OFF
devices=$("$build/sweep" devices) && echo "$devices"
grep -q '^cuda:0:' <<< "$devices" ||
  { echo "test-gpu: sweep sees no CUDA device (above): the GPU tests would only be skipped" >&2; exit 1; }

step "the GPU tests (ctest -L gpu)"
rc=0
(cd "$build" && ctest -L gpu --output-on-failure --timeout 1800) || rc=$?

if $bench; then
  step "the GPU bench (sweep bench --device cuda${nanogpt:+ --nanogpt $nanogpt})"
  "$build/sweep" bench --device cuda ${nanogpt:+--nanogpt "$nanogpt" --python "$py"} || rc=$?
fi
step "done: exit $rc"
exit "$rc"
