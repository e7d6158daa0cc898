#!/usr/bin/env bash
# A build against a CUDA PyTorch wheel loads the wheel's own CUDA libraries — the CUDA runtime,
# cuBLAS, NCCL, cuDNN from its site-packages' nvidia/ folders, beside libtorch — once each (never a
# CUDA toolkit's copy of another version, which would show only at the first matmul), finds every
# library it needs, takes oneDNN from Debian's 2.x (the one the fused kernels are written for),
# and binds the C++ standard library's names to libstdc++ itself (its first need). Skipped (77)
# for a build without CUDA.
source "$(dirname "$0")/lib.bash"
devices=$("$SWEEP" devices)
grep -q '^build: .*, CUDA [0-9]' <<< "$devices" || { echo "skipped: this build has no CUDA ($(sed -n 1p <<< "$devices"))"; exit 77; }
libs=$(ldd "$SWEEP")
! grep -q 'not found' <<< "$libs" || fail "libraries not found: $(grep 'not found' <<< "$libs")"
torch_lib=$(sed -n 's/^\s*libtorch_cpu\.so => \(.*\)\/libtorch_cpu\.so .*/\1/p' <<< "$libs")
[ -n "$torch_lib" ] || fail "no libtorch_cpu.so: $libs"
site=$(cd "$torch_lib/../.." && pwd)  # site-packages
for lib in libcudart.so libcublas.so libcublasLt.so libnccl.so libcudnn.so; do
  lines=$(grep -E "^\s*$lib\.[0-9]+ => " <<< "$libs" || true)
  [ "$(grep -c . <<< "$lines")" -eq 1 ] || fail "$lib is loaded $(grep -c . <<< "$lines") times: $lines"
  where=$(sed 's/.* => \([^ ]*\) .*/\1/' <<< "$lines")
  [ "$(cd "$(dirname "$where")" && pwd -P)" = "$(cd "$site" && pwd -P)/nvidia/$(basename "$(dirname "$(dirname "$where")")")/lib" ] ||
    fail "$lib comes from $where, not from the wheel's $site/nvidia/"
  echo "$(basename "$where") <- $where"
done
grep -qE '^\s*libdnnl\.so\.2 => ' <<< "$libs" || fail "oneDNN 2 is not among the libraries: $libs"
[ "$(readelf -d "$SWEEP" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sed -n 1p)" = libstdc++.so.6 ] ||
  fail "libstdc++ is not the binary's first need: $(readelf -d "$SWEEP" | grep NEEDED | sed -n 1,3p)"
echo "cuda_libraries: ok"
