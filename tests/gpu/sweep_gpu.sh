#!/usr/bin/env bash
# On a CUDA GPU, through the real binary: `sweep train` on cuda (its loss falls), a run stopped
# on the CPU refused on the GPU and resumed on the CPU, two data-parallel ranks sharing the GPU over Gloo equal to
# accumulation 2 (NCCL refused for them, with the fix named), a sweep on one GPU slot and on two
# slots of the same GPU ending with a report, a GPU that does not exist refused, and the bench.
# Without a CUDA device: skipped (exit 77), saying why.
source "$(dirname "$0")/../integration/lib.bash"
devices=$("$SWEEP" devices)
grep -q '^cuda:0:' <<< "$devices" || { echo "skipped: no CUDA device ($(sed -n 1p <<< "$devices"))"; exit 77; }
echo "$devices"
# The database through Python's sqlite3 module where the machine has no sqlite3 shell (a GPU
# box without Debian's packages), in the shell's output format.
if ! command -v sqlite3 >/dev/null; then
  sql() {
    python3 -c 'import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print("|".join("" if v is None else str(v) for v in row))' \
      "${DB:-res/sweep.db}" "$1"
  }
fi

# A corpus that is there on any machine: this repository's documentation.
mkdir -p corpus
cp "$SWEEP_TEST_DATA"/../../docs/*.md "$SWEEP_TEST_DATA"/../../README.md corpus/
"$SWEEP" data prepare --input corpus --tokenizer bytes --out data/bytes --val 0.1 --test 0.1 > /dev/null
tiny_config run.yaml 200
sed -i 's/^resources: {/resources: {device: cuda, /' run.yaml

# ---- one run on the GPU, each precision ----
for precision in bf16 tf32 fp32; do
  "$SWEEP" train run.yaml --set train.precision=$precision --run-dir "gpu-$precision" > /dev/null 2> err.txt ||
    fail "train on cuda ($precision): $(cat err.txt)"
  grep '"event":"start"' "gpu-$precision/events.jsonl" | grep -q '"device":"cuda' || fail "$precision: the start event names no cuda device"
  python3 - "gpu-$precision/events.jsonl" <<'PY' || fail "$precision: the loss did not fall on the GPU"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
train = [e["loss"] for e in ev if e["event"] == "train"]
end = [e for e in ev if e["event"] == "end"][0]
assert end["status"] == "done" and len(train) == 200, (end, len(train))
assert sum(train[-10:]) / 10 < sum(train[:10]) / 10 - 0.5, (train[:10], train[-10:])
PY
done

# ---- stopped on the CPU: refused on the GPU (the kind of device is part of a run), resumed on the CPU ----
"$SWEEP" train run.yaml --set resources.device=cpu --run-dir moved > /dev/null 2>&1 &
pid=$!
wait_for_train_events moved/events.jsonl 50
kill -TERM "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 75 ] || fail "SIGTERM on the CPU: exit $rc, expected 75"
expect_rc 2 "$SWEEP" train run.yaml --run-dir moved --resume 2> err.txt
grep -q 'was trained on cpu and would go on on cuda' err.txt || fail "resume on cuda of a CPU run: $(cat err.txt)"
"$SWEEP" train run.yaml --set resources.device=cpu --run-dir moved --resume > /dev/null 2> err.txt ||
  fail "resume on the CPU: $(cat err.txt)"
[ "$(count '"status":"done"' moved/events.jsonl)" -eq 1 ] || fail "the CPU run did not finish"

# ---- two ranks sharing the GPU: Gloo equals accumulation 2; NCCL refuses, naming the fix ----
sed -i 's/dropout: 0.1/dropout: 0.0/; s/^train: {/train: {precision: fp32, /' run.yaml
"$SWEEP" train run.yaml --nproc 2 --set resources.backend=gloo --run-dir w2 > /dev/null 2> err.txt ||
  fail "2 ranks over Gloo on one GPU: $(cat err.txt)"
"$SWEEP" train run.yaml --set train.grad_accum=2 --run-dir w1 > /dev/null 2>&1
# (on the CPU the two are bitwise equal; CUDA's attention backward may sum with atomics, and
# 100 steps compound that: 1e-4)
python3 - <<'PY' || fail "2 ranks on one GPU differ from accumulation 2"
import json
def losses(d):
    return [e["loss"] for e in map(json.loads, open(d + "/events.jsonl")) if e["event"] == "train"]
a, b = losses("w2"), losses("w1")
assert len(a) == len(b) == 100, (len(a), len(b))
worst = max(abs(x - y) / abs(y) for x, y in zip(a, b))
assert worst < 1e-4, f"per-step losses differ by {worst:.2e} relative"
print(f"2 ranks (Gloo, one GPU) = accumulation 2: worst relative loss difference {worst:.1e}")
PY
count_gpus=$(grep -c '^cuda:' <<< "$devices")
if [ "$count_gpus" -eq 1 ] && grep -q ', NCCL$' <<< "$devices"; then
  expect_rc 2 "$SWEEP" train run.yaml --nproc 2 --set resources.backend=nccl --run-dir nccl 2> nccl.err
  grep -q "NCCL needs a GPU of its own for each rank" nccl.err || fail "NCCL, 2 ranks on 1 GPU: $(cat nccl.err)"
  [ ! -e nccl ] || fail "a refused run wrote its run directory"
fi

# ---- sweeps: one GPU slot, then two slots on the same GPU; each ends with a report ----
tiny_sweep s1.yaml ongpu 60 "no-dropout: {model.dropout: 0.0}"
sed -i 's/^  model: {/  resources: {device: cuda}\n  model: {/' s1.yaml
"$SWEEP" run s1.yaml --results res --devices cuda:0 > run1.txt 2>&1 || fail "sweep on cuda:0: $(cat run1.txt)"
"$SWEEP" report ongpu --results res --out rep1 > /dev/null || fail "report of the sweep on cuda:0"
[ -s rep1/report.md ] || fail "no report.md for the sweep on cuda:0"
sed 's/^sweep: ongpu/sweep: shared/; s/lr: 3e-3/lr: 2e-3/' s1.yaml > s2.yaml
"$SWEEP" run s2.yaml --results res --devices cuda:0,0 > run2.txt 2>&1 || fail "sweep on cuda:0,0: $(cat run2.txt)"
[ "$(grep -c 'start .* on cuda:0' run2.txt)" -eq 4 ] || fail "4 runs on the two cuda:0 slots: $(cat run2.txt)"
[ "$(sed '/ done /q' run2.txt | grep -c ' start ')" -ge 2 ] || fail "the two slots of cuda:0 did not run at once: $(cat run2.txt)"
"$SWEEP" report shared --results res --out rep2 > /dev/null || fail "report of the sweep on cuda:0,0"
[ "$(sql "SELECT COUNT(*) FROM runs WHERE status = 'done'")" -eq 8 ] || fail "8 runs done: $(sql 'SELECT run_id, status FROM runs')"
check_database

# ---- a GPU that is not there: refused before anything is written ----
expect_rc 2 "$SWEEP" run s1.yaml --results none --devices "cuda:$count_gpus" 2> none.err
grep -q "name one of them\|count from 0 within them" none.err || fail "--devices cuda:$count_gpus: $(cat none.err)"
[ ! -e none ] || fail "a refused sweep wrote its results folder"

# ---- the bench on the GPU ----
"$SWEEP" bench --device cuda --steps 3 --warmup 1 > bench.txt 2>&1 || fail "bench on cuda: $(cat bench.txt)"
grep -q "tokens/s" bench.txt || fail "the GPU bench printed no throughput: $(cat bench.txt)"
cat bench.txt
echo "sweep_gpu: ok"
