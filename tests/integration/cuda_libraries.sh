#!/usr/bin/env bash
# A build against a CUDA PyTorch wheel loads the wheel's own CUDA libraries — the CUDA runtime,
# cuBLAS, NCCL, cuDNN from its site-packages' nvidia/ folders, beside libtorch — once each (never a
# CUDA toolkit's copy of another version, which would show only at the first matmul), finds every
# library it needs, takes oneDNN from Debian's 2.x (the one the fused kernels are written for),
# and binds the C++ standard library's names to libstdc++ itself (its first need) — in sweep, the
# unit tests and the GPU tests (in sweep-core, the training core: the front `sweep` links no LibTorch,
# integration/front.sh): the wheel's libtorch_cpu.so exports std::filesystem's functions of
# its own toolchain, and a call of remove_all bound to that copy jumped through a null pointer (every
# test that removed a temp dir crashed; the GPU tests' resume and checkpoint-move crashes on
# 2026-11-27 were the two that make one). Skipped (77) for a build without CUDA.
source "$(dirname "$0")/lib.bash"
devices=$("$SWEEP" devices)
grep -q '^build: .*, CUDA [0-9]' <<< "$devices" || { echo "skipped: this build has no CUDA ($(sed -n 1p <<< "$devices"))"; exit 77; }
core=$(dirname "$SWEEP")/sweep-core
libs=$(ldd "$core")
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
[ "$(readelf -d "$core" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sed -n 1p)" = libstdc++.so.6 ] ||
  fail "libstdc++ is not the binary's first need: $(readelf -d "$core" | grep NEEDED | sed -n 1,3p)"
# Every name of namespace std (_ZSt, _ZNSt, _ZNKSt: functions, not vtables or typeinfo) that
# libstdc++ defines and a binary uses, bound (all at load: LD_BIND_NOW) to libstdc++.
stdcxx=$(sed -n 's/^\s*libstdc++\.so\.6 => \([^ ]*\) .*/\1/p' <<< "$libs")
[ -n "$stdcxx" ] || fail "no libstdc++.so.6 among the libraries: $libs"
defined=$(nm -D --defined-only "$stdcxx" | awk '{print $3}' | sed 's/@.*//' | sort -u)
check_std_bindings() {
  local bin out elsewhere
  bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  shift
  out=$(LD_BIND_NOW=1 LD_DEBUG=bindings "$bin" "$@" 2>&1 >/dev/null || true)
  grep -qF "binding file $bin [0] to " <<< "$out" || fail "LD_DEBUG printed no binding of $bin: $(head -3 <<< "$out")"
  elsewhere=$(grep -F "binding file $bin [0] to " <<< "$out" | grep -v ' to [^ ]*/libstdc++\.so\.6 ' |
    sed -n "s/.*normal symbol \`\(_ZN\{0,1\}K\{0,1\}St[^']*\)'.*/\1/p" | sort -u | comm -12 - <(echo "$defined") || true)
  [ -z "$elsewhere" ] || fail "$bin binds names of libstdc++ to another library's copy: $(head -5 <<< "$elsewhere" | c++filt | tr '\n' ';')"
  echo "$(basename "$bin"): every name of libstdc++ it uses bound to $stdcxx"
}
build=$(dirname "$SWEEP")
check_std_bindings "$core" --version
for tests in unit_tests gpu_tests; do
  [ -x "$build/$tests" ] && check_std_bindings "$build/$tests" --list-test-cases
done
echo "cuda_libraries: ok"
