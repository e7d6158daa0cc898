#!/usr/bin/env bash
# The front (`sweep`) links no LibTorch and no CUDA; the training core's commands are handed to
# sweep-core beside it, and where there is none (scripts/setup.sh --torch none) a command or a
# sweep that needs it is refused in one line naming the set-up that adds it, before anything is
# written. The device rule: a file's resources.device is never silently replaced. `sweep plan` and
# `sweep run` agree on every run's id. `sweep serve` answers from the front alone. Runs in both
# builds: the core's absence is also tried on a copy of the front alone.
source "$(dirname "$0")/lib.bash"
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (apt-get install sqlite3)"
cp "$SWEEP_TEST_DATA/trainers/toy-trainer.sh" .
ids() { sed -n 's/.* \([0-9a-f]\{16\}\) .*/\1/p' "$1" | sort; }

# ---- the front's libraries: none of LibTorch's or CUDA's ----
libs=$(ldd "$SWEEP") || fail "ldd $SWEEP"
! grep -Eq 'libtorch|libc10|libcuda|libcublas|libcudnn|libnccl|libgomp' <<< "$libs" ||
  fail "the front links LibTorch or CUDA: $(grep -E 'torch|c10|cu|nccl|gomp' <<< "$libs")"
"$SWEEP" --version | grep -q '^sweep ' || fail "sweep --version"
for cmd in train bench eval export sample devices run report serve; do
  grep -q "^  $cmd " <<< "$("$SWEEP" --help)" || fail "sweep --help does not list $cmd: $("$SWEEP" --help)"
done

# ---- a front without a core beside it (the front-only build, or a copy of this one's front) ----
if [ -x "$(dirname "$SWEEP")/sweep-core" ]; then
  mkdir front-alone && cp "$SWEEP" "$(dirname "$SWEEP")/sweep-sentencepiece" front-alone/
  alone=$PWD/front-alone/sweep
  grep -q '^build: LibTorch' <<< "$("$SWEEP" devices)" || fail "sweep devices was not handed to the core"
else
  alone=$SWEEP
fi
expect_rc 2 "$alone" bench 2> err.txt
grep -q "sweep bench needs sweep's training core, and there is none beside this sweep (no .*sweep-core: a front built alone, scripts/setup.sh --torch none, or one copied without it) — scripts/setup.sh .* builds it beside the front" err.txt ||
  fail "sweep bench without the core: $(cat err.txt)"
[ "$(wc -l < err.txt)" -eq 1 ] || fail "more than one line: $(cat err.txt)"
# a "core" that is the front itself — a copy of it, a link to it — is refused in one line, at once (handed
# to itself, the front would exec itself for ever); one that is not executable is said as that
mkdir front-copy front-link front-noexec
for d in front-copy front-link front-noexec; do cp "$SWEEP" "$d/sweep"; done
cp "$SWEEP" front-copy/sweep-core
ln -s sweep front-link/sweep-core
printf '#!/bin/sh\nexit 0\n' > front-noexec/sweep-core
for d in front-copy front-link; do
  expect_rc 2 timeout 5 "$d/sweep" devices 2> err.txt
  grep -q "sweep devices needs sweep's training core, and .*/$d/sweep-core is this front itself (a link to, or a copy of, .*/$d/sweep), not the core — remove it" err.txt ||
    fail "$d: $(cat err.txt)"
  [ "$(wc -l < err.txt)" -eq 1 ] || fail "$d: more than one line: $(cat err.txt)"
done
# a script that execs the front under the core's name: the front it reaches refuses, it does not loop
mkdir front-wrapper && cp "$SWEEP" front-wrapper/sweep
printf '#!/bin/sh\nexec "$(dirname "$0")/sweep" "$@"\n' > front-wrapper/sweep-core && chmod +x front-wrapper/sweep-core
expect_rc 2 timeout 5 front-wrapper/sweep devices 2> err.txt
grep -q "sweep devices needs sweep's training core, and .*/front-wrapper/sweep-core ran a front again (a script that execs \`sweep\`" err.txt ||
  fail "a wrapper that execs the front: $(cat err.txt)"
expect_rc 2 timeout 5 front-noexec/sweep bench 2> err.txt
grep -q "sweep bench needs sweep's training core, and .*/front-noexec/sweep-core is not executable (Permission denied) — chmod +x" err.txt ||
  fail "a core that is not executable: $(cat err.txt)"
prepare_bytes  # (the front prepares data)
cat > core.yaml <<'YAML'
sweep: core
baseline: base
seeds: [1]
base:
  data: {dataset: data/bytes}
  model: {n_layer: 1, n_head: 1, n_embd: 8, block_size: 8}
  train: {micro_batch: 1, tokens: 64}
interventions:
  base: {}
YAML
expect_rc 2 "$alone" run core.yaml --results res-core 2> err.txt
grep -q "needs sweep's training core" err.txt || fail "a sweep of sweep's own trainer without the core: $(cat err.txt)"
[ ! -e res-core ] || fail "a refused sweep wrote $(find res-core)"
tiny_config run.yaml 10
expect_rc 2 "$alone" train run.yaml 2> err.txt
grep -q "needs sweep's training core" err.txt || fail "sweep train without the core: $(cat err.txt)"

