#!/usr/bin/env bash
# scripts/setup.sh's bad input: an unknown --torch, a Python that is not there, one without torch,
# a torch older than the oldest supported, a torch without CUDA asked for CUDA, a torch without
# its C++ files, a CUDA torch with no CUDA toolkit to be found, a compiler without C++20, a --deps
# folder without .deb files — each one line naming the fix, exit 2, before anything is built
# (and, for another Python's torch, before anything is installed).
setup=$(cd "$(dirname "$0")/../.." && pwd)/scripts/setup.sh  # before lib.bash changes directory
source "$(dirname "$0")/lib.bash"
expect_setup() {  # expect_setup MESSAGE ARGS... (env in front as usual)
  local want=$1; shift
  set +e; "$@" --build-dir "$work/b" > out.txt 2>&1; local rc=$?; set -e
  [ "$rc" -eq 2 ] || fail "'$*' exited $rc, expected 2: $(cat out.txt)"
  [ "$(wc -l < out.txt)" -eq 1 ] || fail "'$*': more than one line: $(cat out.txt)"
  grep -qF -- "$want" out.txt || fail "'$*' said: $(cat out.txt) — expected: $want"
  [ ! -e "$work/b" ] || fail "'$*' wrote its build folder"
}
# Pythons for the test, printing what setup.sh asks a torch (CMake prefix, version, CUDA, NCCL,
# nccl.h's folder, site-packages): one without torch, one whose torch has no CUDA and no C++
# files, an old one, and two with C++ files (one with CUDA, whose site-packages hold no nvcc).
printf '#!/bin/sh\necho "ModuleNotFoundError: No module named torch" >&2\nexit 1\n' > no-torch && chmod +x no-torch
fake_python() {  # fake_python FILE PREFIX VERSION CUDA
  printf '#!/bin/sh\nprintf "%%s\\n" "%s" "%s" "%s" "" "" "%s/site"\n' "$2" "$3" "$4" "$work" > "$1" && chmod +x "$1"
}
fake_python cpu-torch "$work/share/cmake" 2.11.0+cpu ""
fake_python old-torch "$work/share/cmake" 2.10.0+cpu ""
mkdir -p with-cxx/Torch && touch with-cxx/Torch/TorchConfig.cmake
fake_python cxx-torch "$work/with-cxx" 2.15.0+cpu ""
fake_python cuda-torch "$work/with-cxx" 2.15.0+cu132 13.2
printf '#!/bin/sh\nexit 1\n' > old-cxx && chmod +x old-cxx  # a compiler that compiles nothing (no C++20)

expect_setup "--torch gpu: expected pip, python, cuda or none" "$setup" --torch gpu
expect_setup "no $work/none on PATH — activate the Python environment that has PyTorch, or set PYTHON" \
  env PYTHON="$work/none" "$setup" --torch python
expect_setup "cannot import torch (ModuleNotFoundError: No module named torch) — activate the environment" \
  env PYTHON="$work/no-torch" "$setup" --torch cuda
expect_setup "the torch 2.10.0+cpu of $work/old-torch is older than 2.11, the oldest sweep is built and tested against — upgrade it" \
  env PYTHON="$work/old-torch" "$setup" --torch python
expect_setup "the torch 2.11.0+cpu of $work/cpu-torch has no CUDA (torch.version.cuda is None) — install a CUDA build" \
  env PYTHON="$work/cpu-torch" "$setup" --torch cuda
expect_setup "has no $work/share/cmake/Torch/TorchConfig.cmake (a distribution's torch without its C++ files?)" \
  env PYTHON="$work/cpu-torch" "$setup" --torch python
if [ ! -e /usr/local/cuda/bin/nvcc ]; then  # (a machine with a CUDA toolkit has one to find)
  expect_setup "no CUDA toolkit (nvcc) for the torch 2.15.0+cu132 (CUDA 13.2) of $work/cuda-torch" \
    env PATH=/usr/bin:/bin PYTHON="$work/cuda-torch" "$setup" --torch cuda
fi
expect_setup "does not compile C++20, which sweep (and PyTorch 2.13 and newer) require — install g++ 11 or newer" \
  env CXX="$work/old-cxx" PYTHON="$work/cxx-torch" "$setup" --torch python
mkdir empty
expect_setup "--deps $work/empty: no .deb files there, nor a deps.tar.xz (scripts/offline-deps.sh" "$setup" --deps "$work/empty"
echo "setup_bad_input: ok"
