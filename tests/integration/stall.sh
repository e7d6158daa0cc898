#!/usr/bin/env bash
# The watchdog, for real: a worker stopped with SIGSTOP in a real `sweep run` is killed after the
# stall timeout and its run retried from its checkpoint, ending with the uninterrupted run's test
# loss; `sweep status` shows how long ago a running run was last heard from; an evaluation slower
# than the timeout is not killed (the worker's heartbeats); a bad timeout is refused.
source "$(dirname "$0")/lib.bash"
prepare_bytes
tiny_sweep s.yaml stall 3000
"$SWEEP" run s.yaml --results ref --devices cpu:2x1 > ref.txt || fail "the uninterrupted sweep: $(cat ref.txt)"

# ---- SIGSTOP: killed after 5 s of silence, retried from its checkpoint, the same result ----
# (5 s, not less: `sweep status` below must answer before the watchdog acts, and a cold start of
# the binary, linked against LibTorch with CUDA, can take seconds on a loaded 2-core machine)
# (the worker may be stopped just after a train or an eval event: the report names either)
"$SWEEP" plan s.yaml --results res > plan.txt
victim=$(awk '$1 == "base" && $2 == "1" {print $3}' plan.txt)
"$SWEEP" run s.yaml --results res --devices cpu:2x1 --stall-timeout 5 > run.txt &
sched=$!
wait_for_train_events "res/runs/$victim/events.jsonl" 100
pid=$(worker_pid "$victim")
[ -n "$pid" ] || fail "no worker for $victim"
kill -STOP "$pid"
sleep 1
"$SWEEP" status stall --results res > status.txt
grep "$victim" status.txt | grep -q "running .* [0-9]*m[0-9]*s ago" || fail "sweep status shows no last-event age: $(cat status.txt)"
wait "$sched" || fail "the sweep should finish after retrying the stalled run: $(cat run.txt)"
grep -q "stall  *base seed 1 ($victim): no event for .*stall timeout 5 s; the last: [a-z]*, step [0-9]*), killed, retrying from" run.txt ||
  fail "the stall was not reported: $(cat run.txt)"
! kill -0 "$pid" 2>/dev/null || fail "the stopped worker is still there"
[ "$(sql "SELECT status || ' ' || attempts FROM runs WHERE run_id = '$victim'")" = "done 2" ] ||
  fail "victim: $(sql "SELECT status, attempts, error FROM runs WHERE run_id = '$victim'")"
grep -q '"resumed":true' "res/runs/$victim/events.jsonl" || fail "the retry did not resume from the checkpoint"
for run in $(sql "SELECT run_id FROM runs"); do
  [ "$(sql "SELECT test_loss FROM runs WHERE run_id = '$run'")" = "$(DB=ref/sweep.db sql "SELECT test_loss FROM runs WHERE run_id = '$run'")" ] ||
    fail "$run: test loss differs from the uninterrupted sweep's"
done
check_database

# ---- an evaluation slower than the timeout: heartbeats keep it alive ----
tiny_sweep h.yaml slow 40
"$SWEEP" plan h.yaml --results res > plan.txt
slow=$(awk '$1 == "base" && $2 == "1" {print $3}' plan.txt)
mkdir -p "res/runs/$slow"
echo "slow_eval_ms:400" > "res/runs/$slow/test-fault"  # 8 batches of validation: 3.2 s an evaluation
start=$(date +%s)
"$SWEEP" run h.yaml --results res --devices cpu:2x1 --stall-timeout 1.6 > slow.txt || fail "slow evaluations: $(cat slow.txt)"
! grep -q "stall " slow.txt || fail "a slow evaluation was taken for a stall: $(cat slow.txt)"
[ "$(sql "SELECT status || ' ' || attempts FROM runs WHERE run_id = '$slow'")" = "done 1" ] ||
  fail "slow: $(sql "SELECT status, attempts, error FROM runs WHERE run_id = '$slow'")"
[ "$(count '"event":"heartbeat".*"phase":"eval"' "res/runs/$slow/events.jsonl")" -ge 6 ] ||
  fail "too few heartbeats: $(grep heartbeat "res/runs/$slow/events.jsonl")"
[ $(( $(date +%s) - start )) -ge 9 ] || fail "the evaluations were not slow: the test proves nothing"

# ---- bad input ----
expect_rc 2 "$SWEEP" run h.yaml --results res --stall-timeout -1 2> bad.txt
grep -q "stall-timeout" bad.txt || fail "--stall-timeout -1: $(cat bad.txt)"
echo "stall: ok"