# ---- a trainer of your own, from the front alone: run, plan and run agree, reported, served ----
own() {  # own FILE NAME [resources line]
  {
    echo "sweep: $2"
    echo "baseline: base"
    echo "seeds: [1, 2]"
    echo "trainer:"
    echo "  name: toy"
    echo "  command: [./toy-trainer.sh, \"{train.effect}\", \"6\", plain]"
    echo "  files: [toy-trainer.sh]"
    echo "  keys:"
    echo "    train.effect: 0.0"
    echo "base:"
    echo "  train: {effect: 0.0}"
    [ -n "${3:-}" ] && echo "  $3"
    echo "interventions:"
    echo "  base: {}"
    echo "  better: {train.effect: 0.05}"
  } > "$1"
}
own a.yaml own
"$alone" plan a.yaml --results res > plan.txt || fail "plan: $(cat plan.txt)"
grep -q "4 runs, baseline base, on cpu" plan.txt || fail "plan's header: $(cat plan.txt)"
"$alone" run a.yaml --results res --devices cpu:2x1 > run.txt 2>&1 || fail "run from the front alone: $(cat run.txt)"
[ "$(ids plan.txt)" = "$(sqlite3 res/sweep.db "SELECT run_id FROM sweep_runs WHERE sweep = 'own'" | sort)" ] ||
  fail "plan and run disagree on the ids: $(cat plan.txt) vs $(sqlite3 res/sweep.db 'SELECT run_id FROM sweep_runs')"
[ "$(cat res/sweeps/own.device)" = cpu ] || fail "the recorded device: $(cat res/sweeps/own.device)"
"$alone" report own --results res > report.txt || fail "report: $(cat report.txt)"
grep -q "better" report.txt || fail "the report: $(cat report.txt)"
"$alone" ls --results res | grep -q "own .* 4 done" || fail "ls: $("$alone" ls --results res)"

"$alone" serve --results res --port 0 > serve.txt 2> serve-err.txt &
server=$!
for _ in $(seq 100); do grep -q "http://" serve.txt && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' serve.txt) || fail "serve printed no address: $(cat serve.txt serve-err.txt)"
[ "$(curl -s -o page.html -w '%{http_code}' "$url")" = 200 ] && grep -q 'src="/assets/app.js"' page.html ||
  fail "serve's first page: $(head -c 300 page.html)"
[ "$(curl -s -o sweeps.json -w '%{http_code}' "${url}api/sweeps")" = 200 ] && grep -q '"own"' sweeps.json ||
  fail "serve's sweeps: $(head -c 300 sweeps.json)"
kill -TERM "$server" && wait "$server" || fail "serve did not end with 0 on SIGTERM"

# ---- the device rule: a file's resources.device is honoured or refused, never replaced ----
own gpu.yaml gpu "resources: {device: cuda}"
expect_rc 2 "$alone" run gpu.yaml --results res-gpu --devices cpu 2> err.txt
grep -q "^sweep: gpu.yaml:[0-9]*: resources.device: cuda, but --devices cpu gives CPU slots — a file's device is never replaced" err.txt ||
  fail "cuda file on --devices cpu: $(cat err.txt)"
[ ! -e res-gpu ] || fail "a refused sweep wrote $(find res-gpu)"
"$alone" plan gpu.yaml --results res-gpu > plan-gpu.txt || fail "plan of a cuda file: $(cat plan-gpu.txt)"
grep -q "on cuda" plan-gpu.txt || fail "plan of a cuda file is not on cuda: $(cat plan-gpu.txt)"
[ -z "$(comm -12 <(ids plan.txt) <(ids plan-gpu.txt))" ] || fail "a cuda plan shares ids with the cpu one"
if [ ! -d /proc/driver/nvidia/gpus ] && ! ls /dev/nvidia[0-9]* > /dev/null 2>&1; then  # no GPU here: refused, before anything is written
  expect_rc 2 "$alone" run gpu.yaml --results res-gpu 2> err.txt
  grep -q "resources.device: cuda, but no GPU is visible here" err.txt || fail "cuda file without GPUs: $(cat err.txt)"
  [ ! -e res-gpu ] || fail "a refused sweep wrote $(find res-gpu)"
fi
own cpu.yaml cpu "resources: {device: cpu}"
expect_rc 2 "$alone" run cpu.yaml --results res-cpu --devices cuda:0 2> err.txt
grep -q "resources.device: cpu, but --devices cuda:0 gives GPU slots" err.txt || fail "cpu file on cuda slots: $(cat err.txt)"
# a folder whose runs of the sweep trained on the CPU before the file's cuda was honoured: refused, not left behind
sed 's/^sweep: gpu$/sweep: own/' gpu.yaml > own-gpu.yaml
expect_rc 2 "$alone" plan own-gpu.yaml --results res 2> err.txt
grep -q "own-gpu.yaml:[0-9]*: resources.device: cuda, and the results folder records that sweep own's runs trained on cpu — its runs on cuda would be other runs" err.txt ||
  fail "a cuda file over a folder of its cpu runs: $(cat err.txt)"
echo "front: ok"
