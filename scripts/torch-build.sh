#!/usr/bin/env bash
# Builds sweep's CUDA build against another PyTorch than the pinned one, in a throwaway environment —
# the GPU machines' own (PyTorch 2.11.0+cu130 under Python 3.12) proven here before a GPU window is
# spent on it. Too heavy for CI (a few GB of wheels, a whole build): run by hand, its output in a note.
#
#   scripts/torch-build.sh [--torch 2.11.0] [--cuda 13.0.2] [--python PATH] [--venv DIR] [--build-dir DIR]
#
# --cuda: the cuda-toolkit version in that torch's requirements (`pip show torch`); --python: the
# interpreter the environment is made from (default python3.12 on PATH, else pyenv's 3.12). Then
# configures (scripts/setup.sh --torch cuda: CUDA and NCCL must be ON), builds sweep, its core and the
# unit and GPU tests, and runs what a CPU can of them on that LibTorch: `sweep devices`, a tiny training
# run, and the unit tests of the training core's equivalences. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
torch=2.11.0 cuda=13.0.2 python="" venv="" build=""
while [ $# -gt 0 ]; do
  case $1 in
    --torch) torch=${2:?}; shift ;;
    --cuda) cuda=${2:?}; shift ;;
    --python) python=${2:?}; shift ;;
    --venv) venv=${2:?}; shift ;;
    --build-dir) build=${2:?}; shift ;;
    *) echo "torch-build: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$python" ]; then  # the first Python 3.12 that runs (a pyenv shim may name one it will not run)
  for candidate in $(command -v python3.12 || true) "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
    "$candidate" --version > /dev/null 2>&1 && python=$candidate && break
  done
fi
[ -n "$python" ] && "$python" --version > /dev/null 2>&1 ||
  { echo "torch-build: no Python 3.12 here — give one with --python" >&2; exit 2; }
venv=${venv:-/tmp/sweep-torch-$torch}
build=${build:-build-torch-$torch}
start=$(date +%s)
say() { echo "== [$(( $(date +%s) - start ))s] $*"; }
say "PyTorch $torch (CUDA $cuda's compiler) in $venv, from $("$python" --version 2>&1)"
py=$(SWEEP_TORCH_PIN=$torch SWEEP_CUDA_PIN=$cuda SWEEP_VENV_PYTHON=$python scripts/pip-torch.sh "$venv" | tail -1)
"$py" -c 'import torch; print("torch", torch.__version__, "| CUDA", torch.version.cuda, "| cuDNN", torch.backends.cudnn.version())'
say "configure and build into $build/ (scripts/setup.sh --torch cuda)"
PYTHON=$py scripts/setup.sh --torch cuda --build-dir "$build" --target sweep --target unit_tests --target gpu_tests \
  -DSWEEP_TEST_HOOKS=ON
grep '^-- sweep:' "$build/configure.log"
grep -q '^-- sweep: .*CUDA: ON.*NCCL: ON' "$build/configure.log" || { echo "torch-build: no CUDA or no NCCL" >&2; exit 1; }
say "what runs on the CPU of that build"
"$build/sweep" devices
"$build/unit_tests" -tc='*accumulation*,*resume*,*checkpoint*' | tail -3
say "torch-build: PyTorch $torch: configured, built and linked; $(du -sh "$build" | cut -f1) in $build/"
