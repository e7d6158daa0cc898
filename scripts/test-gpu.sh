#!/usr/bin/env bash
# The GPU kit: what a lent GPU machine runs, in two commands that each fit a 10-minute command of a
# 15-minute window (about 8 minutes each on one H100/H200 with 16 cores), everything written as it
# goes under the output folder that the machine sends back ($OUT there, or --out DIR):
#
#   scripts/test-gpu.sh call1 [--out DIR] [--deps DIR] [--dry-run]
#       facts.txt    the machine: nvidia-smi -q, torch, CUDA, cuDNN, the C++ ABI, cores
#       build.log    sweep, sweep-core and the GPU tests built against this Python's PyTorch
#                    (scripts/setup.sh --torch cuda, into build-gpu/; --deps: a folder of .deb files,
#                    default .gpu-kit/ where it exists)
#       bindings.log the libraries the binaries bind (integration.cuda_libraries: the first suspect of
#                    a crash at a test's temp folder)
#       crashes.log  the two GPU tests that crashed on 2026-11-27 (resume, a checkpoint moved), first
#       gpu-tests.log, junit.xml  every GPU test (ctest -L gpu), in parallel, each stopped at its limit
#   scripts/test-gpu.sh call2 [--out DIR] [--nanogpt PATH/model.py] [--dry-run]
#       bench-*.log  one process per row, each stopped at its limit: nanoGPT eager and with
#                    torch.compile first (the baseline secured before anything of sweep's runs), then
#                    sweep's GPT-2 small bf16 step with each lever (the old per-tensor AdamW, the
#                    default, train.cuda_kernels, train.cuda_graph, both), tf32, and the reference config
#       rows.jsonl   each row as it is measured (sweep bench --rows)
#       table.md     the rows as a Markdown table, ready for docs/performance.md
#
# --dry-run: the same script end to end with the CPU standing in — no build (the binaries of
# --build-dir, default build/), the GPU tests as this build has them (skipped without a GPU), the
# bench rows on the CPU's reference config with 2 timed steps — so that the kit's own logic, its
# limits and its output are tested here (integration.gpu_kit). Exit: 0 when every step passed; the
# first failing step's code otherwise (a failed build ends call1 there; a failed row does not end call2).
set -euo pipefail
caller=$PWD  # --out and --build-dir as given, from where the kit was called
cd "$(dirname "$0")/.."
kit_root=$PWD
kit_call="" kit_out=${OUT:-} kit_deps="" kit_nanogpt="" kit_dry=false kit_build=""
{ [ -f .gpu-kit/deps.tar.xz ] || compgen -G ".gpu-kit/*.deb" >/dev/null; } && kit_deps=.gpu-kit
while [ $# -gt 0 ]; do
  case $1 in
    call1 | call2) kit_call=$1 ;;
    --out) kit_out=${2:?--out needs a folder}; shift ;;
    --deps) kit_deps=${2:?--deps needs a folder of .deb files}; shift ;;
    --nanogpt) kit_nanogpt=${2:?--nanogpt needs nanoGPT\'s model.py}; shift ;;
    --build-dir) kit_build=${2:?--build-dir needs a folder}; shift ;;
    --dry-run) kit_dry=true ;;
    *) echo "test-gpu: unknown argument $1 (call1 or call2; --out DIR, --deps DIR, --nanogpt PATH, --build-dir DIR, --dry-run)" >&2
       exit 2 ;;
  esac
  shift
