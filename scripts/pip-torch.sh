#!/usr/bin/env bash
# The PyTorch sweep is built, tested and measured against by default: a virtual environment of
# the project's own (.venv/, from Debian's python3) holding torch from the Python package index at
# the version pinned here — on Linux x86-64 its CUDA build, a few GB, which runs on the CPU too —
# and the CUDA compiler wheels (nvcc, CCCL) that its CMake configure needs, at the CUDA version
# that torch was built with. Idempotent: nothing is downloaded when both are there.
#
#   scripts/pip-torch.sh [VENV]     prints the environment's python on its last line
#
# To move to another PyTorch, change both pins together: cuda_pin is the cuda-toolkit version in
# that torch's requirements (`pip show torch`, or its wheel's METADATA). SWEEP_TORCH_PIN,
# SWEEP_CUDA_PIN and SWEEP_VENV_PYTHON (the interpreter a new environment is made from) set them for
# one call: scripts/torch-build.sh builds against an older PyTorch so, in an environment of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
torch_pin=${SWEEP_TORCH_PIN:-2.15.0}
cuda_pin=${SWEEP_CUDA_PIN:-13.2.2}
venv=${1:-.venv}
die() { echo "pip-torch: $*" >&2; exit 2; }

have() {  # the pinned torch and an nvcc of its CUDA's major.minor are in the environment
  "$venv/bin/python" - "$torch_pin" "${cuda_pin%.*}" 2>/dev/null <<'PY'
import glob, os, subprocess, sys, numpy, torch
nvcc = glob.glob(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), "nvidia", "cu*", "bin", "nvcc"))
ok = torch.__version__.split("+")[0] == sys.argv[1] and nvcc and \
    ("release " + sys.argv[2] + ",") in subprocess.run([nvcc[0], "--version"], capture_output=True, text=True).stdout
sys.exit(0 if ok else 1)
PY
}

if ! have; then
  if [ ! -x "$venv/bin/python" ]; then
    base=${SWEEP_VENV_PYTHON:-/usr/bin/python3}
    [ -x "$base" ] || base=$(command -v python3) || die "no python3 — install Debian's python3 and python3-venv"
    "$base" -m venv "$venv" ||
      die "$base could not make a virtual environment in $venv — install python3-venv (Debian), then run again"
  fi
  echo "pip-torch: installing torch $torch_pin and CUDA $cuda_pin's compiler into $venv (a few GB, once)" >&2
  # nvvm and crt pinned to the compiler's minor version: nvcc's own requirement leaves them open,
  # and a newer cicc writes PTX that this ptxas refuses ("Unsupported .version").
  # numpy: PyTorch wants it beside (its tensors' .numpy(), and the example trainer of your own)
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==$torch_pin" numpy \
    "cuda-toolkit[nvcc,cccl]==$cuda_pin" "nvidia-nvvm==${cuda_pin%.*}.*" "nvidia-cuda-crt==${cuda_pin%.*}.*" >&2 ||
    die "pip could not install torch $torch_pin into $venv (above) — is the Python package index reachable?"
  have || die "$venv holds no torch $torch_pin with CUDA ${cuda_pin%.*}'s nvcc after installing them"
fi
echo "$(cd "$venv" && pwd)/bin/python"
