#!/usr/bin/env bash
# scripts/setup.sh's bad input: an unknown --torch, a Python that is not there, one without torch,
# a torch without CUDA asked for CUDA, a torch without its C++ files, a --deps folder without
# .deb files — each one line naming the fix, exit 2, before anything is installed or built.
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
# Pythons for the test: one without torch, one whose torch has no CUDA and no C++ files.
printf '#!/bin/sh\necho "ModuleNotFoundError: No module named torch" >&2\nexit 1\n' > no-torch && chmod +x no-torch
printf '#!/bin/sh\nprintf "%%s\\n%%s\\n\\n" "%s/share/cmake" 2.11.0+cpu\n' "$work" > cpu-torch && chmod +x cpu-torch

expect_setup "--torch gpu: expected debian, python or cuda" "$setup" --torch gpu
expect_setup "no $work/none on PATH — activate the Python environment that has PyTorch, or set PYTHON" \
  env PYTHON="$work/none" "$setup" --torch python
expect_setup "cannot import torch (ModuleNotFoundError: No module named torch) — activate the environment" \
  env PYTHON="$work/no-torch" "$setup" --torch cuda
expect_setup "the torch 2.11.0+cpu of $work/cpu-torch has no CUDA (torch.version.cuda is None) — install a CUDA build" \
  env PYTHON="$work/cpu-torch" "$setup" --torch cuda
expect_setup "has no $work/share/cmake/Torch/TorchConfig.cmake (a distribution's torch without its C++ files?)" \
  env PYTHON="$work/cpu-torch" "$setup" --torch python
mkdir empty
expect_setup "--deps $work/empty: no .deb files there (scripts/offline-deps.sh" "$setup" --deps "$work/empty"
echo "setup_bad_input: ok"
