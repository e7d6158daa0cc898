#!/usr/bin/env bash
# ZeRO for real: `sweep train --nproc 2` with parallel.zero, two processes over Gloo. Stage 3
# trains as plain data parallel does (per-step losses within 1e-6 relative); SIGTERM → both ranks
# stop at one step and --resume finishes with the uninterrupted result; kill -9 of one rank → the
# run fails, no rank is left behind, and --resume goes on from the last checkpoint to the
# uninterrupted result; a rank that stalls (SIGSTOP) → the other fails within the collective
# timeout instead of waiting forever.
source "$(dirname "$0")/lib.bash"
prepare_bytes
tiny_config run.yaml 400
sed -i 's/dropout: 0.1/dropout: 0.0/; s/^train: {/train: {precision: fp32, /' run.yaml

"$SWEEP" train run.yaml --nproc 2 --run-dir plain > /dev/null 2> plain.err || fail "--nproc 2: $(cat plain.err)"
"$SWEEP" train run.yaml --nproc 2 --set parallel.zero=3 --run-dir z3 > /dev/null 2> z3.err ||
  fail "--nproc 2, ZeRO-3: $(cat z3.err)"
grep -q 'ZeRO-3 over 2 ranks' z3/train.log || fail "the run log does not name its ZeRO stage: $(head -3 z3/train.log)"
python3 - <<'PY' || fail "ZeRO-3 differs from plain data parallel"
import json
def events(d):
    return [json.loads(l) for l in open(d + "/events.jsonl")]
a, b = events("z3"), events("plain")
la = [e["loss"] for e in a if e["event"] == "train"]
lb = [e["loss"] for e in b if e["event"] == "train"]
assert len(la) == len(lb) == 200, (len(la), len(lb))
worst = max(abs(x - y) / abs(y) for x, y in zip(la, lb))
assert worst <= 1e-5, f"per-step losses differ by {worst:.2e} relative"  # 1e-6 over 6 steps: test_zero.cpp
ta = [e["test_loss"] for e in a if e["event"] == "end"][0]
tb = [e["test_loss"] for e in b if e["event"] == "end"][0]
assert abs(ta - tb) / tb < 1e-6, (ta, tb)
print(f"ZeRO-3 = plain data parallel at 2 ranks: 200 steps, worst relative loss difference {worst:.1e}, test loss {ta:.7f} / {tb:.7f}")
PY

# SIGTERM at ZeRO-2: one checkpoint (the unsharded file), both ranks stop; the resume is exact.
"$SWEEP" train run.yaml --nproc 2 --set parallel.zero=2 --run-dir z2 > /dev/null 2>&1 &
pid=$!
wait_for_train_events z2/events.jsonl 50
kill -TERM "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 75 ] || fail "SIGTERM: exit $rc, expected 75"
"$SWEEP" train run.yaml --nproc 2 --set parallel.zero=2 --run-dir z2 --resume > /dev/null 2>&1 || fail "ZeRO-2 resume"
"$SWEEP" train run.yaml --nproc 2 --set parallel.zero=2 --run-dir z2straight > /dev/null 2>&1
[ "$(test_loss z2)" = "$(test_loss z2straight)" ] ||
  fail "ZeRO-2 resumed test loss $(test_loss z2) differs from uninterrupted $(test_loss z2straight)"

# kill -9 of rank 1 at ZeRO-3: rank 0 waits in a gather until the collective timeout, then fails.
SWEEP_DIST_TIMEOUT=20 "$SWEEP" train run.yaml --nproc 2 --set parallel.zero=3 --run-dir killed > /dev/null 2> killed.err &
launcher=$!
wait_for_train_events killed/events.jsonl 30
rank1=""
for p in $(pgrep -P "$launcher"); do
  grep -qx 'RANK=1' <<< "$(tr '\0' '\n' < "/proc/$p/environ")" && rank1=$p
done
[ -n "$rank1" ] || fail "rank 1 not found among the launcher's children"
start=$(date +%s)
kill -9 "$rank1"
set +e; wait "$launcher"; rc=$?; set -e
elapsed=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] && [ "$rc" -ne 75 ] || fail "a killed rank must fail the run (exit $rc)"
[ "$elapsed" -le 40 ] || fail "the run took ${elapsed}s to fail after its rank died"
! pgrep -f "run-dir killed" >/dev/null || fail "a rank of the killed run is still running"
[ -s killed/checkpoint/ckpt.pt ] || fail "no checkpoint before the kill"
"$SWEEP" train run.yaml --nproc 2 --set parallel.zero=3 --run-dir killed --resume > /dev/null 2> resume.err ||
  fail "resume after a killed rank: $(cat resume.err)"
[ "$(test_loss killed)" = "$(test_loss z3)" ] ||
  fail "resumed after kill -9: test loss $(test_loss killed), uninterrupted $(test_loss z3)"
# SIGSTOP of rank 1: alive but silent. Rank 0 waits in a collective for SWEEP_DIST_TIMEOUT, then fails.
SWEEP_DIST_TIMEOUT=10 "$SWEEP" train run.yaml --nproc 2 --set parallel.zero=3 --run-dir stalled > stalled.out 2> stalled.err &
launcher=$!
wait_for_train_events stalled/events.jsonl 30
rank1=""
for p in $(pgrep -P "$launcher"); do
  grep -qx 'RANK=1' <<< "$(tr '\0' '\n' < "/proc/$p/environ")" && rank1=$p
done
[ -n "$rank1" ] || fail "rank 1 not found among the launcher's children"
start=$(date +%s)
kill -STOP "$rank1"
set +e; wait "$launcher"; stalled_rc=$?; set -e
stalled=$(( $(date +%s) - start ))
kill -9 "$rank1" 2>/dev/null || true
[ "$stalled_rc" -ne 0 ] && [ "$stalled_rc" -ne 75 ] || fail "a stalled rank must fail the run (exit $stalled_rc)"
[ "$stalled" -le 60 ] || fail "the run took ${stalled}s to fail after its rank stalled (timeout 10 s)"
! pgrep -f "run-dir stalled" >/dev/null || fail "a rank of the stalled run is still running"
grep -q "rank 0 of 2: a .* failed (another rank died, or did not join within the collective timeout of 10 s)" stalled.err ||
  fail "the stalled run does not say what failed: $(tail -3 stalled.err)"
echo "zero: ok (stalled rank → exit $stalled_rc after ${stalled}s; rank killed → exit $rc after ${elapsed}s; resumed to the uninterrupted test loss)"