done
[ -n "$kit_call" ] || { echo "test-gpu: say which call: call1 (facts, build, tests) or call2 (the bench)" >&2; exit 2; }
kit_build=${kit_build:-$kit_root/$($kit_dry && echo build || echo build-gpu)}
kit_out=${kit_out:-$kit_build/gpu-kit}
case $kit_build in /*) ;; *) kit_build=$caller/$kit_build ;; esac
case $kit_out in /*) ;; *) kit_out=$caller/$kit_out ;; esac
mkdir -p "$kit_out"
kit_out=$(cd "$kit_out" && pwd)
kit_py=${PYTHON:-python3}
kit_start=$(date +%s)
say() { echo "== [$(( $(date +%s) - kit_start ))s] $*" | tee -a "$kit_out/$kit_call.log"; }

# step NAME LIMIT COMMAND...: COMMAND's output to the terminal and to OUT/NAME.log as it comes,
# stopped at LIMIT seconds (then TERM, and KILL 10 s later); its exit code returned.
step() {
  local name=$1 limit=$2 rc
  shift 2
  [ -z "${TEST_GPU_MAX_LIMIT:-}" ] || [ "$limit" -le "$TEST_GPU_MAX_LIMIT" ] || limit=$TEST_GPU_MAX_LIMIT  # (the kit's test)
  say "$name (at most ${limit} s): $*"
  set +e
  # (a shell function of this script runs in a bash of its own: timeout runs programs)
  timeout -k 10 "$limit" bash -c '"$@"' _ "$@" > >(tee "$kit_out/$name.log") 2>&1
  rc=$?
  set -e
  [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || echo "test-gpu: $name stopped at its limit of $limit s" | tee -a "$kit_out/$name.log"
  say "$name: exit $rc"
  return "$rc"
}

facts() {
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi -q
  else
    echo "nvidia-smi: none here$($kit_dry && echo ' (dry run: the CPU stands in)')"
  fi
  command -v nvcc >/dev/null && nvcc --version | tail -2 || echo "nvcc: not on PATH"
  cmake --version | sed -n 1p
  g++ --version | sed -n 1p
  echo "$(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB"
  "$kit_py" - <<'PY' || echo "test-gpu: $kit_py cannot import torch — activate the environment that has PyTorch (or set PYTHON)"
import torch, torch.utils
print("torch", torch.__version__, "| CUDA", torch.version.cuda, "| cuDNN", torch.backends.cudnn.version(),
      "| C++11 ABI", torch._C._GLIBCXX_USE_CXX11_ABI, "| GPUs", torch.cuda.device_count(),
      [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
print("cmake prefix", torch.utils.cmake_prefix_path)
PY
}

build_here() {
  if $kit_dry; then
    echo "dry run: no build — the binaries of $kit_build/"
    [ -x "$kit_build/sweep" ] && [ -x "$kit_build/sweep-core" ] && [ -x "$kit_build/gpu_tests" ] ||
      { echo "test-gpu: $kit_build/ has no sweep, sweep-core and gpu_tests: build it first (scripts/setup.sh)"; return 2; }
    return 0
  fi
  scripts/setup.sh --torch cuda ${kit_deps:+--deps "$kit_deps"} --build-dir "$kit_build" --target sweep --target gpu_tests \
    --target unit_tests -DSWEEP_TEST_HOOKS=OFF
  "$kit_build/sweep" devices
}

gpu_ctest() {  # gpu_ctest ARGS...: ctest in the build folder, its junit written under OUT
  (cd "$kit_build" && ctest --output-on-failure "$@")
}

# The GPU tests that crashed on 2026-11-27 (a checkpoint saved and resumed, a checkpoint's weights
# moved between the GPU and the CPU), before the rest: a crash of theirs is what this window is for.
k_crash_tests='^gpu\.unit\.cuda: (3 steps then a checkpoint|a checkpoint.s weights move)'

call1() {
  say "call1: the machine, the build, the GPU tests ($($kit_dry && echo 'dry run: ' || true)out: $kit_out)"
  facts > "$kit_out/facts.txt" 2>&1 || true
  sed -n '/Product Name/p; /Driver Version/p; /CUDA Version/p; /^torch /p; /cores/p' "$kit_out/facts.txt" | tee -a "$kit_out/$kit_call.log"
  step build 420 build_here || return $?
  local rc=0
  step bindings 120 gpu_ctest -R '^integration\.cuda_libraries$' --timeout 100 || rc=$?
  step crashes 240 gpu_ctest -R "$k_crash_tests" --timeout 110 || rc=$((rc ? rc : $?))
  step gpu-tests 300 gpu_ctest -L gpu -E "$k_crash_tests|^integration\.cuda_libraries$" -j 4 --timeout 180 \
    --output-junit "$kit_out/junit.xml" ||
    rc=$((rc ? rc : $?))
  return "$rc"
}

# bench_row NAME LIMIT ARGS...: one row of the table, one process (sweep bench ARGS --rows OUT/rows.jsonl)
bench_row() {
  local name=$1 limit=$2
  shift 2
  step "bench-$name" "$limit" "$kit_build/sweep" bench "$@" --rows "$kit_out/rows.jsonl"
}

call2() {
  say "call2: the bench, a process per row ($($kit_dry && echo 'dry run: ' || true)out: $kit_out)"
  [ -x "$kit_build/sweep" ] || { echo "test-gpu: no $kit_build/sweep: run call1 first" | tee -a "$kit_out/$kit_call.log"; return 2; }
  rm -f "$kit_out/rows.jsonl"
  local rc=0 steps=60 warmup=5 nano=() row
  [ -n "$kit_nanogpt" ] && nano=(--nanogpt "$kit_nanogpt" --python "$kit_py")
  if $kit_dry; then
    # the CPU stands in: the reference config, 2 timed steps, each path a process of its own
    steps=2 warmup=1
    if [ -n "$kit_nanogpt" ]; then  # (on the CPU nanoGPT's rows come beside sweep's fused step)
      bench_row nanogpt 300 --device cpu --model reference --precision fp32 --path fused --no-ops "${nano[@]}" \
        --steps "$steps" --warmup "$warmup" || rc=$?
    fi
    bench_row reference 120 --device cpu --model reference --precision fp32 --path reference --no-ops \
      --steps "$steps" --warmup "$warmup" || rc=$?
    bench_row fused 120 --device cpu --model reference --precision fp32 --path fused --no-ops \
      --steps "$steps" --warmup "$warmup" || rc=$((rc ? rc : $?))
  else
    if [ -n "$kit_nanogpt" ]; then  # nanoGPT first, each in a process of its own: the baseline secured
      bench_row nanogpt 150 --device cuda --model gpt2-small --precision bf16 --lever nanogpt "${nano[@]}" \
        --steps "$steps" --warmup "$warmup" || rc=$?
      bench_row nanogpt-compile 240 --device cuda --model gpt2-small --precision bf16 --lever nanogpt-compile \
        "${nano[@]}" --steps "$steps" --warmup "$warmup" || rc=$((rc ? rc : $?))
    else
      say "no nanoGPT model.py (--nanogpt): its rows are left out"
    fi
    for row in per-tensor-adamw sweep cuda-kernels cuda-graph graph-and-kernels; do
      bench_row "gpt2-small-bf16-$row" 90 --device cuda --model gpt2-small --precision bf16 --lever "$row" \
        --steps "$steps" --warmup "$warmup" || rc=$((rc ? rc : $?))
    done
    bench_row gpt2-small-tf32 90 --device cuda --model gpt2-small --precision tf32 --lever sweep \
      --steps "$steps" --warmup "$warmup" || rc=$((rc ? rc : $?))
    bench_row reference 60 --device cuda --model reference --precision bf16,tf32 --lever sweep,cuda-graph \
      --steps "$steps" --warmup "$warmup" || rc=$((rc ? rc : $?))
  fi
  python3 "$kit_root/scripts/bench-table.py" "$kit_out/rows.jsonl" > "$kit_out/table.md" || rc=$((rc ? rc : $?))
  cat "$kit_out/table.md" | tee -a "$kit_out/$kit_call.log"
  return "$rc"
}

export kit_build kit_out kit_dry kit_deps kit_py kit_call kit_start  # prefixed: children inherit them
export -f say build_here gpu_ctest facts
set +e
"$kit_call"
rc=$?
set -e
say "$kit_call: exit $rc (everything is in $kit_out)"
exit "$rc"
